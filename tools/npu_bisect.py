"""`npu-bisect MODEL.onnx [--inputs IN.npz] [--arch SPEC] [--seed N]`: when the compiled
model's outputs differ from onnxruntime, find what makes them wrong - the first pass,
then (for npu-fuse) the fusion rule, then the rewrite pattern - in O(log n) compiles
each, and print the `npu-run` and `npu-opt` lines that reproduce it.

Exit codes: 0 the culprit was found (or nothing is wrong: said so), 1 a diagnosed error
(bad model, the fault is in a pass that cannot be switched off), 2 bad usage.

Algorithm
---------
A configuration is npu-default with some optional passes disabled (`disable=`; the
passes from npu-tile on are needed, except npu-layer-group and npu-task-canonicalize),
some fusion rules off (`fuse-disable=`) and some patterns off (the pattern-level
switch every pattern-based pass honours: `lowering.instrument.DISABLED_PATTERNS`,
`NPU_DISABLE_PATTERNS=label,...`). It is wrong when the simulated outputs fail
`npu-run --check`'s criterion (or it does not compile): the f32 tolerance, a 16-bit
model's, or a QDQ model's quantization steps; the inputs keep the model's types. Assuming faults do not cancel, "the
first k items enabled" is wrong from some k on: binary search finds that k with
log2(n) + 1 compiles - over the optional passes in pipeline order, then the rules,
then the patterns that fired in the culprit pass (`--pattern-stats` counts).
"""

from __future__ import annotations

import argparse
import io
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tools.npu_run import UsageError, UserError, cli_main, compare, read_inputs

OPTIONAL_PASSES: tuple[str, ...] = ("npu-canonicalize", "npu-constant-fold", "npu-bn-fold", "npu-hoist-pool", "npu-dce",
                                     "npu-cse", "npu-merge-projections", "npu-split-concat-conv", "npu-fuse",
                                     "npu-split-rows", "npu-layer-group", "npu-task-canonicalize")


@dataclass
class Config:
    disable: tuple[str, ...] = ()
    fuse_disable: tuple[str, ...] = ()
    patterns_off: frozenset[str] = field(default_factory=frozenset)

    def pipeline(self) -> str:
        opts = []
        if self.disable:
            opts.append("disable=" + ",".join(self.disable))
        if self.fuse_disable:
            opts.append("fuse-disable=" + ",".join(self.fuse_disable))
        return "npu-default" + ("{" + " ".join(opts) + "}" if opts else "")


class Bisector:
    """Compiles and runs the model under configurations, counting compiles."""

    def __init__(self, path: str, arch, inputs: dict[str, np.ndarray], refs: dict[str, np.ndarray],
                 precision: str | None = None, steps: dict[str, Any] | None = None):
        self.path, self.arch, self.inputs, self.refs = path, arch, inputs, refs
        self.precision, self.steps = precision, steps  # (`--check`'s criterion: a 16-bit model's, quantization steps)
        self.compiles = 0

    def run(self, cfg: Config, stats: bool = False) -> tuple[bool, Any]:
        """(wrong, the pattern counts of each pass when `stats`)."""
        from lowering.importer.onnx_import import import_model, load_model
        from lowering.instrument import DISABLED_PATTERNS, Instrumentation, InstrumentOptions
        from lowering.pipeline import NpuDefault
        from npu_dialects import make_context
        from npu_dialects.arch import set_arch
        from npu_dialects.weights import attach_weights, weights_of
        from runtime.run import run
        self.compiles += 1
        module, weights = import_model(load_model(self.path), self.arch)
        token = DISABLED_PATTERNS.set(cfg.patterns_off)
        try:
            with Instrumentation(InstrumentOptions(pattern_stats=stats, progress=False), stream=io.StringIO()) as inst:
                set_arch(module, self.arch)
                attach_weights(module, weights)
                NpuDefault(disable=cfg.disable, fuse_disable=cfg.fuse_disable).apply(make_context(), module)
            outs = run(module, weights_of(module), self.inputs, self.arch).outputs
        except Exception:  # noqa: BLE001 - a configuration that breaks the compile is a wrong one
            return True, None
        finally:
            DISABLED_PATTERNS.reset(token)
        check, _ = compare(outs, self.refs, self.precision, self.steps)
        return not check["ok"], inst.patterns if stats else None

    def first_wrong(self, items: list[str], make: Any) -> str | None:
        """The item whose enabling (in order) first makes the result wrong: `make(k)` is the
        configuration with the first k items on. None when all on is still right."""
        lo, hi = 0, len(items)  # wrong(lo) is False, wrong(hi) is True (checked by the caller)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.run(make(mid))[0]:
                hi = mid
            else:
                lo = mid
        return items[hi - 1] if items else None


def bisect(b: Bisector) -> list[str]:
    """The report lines (see the module docstring)."""
    from lowering.graph.fuse import RULES
    wrong, _ = b.run(Config())
    if not wrong:
        return [f"the compiled model matches onnxruntime ({b.compiles} compile): nothing to bisect"]
    passes: list[str] = list(OPTIONAL_PASSES)
    if b.run(Config(disable=tuple(passes)))[0]:
        raise UserError("the outputs are wrong even with every optional pass disabled: the fault is in a pass "
                        f"that cannot be switched off (npu-tile .. npu-memplan) or the simulator ({b.compiles} "
                        "compiles)")
    culprit = b.first_wrong(passes, lambda k: Config(disable=tuple(passes[k:])))
    assert culprit is not None
    base = Config(disable=tuple(passes[passes.index(culprit) + 1:]))
    lines = [f"first pass that makes the outputs wrong: {culprit}"]
    if culprit == "npu-fuse":
        rules = [r for r in RULES if r != "layer-group"]
        if not b.run(Config(base.disable, tuple(rules)))[0]:
            rule = b.first_wrong(rules, lambda k: Config(base.disable, tuple(rules[k:])))
            lines.append(f"fusion rule: {rule}")
            base = Config(base.disable, tuple(rules[rules.index(rule) + 1:]) if rule else ())
    _, counts = b.run(base, stats=True)
    fired = [label for label, c in (counts or {}).get(culprit, {}).items() if c.fired and not label.startswith("(")]
    if fired and not b.run(Config(base.disable, base.fuse_disable, frozenset(fired)))[0]:
        pattern = b.first_wrong(fired, lambda k: Config(base.disable, base.fuse_disable, frozenset(fired[k:])))
        lines.append(f"pattern: {pattern} (in {culprit}; {len(fired)} patterns fired there)")
        base = Config(base.disable, base.fuse_disable, frozenset(fired[fired.index(pattern) + 1:]))
    env = f"NPU_DISABLE_PATTERNS={','.join(sorted(base.patterns_off))} " if base.patterns_off else ""
    lines += [f"compiles: {b.compiles}", "reproduce:",
              f"  {env}npu-run {b.path} --check -p '{base.pipeline()}'",
              f"  npu-import {b.path} -o model.mlir && {env}npu-opt model.mlir "
              f"--pass-pipeline='builtin.module({base.pipeline()})' -o low.mlir"]
    return lines


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="npu-bisect", description="Find the pass, fusion rule and pattern that make "
                                "a compiled model's outputs differ from onnxruntime.")
    p.add_argument("model", metavar="MODEL.onnx")
    p.add_argument("--inputs", metavar="IN.npz", help="inputs keyed by ONNX input name (default: random)")
    p.add_argument("--arch", metavar="SPEC", help="machine: a preset plus overrides, e.g. 'default,cores=1'")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the random inputs (default 0)")
    return p


def _run(args: argparse.Namespace) -> int:
    from lowering.importer.onnx_import import OnnxImportError, import_model, load_model
    from npu_dialects.arch import PRESETS, ArchError, parse_arch_spec
    from runtime.run import random_inputs
    from sim import signature
    from tools.npu_run import Loaded, quantization_steps, reference_outputs
    from tools.tolerance import model_precision
    if not args.model.endswith(".onnx"):
        raise UsageError(f"MODEL must be an .onnx model, got '{args.model}'")
    try:
        arch = parse_arch_spec(args.arch) if args.arch else PRESETS["default"]
    except ArchError as e:
        raise UsageError(f"bad --arch '{args.arch}': {e}", e.hint) from None
    try:
        module, _ = import_model(load_model(args.model), arch)
    except OnnxImportError as e:
        raise UserError(e.located(args.model)) from None
    if args.inputs:  # (in the model's own types, as npu-run takes them: ids stay integers)
        inputs = read_inputs(args.inputs)
    else:
        from lowering.pipeline import compile_module
        compile_module(module, arch)  # (the signature of the compiled program draws them)
        inputs = random_inputs(signature(module), args.seed)
    loaded = Loaded(None, None, arch, "onnx")
    refs, _ = reference_outputs(loaded, args.model, inputs)
    b = Bisector(args.model, arch, inputs, refs, model_precision(args.model), quantization_steps(loaded, args.model))
    for line in bisect(b):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `npu-bisect`; returns the exit code."""
    return cli_main(build_parser, _run, argv)


if __name__ == "__main__":
    sys.exit(main())

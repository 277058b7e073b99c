"""Executable files: compiling a model into an `.npuexe` against loading it back.

    python bench/executable.py [--repeat N] [--models a,b] [--out bench/results/executable.md]

Models: the nine light CNNs of the onnx wheel with seeded random weights
(`tools/testkit/zoo.py:prepare`) and the transformers of `tests/models/`.

Columns:
- tasks; program KB (the binary IR; text KB: the same program as MLIR text), weights
  MB, file MB: the executable's size;
- compile s: `tools.api.compile` (ONNX import, `npu-default`, packaging) + `save`;
- load s: what `npu-run X.npuexe` does before simulating, the sum of: read s
  (`read_executable`: reading the file into memory, crc32s, program decoding and
  checking, weight binding, descriptor cross-check), of which decode s
  (`decode_program` alone, timed separately: the binary IR decoder,
  `check_definitions` and `check_verifiers`), of which checks s (`check_verifiers`
  alone: every op's traits and custom verifier, what loading checks since issue 43
  item 9 so that a forged program is refused before it runs), and load_program s
  (`sim.load_program`: DRAM layout with the weights section as the weights region,
  no copy; task compilation);
- compile / load: the speed-up of loading over compiling (acceptance: >= 10);
  dominated by: the largest part of the load (decode, load_program, or the rest of
  read: reading and crc32 of the file, which grow with the weights);
- verifier s: what `read_executable(verify=True)` would add (the whole IR verifier
  instead of `check_definitions` + `check_verifiers`, and the sha256), not part of load s;
- outputs, cycles: `runtime.run` of the loaded executable against the freshly
  compiled module on the same seeded inputs: bit-identical outputs, equal cycles.

Wall times are medians of --repeat runs on a shared, noisy machine (load average in
the heading): compare ratios within one run. A failing model is one row with its
diagnostic; the script never stops on one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np
import onnx

from bench import source_commit
from runtime.binary_ir import check_verifiers
from runtime.executable import decode_program, read_executable
from runtime.run import run
from sim import load_program
from tools.api import compile as compile_model
from tools.testkit.zoo import LIGHT_MODELS, light_models, prepare, random_inputs

TRANSFORMERS = ("bert_encoder", "gpt_decoder", "gpt_decoder_buffer")
TARGET = 10.0
"""Acceptance: loading is at least this many times faster than compiling."""


@dataclass
class Row:
    name: str
    tasks: int = 0
    program_kb: float = 0.0
    text_kb: float = 0.0
    weights_mb: float = 0.0
    file_mb: float = 0.0
    compile_s: float = 0.0
    read_s: float = 0.0
    decode_s: float = 0.0
    checks_s: float = 0.0
    program_s: float = 0.0
    verify_s: float = 0.0
    identical: bool = False
    same_cycles: bool = False
    error: str | None = None

    @property
    def load_s(self) -> float:
        return self.read_s + self.program_s

    @property
    def dominated_by(self) -> str:
        parts = {"decode": self.decode_s, "load_program": self.program_s,
                 "I/O + checks": self.read_s - self.decode_s}
        return max(parts, key=lambda k: parts[k])

    @property
    def ratio(self) -> float:
        return self.compile_s / self.load_s if self.load_s else float("nan")

    def markdown(self) -> str:
        if self.error:
            return f"| {self.name} | failed: {self.error} |" + " - |" * 16
        ok = "ok" if self.ratio >= TARGET else "below 10x"
        return (f"| {self.name} | {self.tasks} | {self.program_kb:.1f} | {self.text_kb:.1f} | {self.weights_mb:.2f} "
                f"| {self.file_mb:.2f} | {self.compile_s:.2f} | {self.load_s:.3f} | {self.read_s:.3f} "
                f"| {self.decode_s:.3f} | {self.checks_s:.3f} | {self.program_s:.3f} | {self.ratio:.1f}x ({ok}) | {self.dominated_by} "
                f"| {self.verify_s:.3f} | {'bit-identical' if self.identical else 'DIFFER'} "
                f"| {'equal' if self.same_cycles else 'DIFFER'} |")


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray], repeat: int, tmp: str) -> Row:
    """Compile + save, then load, `repeat` times each; run both once and compare."""
    path = os.path.join(tmp, f"{name}.npuexe")
    compiles, reads, decodes, checks, programs, verifies = [], [], [], [], [], []
    fresh = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        fresh = compile_model(model)
        fresh.save(path)
        compiles.append(time.perf_counter() - t0)
    assert fresh is not None
    for _ in range(repeat):
        t0 = time.perf_counter()
        loaded = read_executable(path)
        reads.append(time.perf_counter() - t0)
        programs.append(_timed(lambda: load_program(loaded.module, loaded.weights, loaded.arch)))
        decodes.append(_timed(lambda: decode_program(loaded.program)))
        checks.append(_timed(lambda: check_verifiers(loaded.module)))
        verifies.append(_timed(lambda: read_executable(path, verify=True)) - reads[-1])
    a = run(fresh.module, fresh.weights, inputs, fresh.arch, sanitize=False)
    b = run(loaded.module, loaded.weights, inputs, loaded.arch, sanitize=False)
    return Row(name, tasks=len(loaded.descriptors), program_kb=len(loaded.program) / 1024,
               text_kb=len(loaded.program_text().encode()) / 1024,
               weights_mb=sum(w.nbytes for w in loaded.weights.values()) / 2 ** 20,
               file_mb=os.path.getsize(path) / 2 ** 20, compile_s=statistics.median(compiles),
               read_s=statistics.median(reads), decode_s=statistics.median(decodes),
               checks_s=statistics.median(checks),
               program_s=statistics.median(programs), verify_s=statistics.median(verifies),
               identical=a.outputs.keys() == b.outputs.keys()
               and all(a.outputs[k].tobytes() == b.outputs[k].tobytes() for k in a.outputs),
               same_cycles=a.report["cycles"] == b.report["cycles"])


def _loaders() -> dict[str, Callable[[], tuple[onnx.ModelProto, dict[str, np.ndarray]]]]:
    def light(name: str):
        return lambda: prepare(light_models()[name], seed=0)

    def transformer(name: str):
        def load():
            model = onnx.load(str(ROOT / "tests" / "models" / f"{name}.onnx"))
            return model, random_inputs(model, seed=0)
        return load

    return {**{n: light(n) for n in LIGHT_MODELS}, **{n: transformer(n) for n in TRANSFORMERS}}


def _one_line(e: BaseException) -> str:
    text = (str(e).strip().splitlines() or [type(e).__name__])[0].replace("|", "\\|")
    return text[:300]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs of each step; wall times are medians")
    ap.add_argument("--models", default=None, help="comma-separated subset of: " + ", ".join(_loaders()))
    ap.add_argument("--out", default=None, help="also write the table (markdown) to this file")
    args = ap.parse_args()
    known = _loaders()
    wanted = [m.strip() for m in (args.models or ",".join(known)).split(",") if m.strip()]
    if set(wanted) - set(known):
        ap.error(f"unknown model(s) {', '.join(sorted(set(wanted) - set(known)))}")
    loaders = {m: known[m] for m in wanted}
    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"commit {source_commit()}; arch: default; wall times: median of {args.repeat}; {os.cpu_count()} CPUs, "
             f"load average {load_avg:.1f} at start (a shared machine: compare ratios within one run)", "",
             "| model | tasks | program KB | text KB | weights MB | file MB | compile s | load s | read s | decode s "
             "| checks s | load_program s | compile / load | dominated by | verifier s | outputs | cycles |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="npuexe-bench-") as tmp:
        for name, load in loaders.items():
            try:
                model, inputs = load()
                rows.append(measure(name, model, inputs, args.repeat, tmp))
            except Exception as e:  # noqa: BLE001 - report it, go on
                rows.append(Row(name, error=_one_line(e)))
            lines.append(rows[-1].markdown())
            print(lines[-1], flush=True)
    good = [r for r in rows if not r.error]
    lines += ["", f"{sum(r.ratio >= TARGET for r in good)} of {len(rows)} models load at least {TARGET:g}x faster "
                  f"than they compile; {sum(r.identical and r.same_cycles for r in good)} of {len(rows)} give "
                  "bit-identical outputs and equal cycles."]
    print(lines[-1])
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

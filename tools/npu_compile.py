"""`npu-compile MODEL.onnx|IN.mlir [-o OUT.npuexe] [--arch SPEC] [--pass-pipeline
'builtin.module(...)' | -p PASSES] [--shape-buckets SPEC]...`: compile a model into an
executable file that `npu-run OUT.npuexe` runs without recompiling.

MODEL is an ONNX model or a graph-level `.mlir` (both compiled, by default with
`npu-default`), or a task-level `.mlir` (packaged as is). Pass options are written as
for `npu-opt` (`builtin.module(npu-default{fuse-disable=layer-group})`). A model with
symbolic input dims needs `--shape-buckets` naming one bucket (`batch=4`): an
executable holds one program. The file layout is in `runtime/executable.py`; a short
summary (tasks, kernels, weights, sections, file size) goes to stdout.

Exit codes, as for npu-run: 0 success, 1 a diagnosed user error (bad model or IR,
unsupported op, does not fit: the compiler's diagnostic), 2 bad command-line usage.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from tools.npu_run import EXIT_OK, UsageError, UserError, _fmt_bytes, cli_main


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of npu-compile."""
    p = argparse.ArgumentParser(prog="npu-compile",
                                description="Compile a model into an executable file (.npuexe) for npu-run.")
    p.add_argument("model", metavar="MODEL", help="model.onnx, a graph-level .mlir (compiled) or a task-level "
                                                  ".mlir (packaged as is)")
    p.add_argument("-o", "--output", metavar="OUT.npuexe",
                   help="the executable to write (default: MODEL-STEM.npuexe in the current directory)")
    p.add_argument("--arch", metavar="SPEC", help="machine: a preset plus overrides, e.g. 'default,cores=1' "
                                                  "(default: 'default', or the arch an .mlir names)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--pass-pipeline", metavar="PIPELINE",
                   help="MLIR-style pipeline, e.g. 'builtin.module(npu-default{fuse-disable=layer-group})' "
                        "(default: npu-default, verifying the IR once at the end)")
    g.add_argument("-p", "--passes", metavar="PASSES", help="the same as a comma-separated pass list")
    p.add_argument("--shape-buckets", metavar="SPEC", action="append",
                   help="the size of each symbolic input dim, one bucket: 'batch=4', 'batch=1;seq=16'")
    return p


def _output(args: argparse.Namespace) -> str:
    out = args.output or Path(args.model).stem + ".npuexe"
    if not out.endswith(".npuexe"):
        raise UsageError(f"-o must name an .npuexe file (npu-run knows executables by that extension), got '{out}'")
    if os.path.isdir(out):
        raise UserError(f"cannot write '{out}': is a directory")
    return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def summary(exe, out: str, data: bytes, seconds: float) -> str:
    """What npu-compile prints: the file written and what it holds."""
    from runtime.executable import section_spans

    meta = exe.meta
    d = exe.descriptors
    slots = {s for t in d for s in t.waits + t.signals}
    source = meta.get("source") or {}
    sha = f" (sha256 {source['sha256'][:12]}...)" if source.get("sha256") else ""
    mem = meta.get("memory") or {}
    spans = section_spans(data)
    parts = ", ".join(f"{name} {_fmt_bytes(size)}" for name, (_, size) in spans.items()
                      if name not in ("header", "section table"))
    lines = [f"wrote {out}: {_fmt_bytes(len(data))} in {seconds:.2f} s",
             f"model:     {source.get('path') or '(in memory)'}{sha}",
             f"arch:      {exe.arch.spec()}",
             f"pipeline:  {meta.get('pipeline') or '(task-level input, packaged as is)'}",
             f"tasks:     {len(d)} on {len({t.core for t in d})} of {exe.arch.cores} cores, "
             f"{_count(len(meta['kernels']), 'kernel')}, {_count(len(slots), 'event slot')}",
             f"weights:   {_fmt_bytes(sum(w.nbytes for w in exe.weights.values()))} in "
             f"{_count(len(exe.weights), 'tensor')}",
             f"arena:     {_fmt_bytes(mem.get('arena_bytes') or 0)} of DRAM activations",
             f"sections:  {parts}"]
    if meta.get("bucket"):
        lines.insert(3, "bucket:    " + ", ".join(f"{k}={v}" for k, v in meta["bucket"].items()))
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from tools.api import compile as compile_model

    out = _output(args)
    pipeline = args.pass_pipeline if args.pass_pipeline is not None else args.passes
    t0 = time.perf_counter()
    exe = compile_model(args.model, arch=args.arch, pipeline=pipeline, shape_buckets=args.shape_buckets)
    data = exe.to_bytes()
    seconds = time.perf_counter() - t0
    from runtime.executable import write_image
    try:
        write_image(out, data)
    except OSError as e:
        raise UserError(f"cannot write '{out}': {e.strerror or e}") from None
    print(summary(exe, out, data, seconds))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of `npu-compile`; returns the exit code."""
    return cli_main(build_parser, _run, argv)


if __name__ == "__main__":
    sys.exit(main())

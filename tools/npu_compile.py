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

from tools.cli import EXIT_OK, UsageError, UserError, cli_main, console, fmt_bytes
from tools.compile_cache import summary_lines


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
    add_precision_option(p)
    add_cache_options(p)
    p.add_argument("--time-passes", "--mlir-timing", dest="time_passes", action="store_true",
                   help="print where the compile's time went on stderr: loading, import, every pass of "
                        "npu-default (nested), verification, packaging, writing; cache lookups and hits")
    return p


def add_precision_option(p: argparse.ArgumentParser) -> None:
    """--precision (npu-compile, npu-run)."""
    p.add_argument("--precision", choices=("f32", "f16", "bf16"),
                   help="compute a float32 model in f16 or bf16 (npu-default's precision option: weights "
                        "converted at compile time, statistics in f32; default f32)")


def precision_pipeline(precision: str | None, pipeline: str | None) -> str | None:
    """The pipeline a compile runs: `pipeline`, or npu-default with `precision` (None:
    npu-default as it is). --precision with an explicit pipeline is a usage error."""
    if precision in (None, "f32"):
        return pipeline
    if pipeline is not None:
        raise UsageError("--precision sets npu-default's option: give it in the pipeline instead, "
                         f"e.g. 'builtin.module(npu-default{{precision={precision}}})'")
    return f"builtin.module(npu-default{{precision={precision} verify-each=false}})"


def add_cache_options(p: argparse.ArgumentParser) -> None:
    """--cache-dir and --no-cache (npu-compile, npu-run)."""
    p.add_argument("--cache-dir", metavar="DIR",
                   help="the compile cache (default: $NPU_CACHE_DIR, else $XDG_CACHE_HOME/npu-compiler, "
                        "i.e. ~/.cache/npu-compiler)")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the compile cache (also NPU_NO_CACHE=1)")


def cache_line(cache) -> str:
    """The summary line saying what the compile cache did."""
    if cache is None:
        return "cache:     off"
    done = ", ".join(f"{level} {outcome}" for level, outcome in cache.events) or "not used (not an ONNX model)"
    return f"cache:     {done} ({cache.root})"


def _output(args: argparse.Namespace) -> str:
    out = args.output or Path(args.model).stem + ".npuexe"
    if not out.endswith(".npuexe"):
        raise UsageError(f"-o must name an .npuexe file (npu-run knows executables by that extension), got '{out}'")
    if os.path.isdir(out):
        raise UserError(f"cannot write '{out}': is a directory")
    return out


def summary(exe, out: str, chunks: list, seconds: float) -> str:
    """What npu-compile prints: the file written (`Executable.chunks`) and what it holds."""
    size = sum(len(c) for c in chunks)
    return "\n".join([f"wrote {out}: {fmt_bytes(size)} in {seconds:.2f} s", *summary_lines(exe, chunks)])


def _run(args: argparse.Namespace) -> int:
    from tools.compile_cache import Cache, cache_dir, fast_hit

    t0 = time.perf_counter()
    out = _output(args)
    pipeline = precision_pipeline(args.precision, args.pass_pipeline if args.pass_pipeline is not None
                                  else args.passes)
    root = cache_dir(args.cache_dir, args.no_cache)
    cache = Cache(root) if root is not None else None
    if cache is not None and args.model.endswith(".onnx") and not args.shape_buckets and os.path.isfile(args.model):
        try:
            record = fast_hit(cache, args.model, args.arch or "default", pipeline, out)
        except OSError as e:
            raise UserError(f"cannot write '{out}': {e.strerror or e}") from None
        lines = record.get("summary") if record is not None else None
        if not isinstance(lines, list):
            from tools.reweigh import reweigh_file
            try:  # (level 0: the same structure with other weights)
                lines = reweigh_file(cache, args.model, args.arch or "default", pipeline, out)
            except OSError as e:
                raise UserError(f"cannot write '{out}': {e.strerror or e}") from None
        if isinstance(lines, list):
            size = os.path.getsize(out)
            print(f"wrote {out}: {fmt_bytes(size)} in {time.perf_counter() - t0:.2f} s")
            print("\n".join([*lines, cache_line(cache)]))
            return EXIT_OK
    from lowering import verify_later
    from lowering.instrument import Instrumentation, InstrumentOptions
    from runtime.image import write_layout
    from tools.api import compile as compile_model
    from tools.api import finish_verification
    # (a progress line on a tty; the time report on exit with --time-passes; the last
    # verification beside packaging and writing, awaited before the file is in place)
    with Instrumentation(InstrumentOptions(progress=None, time_passes=args.time_passes), stream=sys.stderr) as inst, \
            verify_later.deferred():
        exe = compile_model(args.model, arch=args.arch, pipeline=pipeline, shape_buckets=args.shape_buckets,
                            cache=cache)
        with inst.phase("write"):
            seconds = time.perf_counter() - t0
            # (an executable the compile just stored in the cache is linked, not written again)
            chunks = cache.give_stored(out) if cache is not None else None
            try:
                chunks = chunks or write_layout(out, exe.plan(), before_rename=finish_verification)
            except OSError as e:
                raise UserError(f"cannot write '{out}': {e.strerror or e}") from None
        for s in verify_later.SECONDS:
            inst.add_parallel("verify (forked, beside packaging and writing)", s)
    if args.time_passes and cache is not None:  # (what the cache saved, beside where the time went)
        print(cache_line(cache), file=sys.stderr)
    print(summary(exe, out, chunks, seconds))
    print(cache_line(cache))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of `npu-compile`; returns the exit code."""
    return cli_main(build_parser, _run, argv)


console_main = console(main, compile_only=True)
"""The `npu-compile` console script (`tools.cli.console`)."""

if __name__ == "__main__":
    console_main()

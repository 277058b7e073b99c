"""`npu-import MODEL.onnx [-o OUT.mlir] [--arch SPEC] [--shape-buckets SPEC]...`:
ONNX -> `npu_graph` IR.

Writes OUT.mlir and its weight side file OUT.weights.npz (named by the module
attribute `npu.weights`, relative to OUT's directory). Exit codes: 0 success,
1 a diagnosed problem with the model (one `error: ...` line per problem on
stderr, no output file written), 2 bad usage or a bad --arch spec.

Symbolic input dimensions (ONNX `dim_param`, e.g. `x['batch', 8]`) must be bound
with `--shape-buckets` (syntax in `lowering/importer/buckets.py`). One bucket
(`batch=4`): OUT.mlir is that bucket's module. Several (`batch=1,4,8`;
`batch=1,4;seq=16,32` = their cross product): -o is required and one module is
written per bucket, OUT.<tag>.mlir with tag `batch1`, `batch1.seq16`, ... (weight
files under Algorithm). The files written are listed on stdout, one `wrote FILE`
line each.

Algorithm
---------
With several buckets the weights go to one OUT.weights.npz shared by all of them
(the normal case: the weights are the model's initializers), or, if the buckets'
weights differ (a constant folded from a bucketed shape), to OUT.<tag>.weights.npz
each.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr

from lowering.importer.buckets import (
    BucketSpecError,
    ShapeBuckets,
    bucket_path,
    check_buckets,
    describe,
    parse_shape_buckets,
)
from lowering.importer.onnx_import import OnnxImportError, import_model, load_model
from npu_dialects import module_text
from npu_dialects.arch import ArchError, parse_arch_spec
from npu_dialects.files import cannot_write, write_temp
from npu_dialects.plugins import PluginError
from npu_dialects.weights import WEIGHTS_ATTR, save_npz
from tools.cli import console


class _UsageError(Exception):
    """Bad command-line usage found after argparse (exit 2); `hint` printed after."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class _OutputError(Exception):
    """An output file that cannot be written (exit 1)."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of npu-import."""
    p = argparse.ArgumentParser(
        prog="npu-import",
        description="Import an ONNX model into the npu_graph dialect.",
        epilog="Weights are written to a side file, never into the IR text: with -o OUT.mlir "
               "to OUT.weights.npz next to it; without -o the IR goes to stdout and the weights "
               "to MODEL-STEM.weights.npz in the current directory (no weight file for a model "
               "without weights). Exit codes: 0 ok, 1 the "
               "model cannot be imported (diagnostics on stderr), 2 bad usage.")
    p.add_argument("model", metavar="MODEL.onnx", help="the ONNX model to import")
    p.add_argument("-o", "--output", metavar="OUT.mlir",
                   help="write the IR here (and the weights to OUT.weights.npz); '-' or none: stdout")
    p.add_argument("--arch", metavar="SPEC", default="default",
                   help="target NPU: a preset optionally followed by overrides, e.g. "
                        "'default,cores=1' (default: %(default)s)")
    p.add_argument("--shape-buckets", metavar="SPEC", action="append",
                   help="sizes of the model's symbolic input dims: 'batch=4' (one module), "
                        "'batch=1,4,8' or 'batch=1,4;seq=16,32' (the cross product: one module per "
                        "bucket, OUT.batch1.seq16.mlir ..., weights shared in OUT.weights.npz); "
                        "repeat the flag to list buckets explicitly (their union)")
    return p


def weights_file_for(output: str | None, model: str) -> Path:
    """Where the weights go: OUT.weights.npz beside OUT.mlir, or MODEL-STEM.weights.npz
    in the current directory when the IR goes to stdout."""
    if output is None:
        return Path(Path(model).stem + ".weights.npz")
    out = Path(output)
    stem = out.name[: -len(".mlir")] if out.name.endswith(".mlir") else out.name
    return out.with_name(stem + ".weights.npz")


def print_module(module: ModuleOp) -> str:
    """The module as text, with locations (ONNX node names) kept."""
    return module_text(module)


def _write_atomic(path: Path, write: Callable[[BinaryIO], object]) -> Path:
    """Write to a temporary file beside `path` with `write(fileobj)`, flushed to disk, and
    return the temporary path (`npu_dialects.files.write_temp`); the caller renames it
    into place, so no partial file is ever left. Raises `_OutputError` naming `path`
    when it cannot be written."""
    try:
        return Path(write_temp(path, write))
    except OSError as e:
        raise _OutputError(f"error: {cannot_write(e, path)}") from None


def run(model_path: str, output: str | None, arch_spec: str,
        shape_buckets: Sequence[str] | None = None) -> int:
    """Import `model_path` and write the IR (to `output`, or stdout when it is None or
    '-') and the weight file; returns the exit code. With `shape_buckets` (the
    --shape-buckets specs) the symbolic dims are bound, one module per bucket.
    Raises `_UsageError` for a bad --arch or --shape-buckets, `OnnxImportError` for a
    model it cannot import and `_OutputError` for a file it cannot write."""
    try:
        arch = parse_arch_spec(arch_spec)
    except ArchError as e:
        raise _UsageError(f"error: --arch '{arch_spec}': {e}", e.hint) from None
    buckets: ShapeBuckets | None = None
    if shape_buckets:
        try:
            buckets = parse_shape_buckets(shape_buckets)
        except BucketSpecError as e:
            raise _UsageError(f"error: {e}") from None
    if output == "-":
        output = None
    if buckets is not None and len(buckets) > 1 and not output:
        raise _UsageError(f"error: --shape-buckets gives {len(buckets)} buckets; they need -o OUT.mlir "
                          "(one OUT.<bucket>.mlir each)")
    if output and Path(output).is_dir():
        raise _OutputError(f"error: cannot write '{output}': is a directory")
    model = load_model(model_path)
    if buckets is None:
        module, weights = import_model(model, arch)
        _write_modules([(output, module, weights)], model_path)
        return 0
    check_buckets(model, buckets)
    if len(buckets) == 1:
        module, weights = import_model(model, arch, dims=buckets.first())
        _write_modules([(output, module, weights)], model_path)
        return 0
    assert output is not None
    # Import every bucket before writing anything: a bucket that fails leaves no files.
    jobs = [(str(bucket_path(output, b)), *import_model(model, arch, dims=b)) for b in buckets]
    shared = all(_same_weights(jobs[0][2], w) for _, _, w in jobs[1:])
    written = _write_modules(jobs, model_path, shared_weights=weights_file_for(output, model_path)
                             if shared else None)
    tags = {path: describe(b) for (path, _, _), b in zip(jobs, buckets)}
    for path in sorted(written, key=lambda p: str(p) not in tags):  # modules first, then weights
        what = tags.get(str(path), "weights shared by every bucket" if shared else "weights")
        print(f"wrote {path} ({what})")
    return 0


def _same_weights(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(
        a[k].shape == b[k].shape and a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)


def _write_modules(jobs: Sequence[tuple[str | None, ModuleOp, dict[str, np.ndarray]]], model_path: str,
                   shared_weights: Path | None = None) -> list[Path]:
    """Write each (OUT.mlir or None for stdout, module, weights) with its weight file
    (or all weights to `shared_weights`), all or nothing; returns the files written."""
    files: list[tuple[Path, Callable[[BinaryIO], object]]] = []
    texts: list[str] = []
    for output, module, weights in jobs:
        wpath = shared_weights or weights_file_for(output, model_path)
        if weights:  # the side file sits beside the IR, so its name alone resolves
            module.attributes[WEIGHTS_ATTR] = StringAttr(wpath.name)
            if shared_weights is None or not any(p == wpath for p, _ in files):
                files.append((wpath, lambda f, w=weights: save_npz(f, w)))
        text = print_module(module)
        if output:
            files.append((Path(output), lambda f, t=text: f.write(t.encode())))
        else:
            texts.append(text)

    temps: list[tuple[Path, Path]] = []
    try:
        for final, write in files:
            temps.append((_write_atomic(final, write), final))
        for tmp, final in temps:
            try:
                os.replace(tmp, final)
            except OSError as e:
                raise _OutputError(f"error: cannot write '{final}': {e.strerror or e}") from None
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
    for text in texts:
        sys.stdout.write(text)
    return [final for final, _ in files]


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit code (0 ok, 1 diagnosed error, 2 usage)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help (0) or a usage error (2, message already printed)
        return int(e.code or 0)
    try:
        return run(args.model, args.output, args.arch, args.shape_buckets)
    except _UsageError as e:
        print(e, file=sys.stderr)
        if e.hint:
            print(e.hint, file=sys.stderr)
        return 2
    except OnnxImportError as e:  # (`MODEL.onnx: error: node 'NAME' (OpType, opset N): ...`, then hints)
        for line in e.located(args.model):
            print(line, file=sys.stderr)
        return 1
    except _OutputError as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except PluginError as e:  # (an installed plugin that does not load)
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        if os.environ.get("NPU_DEBUG") == "1":
            traceback.print_exc()
        print(f"internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


console_main = console(main, compile_only=True)
"""The `npu-import` console script (`tools.cli.console`)."""

if __name__ == "__main__":
    console_main()

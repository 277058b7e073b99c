"""The Python API where the layers meet: `compile` takes an ONNX model (or an `.mlir`
module) through the importer and a pass pipeline (`lowering`) and packages the
task-level result as an executable (`runtime.executable`), which `save` writes and
`runtime.executable.read_executable` (or `npu-run X.npuexe`) loads and runs.

    from tools.api import compile
    exe = compile("tests/models/lenet.onnx", arch="default,cores=2")
    exe.save("lenet.npuexe")

Errors are those of the command-line tools (`tools/npu_run.py`): `UserError` for a
diagnosed problem (bad model or IR, unsupported op, does not fit; `.lines` first,
`.details` after) and `UsageError` for bad arguments (an unknown arch preset, a
malformed pipeline, several shape buckets).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from npu_dialects.arch import Arch
from runtime.executable import Executable, ExecutableError, sha256_bytes, sha256_file
from tools.npu_run import UsageError, UserError, _compile, _is_task_level, _parse_arch, _parse_mlir, error_line

DEFAULT_PIPELINE_TEXT = "builtin.module(npu-default{verify-each=false})"
"""What `compile` runs when given no pipeline: the whole pipeline, verifying the IR
once at the end (as `npu-run` does; `npu-opt` verifies after every pass)."""


def compile(model: onnx.ModelProto | str | os.PathLike[str], arch: Arch | str | None = None,
            pipeline: str | None = None, shape_buckets: str | Sequence[str] | None = None,
            **options: Any) -> Executable:
    """Compile `model` into an executable for `arch` (an `Arch` or a spec such as
    `default,cores=1`; default: the `default` preset, or the arch a `.mlir` names).

    `model` is an `onnx.ModelProto`, a path to an `.onnx` file, or a path to an `.mlir`
    module: graph-level (compiled) or task-level (packaged as is, weights from its
    side file). `pipeline` is a pass pipeline as `npu-opt` takes it
    (`builtin.module(npu-default{fuse-disable=layer-group})` or `npu-fuse,npu-tile,...`;
    default `DEFAULT_PIPELINE_TEXT`); `options` instead go to `npu-default` (e.g.
    `fuse_disable=("layer-group",)`). `shape_buckets` (ONNX with symbolic input dims)
    must name exactly one bucket, e.g. `batch=4`: an executable holds one program.
    The metadata records the source model (path and sha256), the pipeline and the
    bucket. Raises UserError / UsageError (module docstring)."""
    target = _parse_arch(arch) if isinstance(arch, str) else arch
    if isinstance(model, onnx.ModelProto):
        source = {"kind": "onnx", "path": None, "sha256": sha256_bytes(model.SerializeToString())}
        return _compile_onnx(model, target, pipeline, shape_buckets, options, source)
    path = os.fspath(model)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".onnx":
        from lowering.importer.onnx_import import OnnxImportError, load_model
        try:
            proto = load_model(path)
        except OnnxImportError as e:
            raise UserError([error_line(x) for x in e.lines]) from None
        source = {"kind": "onnx", "path": os.path.abspath(path), "sha256": sha256_file(path)}
        return _compile_onnx(proto, target, pipeline, shape_buckets, options, source)
    if ext == ".mlir":
        if shape_buckets:
            raise UsageError(f"--shape-buckets needs an .onnx model (symbolic dims), got '{path}'")
        return _compile_mlir(path, target, pipeline, options)
    raise UsageError(f"the model must be an .onnx or .mlir file, got '{path}'")


def _compile_onnx(model: onnx.ModelProto, arch: Arch | None, pipeline: str | None,
                  shape_buckets: str | Sequence[str] | None, options: Mapping[str, Any],
                  source: dict[str, Any]) -> Executable:
    from lowering.importer.onnx_import import OnnxImportError, import_model
    from npu_dialects.arch import PRESETS

    arch = arch or PRESETS["default"]
    bucket = _one_bucket(model, shape_buckets)
    try:
        module, weights = import_model(model, arch, dims=bucket)
    except OnnxImportError as e:
        raise UserError([error_line(x) for x in e.lines]) from None
    extra: dict[str, Any] = {"source": source}
    if bucket is not None:
        extra["bucket"] = dict(bucket)
    return _package(*_lower(module, arch, weights, pipeline, options), extra)


def _compile_mlir(path: str, arch: Arch | None, pipeline: str | None, options: Mapping[str, Any]) -> Executable:
    from npu_dialects.arch import arch_of
    from npu_dialects.weights import WeightsError, load_weights

    module = _parse_mlir(path)
    try:
        weights = load_weights(module, os.path.dirname(os.path.abspath(path)))
    except WeightsError as e:
        raise UserError(str(e)) from None
    source = {"kind": "mlir", "path": os.path.abspath(path), "sha256": sha256_file(path)}
    if not _is_task_level(module):
        return _package(*_lower(module, arch or arch_of(module), weights, pipeline, options), {"source": source})
    if pipeline is not None or options:
        raise UsageError(f"'{path}' is already task-level: it is packaged as is, without a pass pipeline")
    if arch is not None and arch != arch_of(module):
        raise UserError(f"'{path}' was compiled for arch '{arch_of(module).spec()}' but --arch is '{arch.spec()}'")
    return _package(module, weights, None, {"source": source})


def _one_bucket(model: onnx.ModelProto, specs: str | Sequence[str] | None) -> dict[str, int] | None:
    """The single bucket `specs` names (checked against the model), or None without specs."""
    if not specs:
        return None
    from lowering.importer.buckets import BucketSpecError, check_buckets, describe, parse_shape_buckets
    from lowering.importer.onnx_import import OnnxImportError
    try:
        buckets = parse_shape_buckets(specs)
    except BucketSpecError as e:
        raise UsageError(str(e)) from None
    if len(buckets) != 1:
        listed = "; ".join(describe(b) for b in buckets)
        raise UsageError(f"--shape-buckets names {len(buckets)} buckets ({listed}); an executable holds one "
                         "program: compile one executable per bucket")
    try:
        check_buckets(model, buckets)
    except OnnxImportError as e:
        raise UserError([error_line(x) for x in e.lines]) from None
    return dict(buckets.first())


def _lower(module: ModuleOp, arch: Arch, weights: dict[str, np.ndarray], pipeline: str | None,
           options: Mapping[str, Any]) -> tuple[ModuleOp, dict[str, np.ndarray], str]:
    """Run the pipeline on a graph-level module; returns (module, weights, pipeline text)."""
    if pipeline is None and not options:
        return (*_compile(module, arch, weights), DEFAULT_PIPELINE_TEXT)
    from xdsl.utils.exceptions import DiagnosticException, VerifyException

    from npu_dialects import make_context
    from npu_dialects.arch import set_arch
    from npu_dialects.weights import attach_weights, weights_of

    passes, text = _pipeline(pipeline, options)
    set_arch(module, arch)
    attach_weights(module, weights)
    try:
        for p in passes:
            p.apply(make_context(), module)
        module.verify()
    except (DiagnosticException, VerifyException) as e:
        lines = str(e).strip().splitlines() or [type(e).__name__]
        raise UserError(error_line(lines[0]), "\n".join(lines[1:]) or None) from None
    if not _is_task_level(module):
        raise UserError(f"the pipeline '{text}' stops before the task level (no 'npu_task.task'): an "
                        "executable needs every pass up to npu-memplan")
    return module, weights_of(module), text


def _pipeline(pipeline: str | None, options: Mapping[str, Any]) -> tuple[list[ModulePass], str]:
    """The passes of `pipeline` (npu-opt syntax) or of `npu-default` with `options`, and
    the pipeline as text for the metadata. Bad names or options are a UsageError."""
    from lowering.pipeline import NpuDefault
    if pipeline is None:
        try:
            p = NpuDefault(**{"verify_each": False, **options})
        except TypeError as e:
            raise UsageError(f"bad npu-default option: {e}") from None
        return [p], f"builtin.module({p.spec()})"
    if options:
        raise UsageError("give either a pass pipeline or npu-default options, not both")
    from xdsl.passes import PassPipeline
    from xdsl.transforms import get_all_passes as xdsl_passes

    from lowering import get_all_passes
    from tools.npu_opt import STANDARD_PASSES, PipelineSyntaxError, unwrap_pipeline
    available = {**get_all_passes(), **{n: f for n, f in xdsl_passes().items() if n in STANDARD_PASSES}}
    try:
        return list(PassPipeline.parse_spec(available, unwrap_pipeline(pipeline)).passes), pipeline
    except (PipelineSyntaxError, ValueError, TypeError) as e:
        raise UsageError(f"bad pass pipeline '{pipeline}': {e}") from None


def _package(module: ModuleOp, weights: dict[str, np.ndarray], pipeline: str | None,
             extra: dict[str, Any]) -> Executable:
    try:
        return Executable.from_module(module, weights, pipeline=pipeline, **extra)
    except ExecutableError as e:
        raise UserError(str(e)) from None

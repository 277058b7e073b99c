"""What `npu-run` and `npu-memviz` run: INPUT (an ONNX model, a graph- or task-level
`.mlir`, an `.npuexe` executable) brought to the task level (`load_input`, a
`Loaded`), compiling through `tools.api` when needed. Problems are the tools'
`UsageError` / `UserError` (`tools/cli.py`).
"""

from __future__ import annotations

import os
import sys

from tools.cli import UsageError, UserError


class Loaded:
    """The task-level module to run plus what --check needs."""

    def __init__(self, module, weights, arch, kind: str, graph=None, reference: str | None = None):
        self.module = module
        self.weights = weights
        self.arch = arch
        self.kind = kind  # "onnx" | "graph" | "lowered" | "npuexe"
        self.graph = graph  # graph-level module kept for the numpy reference
        self.reference = reference  # the ONNX model --check runs on onnxruntime (an executable's)


def load_input(path: str, arch_spec: str | None, check: bool, reference: str | None = None, model=None,
               dims: dict[str, int] | None = None, pipeline: str | None = None, cache=None) -> Loaded:
    """Read INPUT and bring it to the task level (raises UsageError/UserError).
    `reference` is the ONNX model --check compares an executable (`.npuexe`) with.
    For an ONNX INPUT, `model` is the already loaded ModelProto (else it is read)
    and `dims` binds its symbolic input dims (a shape bucket). `pipeline` (npu-opt
    syntax) replaces `npu-default` for an ONNX or graph-level INPUT. `cache` (a
    `tools.compile_cache.Cache`) compiles an ONNX INPUT through the compile cache."""
    from tools.api import compile_graph, is_task_level, parse_arch, parse_mlir_file
    arch = parse_arch(arch_spec)
    ext = os.path.splitext(path)[1].lower()
    if reference is not None and (ext != ".npuexe" or not check):
        raise UsageError("--reference goes with --check on an .npuexe INPUT")
    if reference is not None and not os.path.isfile(reference):  # (found before the run, not after it)
        raise UserError(f"cannot read --reference '{reference}': no such file")
    if ext == ".npuexe":
        return _load_executable(path, arch, check, reference)
    if ext == ".onnx":
        from npu_dialects.arch import PRESETS
        try:
            from lowering.importer.onnx_import import (
                OnnxImportError,
                import_model,
                load_model,
            )
        except ImportError as e:
            raise UserError(f"the ONNX importer is not available ({e})") from None
        if cache is not None:
            from tools.api import compile_cached
            from tools.compile_cache import source_of
            try:
                proto = model if model is not None else load_model(path)
            except OnnxImportError as e:
                raise UserError(e.located(path)) from None
            exe = compile_cached(cache, proto, path, arch, arch_spec or "default", pipeline, dims, {},
                                 source_of(path))
            return Loaded(exe.module, exe.weights, exe.arch, "onnx")
        arch = arch or PRESETS["default"]
        try:
            module, weights = import_model(model if model is not None else load_model(path), arch,
                                           dims=dims)
        except OnnxImportError as e:
            raise UserError(e.located(path)) from None
        return Loaded(*compile_graph(module, arch, weights, pipeline), arch, "onnx")
    if ext == ".mlir":
        from npu_dialects.arch import arch_of
        from npu_dialects.weights import WeightsError, load_weights
        module = parse_mlir_file(path)
        try:
            weights = load_weights(module, os.path.dirname(os.path.abspath(path)))
        except WeightsError as e:
            raise UserError(str(e)) from None
        if is_task_level(module):
            if check:
                raise UsageError("--check, --compare-all, --graph and --html need the original graph: an ONNX "
                                 "model, a graph-level .mlir or an .npuexe with its source model")
            if arch is not None and "npu.arch" in module.attributes and arch_of(module) != arch:
                print(f"warning: '{path}' was compiled for arch '{arch_of(module).spec()}' but runs on "
                      f"'{arch.spec()}' (--arch)", file=sys.stderr)
            return Loaded(module, weights, arch or arch_of(module), "lowered")
        arch = arch or arch_of(module)
        graph = module.clone() if check else None
        return Loaded(*compile_graph(module, arch, weights, pipeline), arch, "graph", graph)
    raise UsageError(f"INPUT must be an .onnx model or an .mlir file, or an .npuexe executable, got '{path}'")


def _load_executable(path: str, arch, check: bool, reference: str | None) -> Loaded:
    """An executable as it was compiled (rejected, never run, when the file is bad or
    --arch is not its arch); with --check, the ONNX model to compare with."""
    from runtime.executable import ArchMismatchError, ExecutableError, read_executable
    try:
        exe = read_executable(path, arch)
    except ArchMismatchError as e:
        raise UserError(f"'{path}' was compiled for arch '{e.compiled.spec()}' but --arch is "
                        f"'{e.requested.spec()}'") from None
    except ExecutableError as e:
        raise UserError(str(e)) from None
    return Loaded(exe.module, exe.weights, exe.arch, "npuexe",
                  reference=(reference or _recorded_source(path, exe.meta)) if check else None)


def _recorded_source(path: str, meta: dict) -> str:
    """The source ONNX model an executable records, if it still exists unchanged."""
    from runtime.executable import sha256_file
    recorded = meta.get("source")
    source: dict = recorded if isinstance(recorded, dict) else {}
    model = source.get("path")
    if source.get("kind") != "onnx" or not isinstance(model, str):
        raise UsageError(f"--check on '{path}' needs --reference MODEL.onnx: the executable records no "
                         "source ONNX model file")
    if not os.path.isfile(model):
        raise UserError(f"--check: the source model '{model}' recorded in '{path}' is missing; pass "
                        "--reference MODEL.onnx")
    if sha256_file(model) != source.get("sha256"):
        raise UserError(f"--check: the source model '{model}' changed after '{path}' was compiled (its "
                        "sha256 differs); pass --reference MODEL.onnx")
    return model

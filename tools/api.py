"""The Python API where the layers meet: `compile` takes an ONNX model (or an `.mlir`
module) through the importer and a pass pipeline (`lowering`) and packages the
task-level result as an executable (`runtime.executable`), which `save` writes and
`runtime.executable.read_executable` (or `npu-run X.npuexe`) loads and runs.

    from tools.api import compile
    exe = compile("tests/models/lenet.onnx", arch="default,cores=2")
    exe.save("lenet.npuexe")

Errors are those of the command-line tools (`tools/cli.py`): `UserError` for a
diagnosed problem (bad model or IR, unsupported op, does not fit; `.lines` first,
`.details` after) and `UsageError` for bad arguments (an unknown arch preset, a
malformed pipeline, several shape buckets).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from lowering import kernel_cache
from lowering.instrument import timed
from npu_dialects.arch import Arch
from npu_dialects.weights import ReadLog
from runtime.executable import Executable, ExecutableError, read_executable, sha256_bytes, sha256_file
from tools.cli import UsageError, UserError, error_line
from tools.compile_cache import (
    Cache,
    ModelDigests,
    derive_key,
    key,
    level_keys,
    lookup,
    model_digests,
    pipeline_key,
    source_of,
    summary_lines,
    weights_digest,
)

DEFAULT_PIPELINE_TEXT = "builtin.module(npu-default{verify-each=false})"
"""What `compile` runs when given no pipeline: the whole pipeline, verifying the IR
once at the end (as `npu-run` does; `npu-opt` verifies after every pass)."""


def compile(model: onnx.ModelProto | str | os.PathLike[str], arch: Arch | str | None = None,
            pipeline: str | None = None, shape_buckets: str | Sequence[str] | None = None,
            cache: Cache | str | os.PathLike[str] | None = None, **options: Any) -> Executable:
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
    bucket. `cache` (a directory or a `tools.compile_cache.Cache`; default none) reuses
    and stores earlier compiles of an ONNX model (`tools/compile_cache.py`).
    Raises UserError / UsageError (module docstring)."""
    target = parse_arch(arch) if isinstance(arch, str) else arch
    if cache is not None and not isinstance(cache, Cache):
        cache = Cache(Path(cache))
    arch_key = arch if isinstance(arch, str) else (arch.spec() if arch is not None else "default")
    if isinstance(model, onnx.ModelProto):
        source = {"kind": "onnx", "path": None, "sha256": sha256_bytes(model.SerializeToString())}
        if cache is not None:
            return compile_cached(cache, model, None, target, arch_key, pipeline, _one_bucket(model, shape_buckets),
                                  options, source)
        return _compile_onnx(model, target, pipeline, shape_buckets, options, lambda: source)
    path = os.fspath(model)
    ext = os.path.splitext(path)[1].lower()
    if ext == ".onnx":
        from concurrent.futures import ThreadPoolExecutor

        from lowering.importer.onnx_import import OnnxImportError, load_model
        with ThreadPoolExecutor(1) as pool:  # (the file's sha256 on another core, beside the load and compile)
            # (by its absolute path: checking a model with external data runs in its directory)
            sha = pool.submit(source_of, os.path.abspath(path))
            try:
                with timed("load ONNX"):
                    proto = load_model(path)
            except OnnxImportError as e:
                raise UserError(e.located(path)) from None
            if cache is not None:
                return compile_cached(cache, proto, path, target, arch_key, pipeline,
                                      _one_bucket(proto, shape_buckets, path), options, sha.result())
            return _compile_onnx(proto, target, pipeline, shape_buckets, options, sha.result, path)
    if ext == ".mlir":
        if shape_buckets:
            raise UsageError(f"--shape-buckets needs an .onnx model (symbolic dims), got '{path}'")
        return _compile_mlir(path, target, pipeline, options)
    raise UsageError(f"the model must be an .onnx or .mlir file, got '{path}'")


def _compile_onnx(model: onnx.ModelProto, arch: Arch | None, pipeline: str | None,
                  shape_buckets: str | Sequence[str] | None, options: Mapping[str, Any],
                  source: Callable[[], dict[str, Any]], path: str | None = None) -> Executable:
    """`compile` of an ONNX model read from `path` (None: given in memory), without the
    cache; `source()` gives what the executable records of it, asked only to package
    (the file's sha256 is computed meanwhile)."""
    from lowering.importer.onnx_import import OnnxImportError, import_model
    from npu_dialects.arch import PRESETS

    arch = arch or PRESETS["default"]
    bucket = _one_bucket(model, shape_buckets, path)
    try:
        with timed("import"):
            module, weights = import_model(model, arch, dims=bucket)
    except OnnxImportError as e:
        raise UserError(e.located(path)) from None
    lowered = _lower(module, arch, weights, pipeline, options)
    extra: dict[str, Any] = {"source": source()}
    if bucket is not None:
        extra["bucket"] = dict(bucket)
    return _package(*lowered, extra)


def _compile_mlir(path: str, arch: Arch | None, pipeline: str | None, options: Mapping[str, Any]) -> Executable:
    from npu_dialects.arch import arch_of
    from npu_dialects.weights import WeightsError, load_weights

    module = parse_mlir_file(path)
    try:
        weights = load_weights(module, os.path.dirname(os.path.abspath(path)))
    except WeightsError as e:
        raise UserError(str(e)) from None
    source = {"kind": "mlir", "path": os.path.abspath(path), "sha256": sha256_file(path)}
    if not is_task_level(module):
        return _package(*_lower(module, arch or arch_of(module), weights, pipeline, options), {"source": source})
    if pipeline is not None or options:
        raise UsageError(f"'{path}' is already task-level: it is packaged as is, without a pass pipeline")
    if arch is not None and arch != arch_of(module):
        raise UserError(f"'{path}' was compiled for arch '{arch_of(module).spec()}' but --arch is '{arch.spec()}'")
    return _package(module, weights, None, {"source": source})


def _one_bucket(model: onnx.ModelProto, specs: str | Sequence[str] | None,
                path: str | None = None) -> dict[str, int] | None:
    """The single bucket `specs` names (checked against the model, read from `path` if
    not None), or None without specs."""
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
        raise UserError(e.located(path)) from None
    return dict(buckets.first())


def _lower(module: ModuleOp, arch: Arch, weights: dict[str, np.ndarray], pipeline: str | None,
           options: Mapping[str, Any]) -> tuple[ModuleOp, dict[str, np.ndarray], str]:
    """Run the pipeline on a graph-level module; returns (module, weights, pipeline text)."""
    if pipeline is None and not options:
        return (*compile_graph(module, arch, weights), DEFAULT_PIPELINE_TEXT)
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
    if not is_task_level(module):
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
    from xdsl.transforms import get_all_passes as xdsl_passes

    from lowering import get_all_passes
    from tools.npu_opt import STANDARD_PASSES, PipelineSyntaxError, parse_passes, unwrap_pipeline
    available = {**get_all_passes(), **{n: f for n, f in xdsl_passes().items() if n in STANDARD_PASSES}}
    try:
        return parse_passes(available, unwrap_pipeline(pipeline)), pipeline
    except PipelineSyntaxError as e:  # (it names the pass, the option or the column at fault)
        raise UsageError(str(e), e.hint) from None


def _package(module: ModuleOp, weights: dict[str, np.ndarray], pipeline: str | None,
             extra: dict[str, Any]) -> Executable:
    try:
        with timed("package"):
            return Executable.from_module(module, weights, pipeline=pipeline, **extra)
    except ExecutableError as e:
        raise UserError(str(e)) from None


# ----------------------------------------------------------------------------- through the cache


def compile_cached(cache: Cache, model: onnx.ModelProto, path: str | None, arch: Arch | None, arch_key: str,
                   pipeline: str | None, bucket: Mapping[str, int] | None, options: Mapping[str, Any],
                   source: dict[str, Any]) -> Executable:
    """`compile` of an ONNX model (read from `path`, if not None) through `cache`
    (levels in `tools/compile_cache.py`); `arch_key` is the arch as the user spelled it
    (a chip file's contents may change under its name: then the resolved arch's spec)
    and `bucket` the bound symbolic dims (None: none)."""
    from npu_dialects.arch import PRESETS, is_chip_path
    from npu_dialects.weights import recipes_of, referenced_weights, weights_of

    arch = arch or PRESETS["default"]
    if is_chip_path(arch_key.split(",", 1)[0].strip()):
        arch_key = arch.spec()
    digests = (cache.file_digests(path) if path else None) or model_digests(model)
    if path:
        cache.remember(path, digests, source.get("sha256") or "")
    pkey = pipeline_key(pipeline, options)
    k3, w2 = lookup(cache, digests, bucket, pkey, arch_key)
    record = cache.read_record(k3) if k3 else None
    extra: dict[str, Any] = {"source": source, **({"bucket": dict(bucket)} if bucket is not None else {})}
    if record is not None and record.get("weights") == w2 and record.get("source") == source:
        exe = _read_entry(cache, k3)
        if exe is not None:
            cache.note("executable", "hit")
            return exe
        record = None
    k1, k2 = level_keys(digests, bucket, pkey, arch_key)
    module, weights, provenance = _level1(cache, cache.path("import", k1, ".zip"), model, digests, arch, bucket, path)
    weights = ReadLog(weights)  # (what the passes read by value: level 0's record)
    if "pipeline" in pkey:
        with kernel_cache.using(cache):
            exe = _package(*_lower(module, arch, weights, pipeline, options), extra)
        _note_miss(cache)
    else:
        graph_ran = not cache.path("graph", k2, ".zip").is_file()
        known = {k: digests.tensors[n] for k, n in provenance[0].items() if n in digests.tensors}
        module, weights, ir_sha, w2 = _level2(cache, cache.path("graph", k2, ".zip"), module, weights, arch, options,
                                              known)
        k3 = key("exe", ir_sha, pkey, arch_key)
        record = cache.read_record(k3)
        exe = _repack(cache, k3, record, weights, extra) if record is not None else None
        if exe is None:
            before = set(weights)  # (the passes add to the dict they are given)
            with kernel_cache.using(cache):  # (kernels an earlier compile has seen are not searched again)
                backend, _ = _stage(module, arch, weights, "backend", options)
            made = {k: None for k in referenced_weights(backend) if k not in before}
            recipes = recipes_of(backend)
            w2_recipes = {k: recipes[k] for k in made} if all(k in recipes for k in made) else None
            store = weights_of(backend)
            reads = set(store.reads) if isinstance(store, ReadLog) else None
            exe = _package(backend, store, DEFAULT_PIPELINE_TEXT, extra)
            _note_miss(cache)
            if graph_ran and isinstance(store, ReadLog) and reads is not None:  # (every pass ran: all reads known)
                _record_derivation(cache, derive_key(digests, bucket, pkey, arch_key), k3, digests, provenance,
                                   store, reads, recipes, backend, exe)
            record = {"weights": w2, "recipes": w2_recipes}
    record = {**(record or {}), "weights": w2, "source": source}
    finish_verification()  # (nothing unverified goes into the cache)
    chunks = exe.chunks()
    cache.write_exe(k3, chunks, {**record, "summary": summary_lines(exe, chunks)})
    cache.trim()
    return exe


def _record_derivation(cache: Cache, k0: str, k3: str, digests: ModelDigests,
                       provenance: Provenance, store: ReadLog, reads: set[str],
                       recipes: dict[str, Any], module: ModuleOp, exe: Executable) -> None:
    """Store level 0's record of a compile in which every pass ran (`tools/reweigh.py`):
    how the executable's weights follow from the model's initializers."""
    from npu_dialects.recipe import leaves
    from npu_dialects.weights import peek
    from runtime.executable import placed_more_than_once
    from tools.reweigh import derivation, make_record
    direct, import_read, views = provenance
    sources = {k: n for k, n in direct.items() if n in digests.tensors}
    deriv = derivation(sources, import_read, reads, recipes, list(exe.meta["weights"]),
                       fixed=placed_more_than_once(module), uniform=store.uniform, views=views,
                       sizes={k: int(peek(store, k).size) for k in leaves(recipes.values()) if k in store})  # (the index gives one offset: left as they are)
    cache.write_json("derive", k0, make_record(k3, deriv, digests.tensors, exe.meta["weights"]))


def finish_verification() -> None:
    """The deferred last verification (`lowering.verify_later`, npu-compile's), awaited:
    a failure is the compile's UserError."""
    from xdsl.utils.exceptions import DiagnosticException

    from lowering import verify_later
    try:
        verify_later.finish()
    except DiagnosticException as e:
        lines = str(e).strip().splitlines() or [type(e).__name__]
        raise UserError(error_line(lines[0]), "\n".join(lines[1:]) or None) from None


def _note_miss(cache: Cache) -> None:
    """An executable built: the miss, and what the per-kernel results saved."""
    cache.note("executable", "miss")
    if kernel_cache.summary():
        cache.note("kernels", kernel_cache.summary())


def _repack(cache: Cache, k3: str, record: dict[str, Any], weights: dict[str, np.ndarray],
            extra: dict[str, Any]) -> Executable | None:
    """Level 3's program with new `weights` (and metadata) when only they changed: the
    weights the back end made are rebuilt from their recipes; None when one has none."""
    from npu_dialects.weights import rebuild
    recipes = record.get("recipes")
    if not isinstance(recipes, dict):
        return None
    try:
        made = {k: rebuild(r, weights) for k, r in recipes.items()}
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    old = _read_entry(cache, k3)
    if old is None:
        return None
    cache.note("executable", "program reused, weights repacked")
    return _package(old.module, {**weights, **made}, DEFAULT_PIPELINE_TEXT, extra)


def _read_entry(cache: Cache, k3: str) -> Executable | None:
    """Level 3's executable, or None (reported and deleted) when it does not load."""
    image = cache.path("exe", k3, ".npuexe")
    try:
        return read_executable(image)
    except ExecutableError as e:
        cache.corrupt(image, f"{e.region}: {e.message}")
        cache.path("exe", k3, ".json").unlink(missing_ok=True)
        return None


Provenance = tuple[dict[str, str], list[str], dict[str, list[int]]]
"""What the importer made of the initializers (`_level1`): store key -> the initializer
it is, unchanged; the initializers it read otherwise; the shape of each store key the
initializer it is has another shape (a view: `import_model`'s `shapes`)."""


def _level1(cache: Cache, path: Path, model: onnx.ModelProto, digests: ModelDigests, arch: Arch,
            bucket: Mapping[str, int] | None,
            model_path: str | None) -> tuple[ModuleOp, dict[str, np.ndarray], Provenance]:
    """The imported module and weights: from level 1 (initializers it used as they are
    re-read from `model`, the file `model_path` if not None) or by importing (stored);
    and the importer's provenance (`Provenance`)."""
    from lowering.importer.onnx_import import OnnxImportError, import_model
    from npu_dialects import module_text
    from npu_dialects.arch import set_arch

    entry = cache.read_zip(path)
    module = None
    if entry is not None and entry[0].get("depends") == digests.of(entry[0].get("read", [])):
        module = _parse_text(entry[1], path)
    if entry is not None and module is not None:
        meta, _, weights = entry
        set_arch(module, arch)
        inits = {i.name: i for i in model.graph.initializer}
        from lowering.importer.onnx_file import initializer_array
        views = meta.get("shapes", {})
        for k, name in meta["direct"].items():
            data = initializer_array(inits[name])
            weights[k] = np.ascontiguousarray(data.reshape(views[k]) if k in views else data)
        cache.note("import", "hit")
        return module, weights, (meta["direct"], meta["read"], views)
    sources: dict[str, str] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    try:
        module, weights = import_model(model, arch, dims=bucket, sources=sources, shapes=shapes)
    except OnnxImportError as e:
        raise UserError(e.located(model_path)) from None
    read = sorted(set(digests.tensors) - set(sources.values()))
    views = {k: list(s) for k, s in shapes.items()}
    meta = {"direct": sources, "read": read, "depends": digests.of(read), "shapes": views}
    cache.write_zip(path, meta, module_text(module), {k: v for k, v in weights.items() if k not in sources})
    cache.note("import", "miss")
    return module, weights, (sources, read, views)


def _level2(cache: Cache, path: Path, module: ModuleOp, weights: dict[str, np.ndarray], arch: Arch,
            options: Mapping[str, Any], known: Mapping[str, str]) -> tuple[ModuleOp, dict[str, np.ndarray], str, str]:
    """The module after graph optimisation, its weights, its IR digest and its weights
    digest (`weights_digest`, with the `known` digests of weights imported as they are:
    the graph passes add weights, never change one): from level 2 or by running the
    stage (stored)."""
    from npu_dialects import module_text
    from npu_dialects.arch import set_arch
    from npu_dialects.weights import referenced_weights

    entry = cache.read_zip(path)
    out = _parse_text(entry[1], path) if entry is not None else None
    if entry is not None and out is not None:
        meta, _, folded = entry
        set_arch(out, arch)
        cache.note("graph", "hit")
        return out, {**weights, **folded}, meta["ir_sha"], meta["weights"]
    before = set(weights)  # (the passes add to the dict they are given)
    module, all_weights = _stage(module, arch, weights, "graph", options)
    text = module_text(module)
    used = referenced_weights(module)
    ir_sha, w2 = hashlib.sha256(text.encode()).hexdigest(), weights_digest(used, {k: known[k] for k in before
                                                                                  if k in known})
    cache.write_zip(path, {"ir_sha": ir_sha, "weights": w2}, text,
                    {k: v for k, v in used.items() if k not in before})
    cache.note("graph", "miss")
    return module, all_weights, ir_sha, w2


def _stage(module: ModuleOp, arch: Arch, weights: dict[str, np.ndarray], stage: str,
           options: Mapping[str, Any]) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """One stage of `npu-default` with `options` (`lowering.pipeline.compile_module`)."""
    from xdsl.utils.exceptions import DiagnosticException, VerifyException

    from lowering.pipeline import compile_module
    from npu_dialects.weights import weights_of
    try:
        compile_module(module, arch, weights, stage=stage, **{"verify_each": False, **options})
    except TypeError as e:
        raise UsageError(f"bad npu-default option: {e}") from None
    except (DiagnosticException, VerifyException) as e:
        lines = str(e).strip().splitlines() or [type(e).__name__]
        raise UserError(error_line(lines[0]), "\n".join(lines[1:]) or None) from None
    return module, weights_of(module)


def _parse_text(text: str, path: Path) -> ModuleOp | None:
    """A cached module's IR text parsed back (None: it does not parse, e.g. it names an
    op of a plugin no longer installed: a miss)."""
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import ParseError

    from npu_dialects import make_context
    try:
        return Parser(make_context(), text, name=str(path)).parse_module()
    except ParseError:
        return None


# ----------------------------------------------------------------------------- shared with npu-run


def parse_arch(spec: str | None) -> Arch | None:
    """The arch of a spec (`default,cores=2`, a chip file); None for None. A bad spec
    is a UsageError (with the arch error's hint)."""
    from npu_dialects.arch import ArchError, parse_arch_spec
    if spec is None:
        return None
    try:
        return parse_arch_spec(spec)
    except ArchError as e:
        raise UsageError(f"bad --arch '{spec}': {e}", e.hint) from None


def compile_graph(module: ModuleOp, arch: Arch, weights: dict[str, np.ndarray],
                  pipeline: str | None = None) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Compile in place (`npu-default`, or `pipeline` in npu-opt syntax); returns
    (module, weights incl. any the passes folded)."""
    if pipeline is not None:
        module, weights, _ = _lower(module, arch, weights, pipeline, {})
        return module, weights
    try:
        from lowering.pipeline import compile_module
    except ImportError as e:
        raise UserError(f"the compiler is not available ({e})") from None
    from xdsl.utils.exceptions import DiagnosticException, VerifyException

    from npu_dialects.weights import weights_of
    try:
        compile_module(module, arch, weights, verify_each=False)
        return module, weights_of(module)
    except (DiagnosticException, VerifyException) as e:  # CompileError is a DiagnosticException
        lines = str(e).strip().splitlines() or [type(e).__name__]
        raise UserError(error_line(lines[0]), "\n".join(lines[1:]) or None) from None


def is_task_level(module: ModuleOp) -> bool:
    """The module holds an `npu_task.task` (it is past `npu-bufferize`)."""
    from npu_dialects.task import TaskOp
    return any(isinstance(op, TaskOp) for op in module.walk())


def parse_mlir_file(path: str) -> ModuleOp:
    """The module of an `.mlir` file, parsed and verified; a problem is a UserError with
    the MLIR-style diagnostic (`FILE:LINE:COL: error: ...`, `tools.diagnostics`) first
    and the source line after."""
    from xdsl.utils.exceptions import ParseError, VerifyException

    from npu_dialects import make_context
    from tools.diagnostics import SourceVerifyError, parse_mlir, verify_located
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise UserError(f"cannot read '{path}': {e.strerror or e}") from None
    try:
        module = parse_mlir(make_context(), text, path)
        verify_located(module)
    except (ParseError, VerifyException) as e:
        first, *rest = str(e).strip().splitlines() or [type(e).__name__]
        if not isinstance(e, (ParseError, SourceVerifyError)):  # (an op not from the text: name the file)
            first = f"'{path}' does not verify: {first}"
        raise UserError(first, "\n".join(rest) or None) from None
    return module

"""Lowering: the ONNX importer (a translation), the passes (one per file, named
after the pass) and the plain algorithms they use (tiling search, cost model,
scheduling, liveness and offset assignment).

`get_all_passes()` is the registry: pass name -> factory returning the pass
class, imported lazily so that `npu-opt` starts fast."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (xDSL loads with the first pass: `lowering.importer.onnx_file` needs none of it)
    from xdsl.passes import ModulePass

PASSES: dict[str, tuple[str, str]] = {
    "npu-canonicalize": ("lowering.graph.canonicalize", "Canonicalize"),
    "npu-constant-fold": ("lowering.graph.constant_fold", "ConstantFold"),
    "npu-shape-inference": ("lowering.graph.shape_inference", "ShapeInference"),
    "npu-bn-fold": ("lowering.graph.bn_fold", "BnFold"),
    "npu-hoist-pool": ("lowering.graph.hoist_pool", "HoistPoolPass"),
    "npu-dce": ("lowering.graph.dce", "Dce"),
    "npu-cse": ("lowering.graph.cse", "Cse"),
    "npu-split-concat-conv": ("lowering.graph.split_concat_conv", "SplitConcatConvPass"),
    "npu-convert-precision": ("lowering.graph.convert_precision", "ConvertPrecision"),
    "npu-fold-attention-scale": ("lowering.graph.fold_attention_scale", "FoldAttentionScalePass"),
    "npu-fuse-qdq": ("lowering.graph.fuse_qdq", "FuseQdqPass"),
    "npu-merge-projections": ("lowering.graph.merge_projections", "MergeProjectionsPass"),
    "npu-fuse": ("lowering.graph.fuse", "Fuse"),
    "npu-split-rows": ("lowering.graph.split_rows", "SplitRows"),
    "npu-tile": ("lowering.tile.tile", "Tile"),
    "npu-layer-group": ("lowering.tile.layer_group", "LayerGroup"),
    "npu-tile-loops": ("lowering.tile.tile_loops", "TileLoops"),
    "npu-bufferize": ("lowering.buffer.bufferize", "Bufferize"),
    "npu-schedule": ("lowering.task.schedule", "Schedule"),
    "npu-task-canonicalize": ("lowering.task.task_canonicalize", "TaskCanonicalize"),
    "npu-dma-order": ("lowering.task.dma_order", "DmaOrder"),
    "npu-events": ("lowering.task.events", "Events"),
    "npu-prefetch": ("lowering.task.prefetch", "Prefetch"),
    "npu-early-load": ("lowering.task.early_load", "EarlyLoad"),
    "npu-software-pipeline": ("lowering.task.software_pipeline", "SoftwarePipeline"),
    "npu-unit-sync": ("lowering.task.unit_sync", "UnitSyncPass"),
    "npu-memplan": ("lowering.task.memplan", "MemPlan"),
    "npu-default": ("lowering.pipeline", "NpuDefault"),
    "npu-apply-patterns": ("lowering.patterns.apply_patterns", "ApplyPatterns"),
    # the template a new pass copies (README, "Writing a pass"); not in npu-default
    "npu-example-fold-idempotent": ("lowering.graph.example_fold_idempotent", "ExampleFoldIdempotent"),
}
"""Pass name -> (module, class), in pipeline order."""


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def factory(module: str, cls: str) -> Callable[[], type[ModulePass]]:
        return lambda: getattr(importlib.import_module(module), cls)

    passes = {name: factory(module, cls) for name, (module, cls) in PASSES.items()}
    for name, cls in plugin_passes().items():
        passes.setdefault(name, (lambda c: lambda: c)(cls))
    return passes


def plugin_passes() -> dict[str, type[ModulePass]]:
    """Pass name -> class of the passes installed plugins register (`npu_dialects/plugins.py`);
    a plugin pass named like one of ours is an error."""
    from xdsl.passes import ModulePass  # noqa: F811 (at run time: the package imports without xDSL)

    from npu_dialects.plugins import PluginError, loaded
    out: dict[str, type[ModulePass]] = {}
    for ep, cls in loaded("npu_compiler.passes"):
        if not (isinstance(cls, type) and issubclass(cls, ModulePass)):
            raise PluginError(f"plugin '{ep}' (group npu_compiler.passes) gave {cls!r}, not a ModulePass class")
        if cls.name in PASSES:
            raise PluginError(f"plugin '{ep}' (group npu_compiler.passes) redefines the pass '{cls.name}'")
        out[cls.name] = cls
    return out

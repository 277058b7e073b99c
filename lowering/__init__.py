"""Lowering: the ONNX importer (a translation), the passes (one per file, named
after the pass) and the plain algorithms they use (tiling search, cost model,
scheduling, liveness and offset assignment).

`get_all_passes()` is the registry: pass name -> factory returning the pass
class, imported lazily so that `npu-opt` starts fast."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def _canonicalize():
        from lowering.graph.canonicalize import Canonicalize
        return Canonicalize

    def _constant_fold():
        from lowering.graph.constant_fold import ConstantFold
        return ConstantFold

    def _shape_inference():
        from lowering.graph.shape_inference import ShapeInference
        return ShapeInference

    def _bn_fold():
        from lowering.graph.bn_fold import BnFold
        return BnFold

    def _dce():
        from lowering.graph.dce import Dce
        return Dce

    def _cse():
        from lowering.graph.cse import Cse
        return Cse

    def _fuse():
        from lowering.graph.fuse import Fuse
        return Fuse

    def _tile():
        from lowering.tile.tile import Tile
        return Tile

    def _layer_group():
        from lowering.tile.layer_group import LayerGroup
        return LayerGroup

    def _tile_loops():
        from lowering.tile.tile_loops import TileLoops
        return TileLoops

    def _bufferize():
        from lowering.buffer.bufferize import Bufferize
        return Bufferize

    def _schedule():
        from lowering.task.schedule import Schedule
        return Schedule

    def _events():
        from lowering.task.events import Events
        return Events

    def _memplan():
        from lowering.task.memplan import MemPlan
        return MemPlan

    def _default():
        from lowering.pipeline import NpuDefault
        return NpuDefault

    return {
        "npu-canonicalize": _canonicalize,
        "npu-constant-fold": _constant_fold,
        "npu-shape-inference": _shape_inference,
        "npu-bn-fold": _bn_fold,
        "npu-dce": _dce,
        "npu-cse": _cse,
        "npu-fuse": _fuse,
        "npu-tile": _tile,
        "npu-layer-group": _layer_group,
        "npu-tile-loops": _tile_loops,
        "npu-bufferize": _bufferize,
        "npu-schedule": _schedule,
        "npu-events": _events,
        "npu-memplan": _memplan,
        "npu-default": _default,
    }

"""The npu dialects and passes as an xDSL plugin: the `xdsl.universe` entry point
(pyproject.toml, `[project.entry-points."xdsl.universe"]`) names `NPU_UNIVERSE`, so
`xdsl-opt` (and any tool built on xDSL's `Multiverse`) parses our dialects and runs our
passes: `xdsl-opt model.mlir -p npu-fuse,npu-tile`.

Loading this module imports nothing of the compiler: every dialect and pass is a
factory imported when first used (xDSL loads every universe on each start). Only the
compiler's own dialects and passes are listed - xDSL's builtin, func, arith and scf are
its own already, and a name listed twice makes every xDSL tool fail at start; the
dialects and passes of npu-compiler's own plugins (`npu_compiler.*` entry points) stay
npu-opt's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe

DIALECTS: dict[str, tuple[str, str]] = {
    "npu": ("npu_dialects.arch", "NPU"),
    "npu_graph": ("npu_dialects.graph", "NpuGraph"),
    "npu_tile": ("npu_dialects.tile", "NpuTile"),
    "npu_dma": ("npu_dialects.dma", "NpuDma"),
    "npu_compute": ("npu_dialects.compute", "NpuCompute"),
    "npu_task": ("npu_dialects.task", "NpuTask"),
}
"""Dialect name -> (module, object) of the compiler's dialects."""


def _dialect(module: str, name: str) -> Callable[[], Dialect]:
    def load() -> Dialect:
        importlib.import_module("npu_dialects.canonicalize")  # (sets npu_dma's canonicalization patterns)
        return getattr(importlib.import_module(module), name)
    return load


def _pass(module: str, name: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(importlib.import_module(module), name)


def _passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory of every pass of `lowering.PASSES` (lowering/__init__.py
    imports only the registry: the passes load when used)."""
    from lowering import PASSES
    return {name: _pass(module, cls) for name, (module, cls) in PASSES.items()}


NPU_UNIVERSE = Universe(
    all_dialects={name: _dialect(module, obj) for name, (module, obj) in DIALECTS.items()},
    all_passes=_passes(),
)
"""What the `xdsl.universe` entry point `npu_compiler` gives xDSL."""

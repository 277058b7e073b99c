"""The npu-compiler dialects: `npu` (the `#npu.arch` attribute), `npu_graph`,
`npu_tile`, `npu_dma`, `npu_compute` and `npu_task`.

`npu_dialects` imports nothing else from this project."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (importing the package stays free of xDSL: the compile cache's warm path reads plugins.py)
    from xdsl.context import Context


def all_dialects():
    """Every dialect a module of ours may use (ours plus the builtin ones we rely on)."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.scf import Scf

    import npu_dialects.canonicalize  # noqa: F401  (sets npu_dma's canonicalization patterns)
    from npu_dialects.arch import NPU
    from npu_dialects.compute import NpuCompute
    from npu_dialects.dma import NpuDma
    from npu_dialects.graph import NpuGraph
    from npu_dialects.task import NpuTask
    from npu_dialects.tile import NpuTile

    return [Builtin, Func, Arith, Scf, NPU, NpuGraph, NpuTile, NpuDma, NpuCompute, NpuTask, *plugin_dialects()]


def plugin_dialects() -> list:
    """The dialects installed plugins register (`npu_dialects/plugins.py`)."""
    from xdsl.ir import Dialect

    from npu_dialects.plugins import PluginError, called
    out = []
    for name, obj in called("npu_compiler.dialects"):
        items = [obj] if isinstance(obj, Dialect) else list(obj)
        if not all(isinstance(d, Dialect) for d in items):
            raise PluginError(f"plugin '{name}' (group npu_compiler.dialects) gave {obj!r}, not a Dialect")
        out += items
    return out


def make_context() -> Context:
    from xdsl.context import Context
    ctx = Context()
    for d in all_dialects():
        ctx.load_dialect(d)
    return ctx


def strip_unknown_locs(text: str) -> str:
    """Drop the ` loc(unknown)` noise the printer adds to ops without a location."""
    return text.replace(" loc(unknown)", "")


def module_text(module) -> str:
    """A module as text with its locations (ONNX node names), ready to parse back."""
    import io

    from xdsl.printer import Printer

    buf = io.StringIO()
    Printer(stream=buf, print_debuginfo=True).print_op(module)
    buf.write("\n")
    return strip_unknown_locs(buf.getvalue())

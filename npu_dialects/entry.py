"""The entry function of a module and the ONNX names of its inputs and outputs
(`npu.inputs` / `npu.outputs` on `func.func @main`), shared by the graph
evaluator, the compiler and the simulator."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr

INPUTS_ATTR = "npu.inputs"
OUTPUTS_ATTR = "npu.outputs"
INPUT_DTYPES_ATTR = "npu.input_dtypes"
"""The ONNX element type of each input (`float32`, `int64`, `bool`, ...): integer and
boolean inputs (token ids, masks) are carried as f32 values on the device."""
OUTPUT_DTYPES_ATTR = "npu.output_dtypes"
"""The ONNX element type of each output: integer and boolean outputs (ArgMax and TopK
indices, comparison results) are computed as f32 values holding integers or 0/1 and
converted back when they leave the device (`sim.program.carried_out`)."""
INPUT_RANGES_ATTR = "npu.input_ranges"
"""Per integer or boolean input, `array<i64: lo, hi>` (random values drawn from [lo, hi)
index every table inside its bounds) or a string saying why no range is known
(`lowering/graph/input_ranges.py`)."""


def find_main(module: ModuleOp) -> func.FuncOp | None:
    """`func.func @main`, or the module's only function; None when there is neither."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for f in funcs:
        if f.sym_name.data == "main":
            return f
    return funcs[0] if len(funcs) == 1 else None


def io_names(fn: func.FuncOp, attr: str) -> list[str] | None:
    """The names in `fn`'s `npu.inputs`/`npu.outputs` attribute (None if absent or malformed)."""
    a = fn.attributes.get(attr)
    if not isinstance(a, ArrayAttr) or not all(isinstance(x, StringAttr) for x in a.data):
        return None
    return [x.data for x in a.data]


def int_attr(module: ModuleOp, name: str) -> int | None:
    """An integer module attribute the compiler recorded (e.g. `npu.dram_arena_bytes`), or None."""
    a = module.attributes.get(name)
    return a.value.data if isinstance(a, IntegerAttr) else None

"""Reference evaluation of an `npu_graph` module with numpy.

`evaluate_graph` runs `func.func @main` op by op with each op's `evaluate` (the
reference semantics defined next to the op in `npu_dialects.graph`). It is the
oracle for the importer's tests and for checking later passes: any module still
at the graph level (including `npu_graph.fused`) can be evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from npu_dialects.dtypes import element_type, f32, np_dtype
from npu_dialects.entry import find_main
from npu_dialects.entry import io_names as entry_io_names
from npu_dialects.graph import ConstantOp, GraphOp, shape_of
from npu_dialects.locs import describe, node_names


class GraphEvalError(ValueError):
    """The module cannot be evaluated with the given inputs/weights (names the culprit)."""


def main_func(module: ModuleOp) -> func.FuncOp:
    """`func.func @main`, or the module's only function."""
    fn = find_main(module)
    if fn is None:
        raise GraphEvalError("the module has no 'func.func @main'")
    return fn


def io_names(fn: func.FuncOp, attr: str, count: int, prefix: str) -> list[str]:
    """The names in `fn`'s `npu.inputs`/`npu.outputs` attribute, or `PREFIX0, PREFIX1...`."""
    names = entry_io_names(fn, attr)
    if names is not None and len(names) == count:
        return names
    return [f"{prefix}{i}" for i in range(count)]


def constant_value(op: ConstantOp, weights: Mapping[str, np.ndarray]) -> np.ndarray:
    """The contents of an `npu_graph.constant`: its weight from `weights` or its inline value."""
    shape = shape_of(op.result)
    if op.weight is not None:
        key = op.weight.data
        if key not in weights:
            raise GraphEvalError(f"{describe(op)}: weight '{key}' is not in the weights")
        data = np.asarray(weights[key])
    elif op.value is not None:
        data = np.array(op.value.get_values(), dtype=np.float64).reshape(shape)
    else:
        raise GraphEvalError(f"{describe(op)}: constant without weight or value")
    if tuple(data.shape) != shape:
        raise GraphEvalError(f"{describe(op)}: weight has shape {list(data.shape)}, "
                             f"the op expects {list(shape)}")
    return data


def _held(v: SSAValue, dtype: type[np.floating]) -> np.dtype:
    """The numpy dtype a value is evaluated in: `dtype` for f32, else its own type's."""
    t = element_type(v)
    return np.dtype(dtype) if t == f32 else np_dtype(t)


def evaluate_graph(module: ModuleOp, weights: Mapping[str, np.ndarray],
                   inputs: Mapping[str, np.ndarray], *,
                   dtype: type[np.floating] = np.float32,
                   values: dict[str, np.ndarray] | None = None,
                   replace: Callable[[Operation, np.ndarray], np.ndarray | None] | None = None,
                   on_op: Callable[[Operation, list[np.ndarray]], None] | None = None
                   ) -> dict[str, np.ndarray]:
    """Evaluate `@main` on `inputs` (keyed by the names in `npu.inputs`, else `arg0`...)
    and return its results keyed by `npu.outputs` (else `out0`...). f32 inputs, weights,
    constants and results are held as `dtype` (np.float64 gives the float64 reference);
    values of other element types (f16, bf16, i8, ui8, i32) in their own numpy dtype.
    `values`, when given, receives each ONNX node's value (the first result of the last
    op located at the node), in program order. `replace(op, value)`, when given, sees
    each op's first result and may return another value for it (held in its type) that
    later ops read instead; `on_op(op, inputs)` sees each op with the values it read.
    Assumes every op in `@main` is an `npu_graph` op with reference semantics."""
    fn = main_func(module)
    block = fn.body.block
    env: dict[SSAValue, np.ndarray] = {}
    for arg, name in zip(block.args, io_names(fn, "npu.inputs", len(block.args), "arg")):
        if name not in inputs:
            raise GraphEvalError(f"missing input '{name}'")
        x = np.asarray(inputs[name], dtype=_held(arg, dtype))
        if tuple(x.shape) != shape_of(arg):
            raise GraphEvalError(f"input '{name}' has shape {list(x.shape)}, expected {list(shape_of(arg))}")
        env[arg] = x
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            names = io_names(fn, "npu.outputs", len(op.operands), "out")
            return {name: env[v] for name, v in zip(names, op.operands)}
        if isinstance(op, ConstantOp):
            env[op.result] = constant_value(op, weights).astype(_held(op.result, dtype), copy=False)
            continue
        if not isinstance(op, GraphOp):
            raise GraphEvalError(f"cannot evaluate {describe(op)}: not an npu_graph op")
        if on_op is not None:
            on_op(op, [env[o] for o in op.operands])
        outs = op.evaluate(*[env[o] for o in op.operands])
        for r, v in zip(op.results, outs):
            env[r] = np.asarray(v, dtype=_held(r, dtype))
        if replace is not None and op.results:
            other = replace(op, env[op.results[0]])
            if other is not None:
                env[op.results[0]] = np.asarray(other, dtype=_held(op.results[0], dtype))
        if values is not None and op.results:
            for name in node_names(op):
                values[name] = env[op.results[0]]  # (a node spelled as several ops: its last)
    raise GraphEvalError("'@main' has no func.return")

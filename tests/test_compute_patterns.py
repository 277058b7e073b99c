"""The bufferization compute patterns (`lowering/buffer/compute_patterns.py`): each
staged graph op (to_tensor operands, materialize into a destination) becomes its
npu_compute op; one a pattern must not take stays and is reported."""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType, StringAttr, TensorType, f32
from xdsl.ir import Block, Region

from lowering.buffer.compute_patterns import describe_unlowered, lower_compute, stage
from npu_dialects.compute import Conv2dOp, EltwiseOp, MaterializeOp, MatmulOp, PoolOp, ToTensorOp
from npu_dialects.graph import AddOp, GemmOp, MaxPoolOp, ReluOp
from npu_dialects.task import SramOp, TaskOp


def sram(shape, offset=0):
    return SramOp(MemRefType(f32, list(shape), memory_space=StringAttr("sram")), offset)


def task_of(ops) -> TaskOp:
    block = Block(arg_types=[])
    block.add_ops(ops)
    return TaskOp("t", 0, Region(block), range=(0, 1), predicted_cycles=0)


def names(task: TaskOp) -> list[str]:
    return [op.name for op in task.body.block.ops]


def test_gemm_becomes_a_cube_matmul_that_accumulates() -> None:
    a, b, c = sram((4, 16)), sram((16, 16), 256), sram((4, 16), 1280)
    t = TensorType(f32, [4, 16])
    g = GemmOp(a.results[0], b.results[0], None, t, trans_b=True)  # a template: only its class and attributes count
    task = task_of([a, b, c, *stage(g, [a.results[0], b.results[0]], c.results[0], accumulate=True)])
    assert lower_compute(task) is None
    assert names(task) == ["npu_task.sram"] * 3 + ["npu_compute.matmul"]
    mm = task.body.block.last_op
    assert isinstance(mm, MatmulOp) and "trans_b" in mm.attributes and "accumulate" in mm.attributes
    assert list(mm.operands) == [a.results[0], b.results[0], c.results[0]]


def test_elementwise_and_pool_and_new_ops_of_a_class() -> None:
    x, y = sram((1, 2, 4, 4)), sram((1, 2, 2, 2), 256)
    pool = MaxPoolOp(x.results[0], TensorType(f32, [1, 2, 2, 2]), kernel=(2, 2), strides=(2, 2))
    task = task_of([x, y, *stage(pool, [x.results[0]], y.results[0], pads=pool.pads),
                    *stage(ReluOp, [y.results[0]], y.results[0]),
                    *stage(AddOp, [y.results[0], y.results[0]], y.results[0])])
    assert lower_compute(task) is None
    ops = list(task.body.block.ops)[2:]
    assert isinstance(ops[0], PoolOp) and ops[0].kind.data == "max"
    assert [o.fn.data for o in ops[1:] if isinstance(o, EltwiseOp)] == ["relu", "add"]
    assert not any(isinstance(o, (ToTensorOp, MaterializeOp)) for o in task.walk())


def test_conv_keeps_its_pads() -> None:
    x, w, y = sram((1, 2, 4, 4)), sram((2, 2, 3, 3), 256), sram((1, 2, 4, 4), 512)
    from npu_dialects.graph import Conv2dOp as GraphConv
    conv = GraphConv(x.results[0], w.results[0], None, TensorType(f32, [1, 2, 4, 4]), pads=(1, 1, 1, 1))
    task = task_of([x, w, y, *stage(conv, [x.results[0], w.results[0]], y.results[0])])
    assert lower_compute(task) is None
    op = task.body.block.last_op
    assert isinstance(op, Conv2dOp) and op.params["pads"] == (1, 1, 1, 1)


def test_a_gemm_with_alpha_is_not_taken_and_is_reported() -> None:
    a, b, c = sram((4, 16)), sram((16, 16), 256), sram((4, 16), 1280)
    g = GemmOp(a.results[0], b.results[0], None, TensorType(f32, [4, 16]), alpha=2.0)
    task = task_of([a, b, c, *stage(g, [a.results[0], b.results[0]], c.results[0])])
    bad = lower_compute(task)
    assert isinstance(bad, GemmOp)  # (the matmul pattern must not drop alpha)
    assert "npu_compute.materialize" in names(task)
    assert describe_unlowered(bad) == ("'npu_graph.gemm' on buffers of shapes [[4, 16], [16, 16]] has no "
                                       "npu_compute lowering")


def test_a_graph_op_reading_something_else_than_buffers_is_not_taken() -> None:
    a, c = sram((4, 16)), sram((4, 16), 256)
    inner = stage(ReluOp, [a.results[0]], c.results[0])
    relu = inner[1]
    outer = AddOp(relu.results[0], relu.results[0], TensorType(f32, [4, 16]))  # reads a graph op, not to_tensor
    task = task_of([a, c, inner[0], relu, outer, MaterializeOp(outer.results[0], c.results[0])])
    assert lower_compute(task) is outer

"""npu_dialects.identity: xDSL's IR objects keep identity equality and hashing, at C speed."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block, Operation, SSAValue

import npu_dialects.dtypes  # noqa: F401  (applies npu_dialects.identity, as every dialect module does)
from npu_dialects.graph import ReluOp


def test_values_and_ops_hash_and_compare_by_identity_in_c():
    block = Block(arg_types=[TensorType(f32, [2]), TensorType(f32, [2])])
    a, b = block.args
    r1, r2 = ReluOp(a, a.type), ReluOp(a, a.type)
    for cls in (SSAValue, Operation, type(r1), type(a), Block):
        assert cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__, cls
    assert a == a and a != b and r1 != r2 and r1.result != r2.result  # (same type, same operand: distinct)
    seen = {a: "a", b: "b", r1: "r1", r2: "r2", r1.result: "x"}
    assert [seen[k] for k in (a, b, r1, r2, r1.result)] == ["a", "b", "r1", "r2", "x"]
    assert r2.result not in seen and len({a, b, a}) == 2

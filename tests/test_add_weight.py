"""npu_dialects.weights.add_weight keeps a weight's shape, 0-d included."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType, f32

from lowering.graph.constants import ConstantReader
from npu_dialects.graph import ConstantOp
from npu_dialects.weights import add_weight, attach_weights, weights_of


def test_a_scalar_weight_stays_0d_and_reads_as_a_scalar():
    module = ModuleOp([])
    attach_weights(module, {})
    key = add_weight(module, "fill", np.asarray(-np.inf, np.float32))
    assert weights_of(module)[key].shape == ()  # (np.ascontiguousarray had made it [1])
    c = ConstantOp(TensorType(f32, []), weight=key)
    module.body.block.add_op(c)
    assert ConstantReader(module, "test").scalar(c.result) == -np.inf

"""A fused kernel's compute ops carry their own graph op's location (issue 47 item 3):
the executable's task map and the trace name one ONNX node per compute op, not the
kernel's whole node list per op (which grew as N x N in the kernel's size)."""

from __future__ import annotations

from onnx import TensorProto, helper

from npu_dialects.locs import fused_loc, loc_names
from runtime.run import random_inputs, run
from sim import signature
from tools.api import compile as compile_model

OPS = ("Relu", "Neg", "Abs", "Sigmoid")


def chain(n: int):
    nodes, prev = [], "x"
    for i in range(n):
        out = f"t{i}" if i < n - 1 else "y"
        nodes.append(helper.make_node(OPS[i % 4], [prev], [out], name=f"n{i}"))
        prev = out
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_each_compute_op_of_a_fused_chain_names_its_own_node():
    exe = compile_model(chain(8))
    (task,) = exe.meta["tasks"]
    assert task["onnx_nodes"] == [f"n{i}" for i in range(8)]  # (the task: the kernel's nodes)
    assert [nodes for _, nodes in task["ops"]] == [[f"n{i}"] for i in range(8)]


def test_trace_vector_events_name_their_own_node():
    exe = compile_model(chain(8))
    res = run(exe.module, exe.weights, random_inputs(signature(exe.module)), exe.arch, trace=True)
    assert res.trace is not None
    events = res.trace["traceEvents"] if isinstance(res.trace, dict) else res.trace
    vector = [e["args"]["onnx_nodes"] for e in events if e.get("cat") == "vector"]
    assert vector == [[f"n{i}"] for i in range(8)]


def test_loc_names_keeps_order_without_duplicates():
    assert loc_names(fused_loc(["b", "a", "b", "c", "a"])) == ["b", "a", "c"]

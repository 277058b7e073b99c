"""The model zoo: the nine light CNNs shipped in the onnx wheel made runnable, and
the comparison of a compiled model on the simulator with onnxruntime.

The wheel's `onnx/backend/test/data/light/light_*.onnx` files are the real network
graphs (opset 9) with every weight replaced by `ConstantOfShape(shape) = 0.02`.
`prepare` turns one into a model worth checking numerics on (seeded random weights,
calibrated so activations stay O(1); the graph itself is kept). `compare` imports,
compiles (`npu-default`) and simulates a model with the helpers of
`tools/testkit/e2e.py` and measures the error against onnxruntime with the
acceptance tolerance (rtol 1e-3, atol 1e-4 x max |output|); `compare_or_xfail`
turns "not supported yet" diagnostics into an xfail. `embeddings_as_inputs`
cuts the integer token lookup off a transformer.

No torch here: the tests import this module.

Algorithm
---------
`prepare`: each ConstantOfShape-filled weight becomes a seeded random initializer
of the same name and shape, drawn according to what it is (`random_weight`: conv
and gemm weights He-normal, BatchNorm scales near 1 and variances positive, biases
and means small), then calibrated on the seeded input so activations stay O(1)
however deep the net (filled BatchNorm statistics set to those of the tensors
they normalize; the classifier before the final Softmax scaled to logits of
std 2). Nodes, their order, names and attributes, the graph inputs and outputs
and the initializers the wheel ships with real data (some BatchNorm statistics
of DenseNet-121, Inception v2 and ShuffleNet) stay as they are.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

from lowering.importer.onnx_import import OnnxImportError
from runtime.run import RunError
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs, run_session

LIGHT_MODELS: tuple[str, ...] = (
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
    "shufflenet", "squeezenet", "vgg19", "zfnet512")
"""The light models of the onnx wheel, by the name in `light_<name>.onnx`."""

RTOL = 1e-3
"""Acceptance tolerance: relative part."""
ATOL_FRACTION = 1e-4
"""Acceptance tolerance: the absolute part is this fraction of max |reference output|."""

_PASS_THROUGH = frozenset({"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Transpose", "Identity", "Cast"})
"""Ops that move a weight without computing on it: its role is its consumer's."""


def light_dir() -> Path:
    """The folder of the light models inside the installed onnx package."""
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def light_models() -> dict[str, Path]:
    """Name -> path of the nine light models (`resnet50`: `light_resnet50.onnx`, ...).
    Raises FileNotFoundError naming the missing files if the wheel lacks any."""
    paths = {name: light_dir() / f"light_{name}.onnx" for name in LIGHT_MODELS}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"light models missing from the onnx package: {', '.join(missing)}")
    return paths


# ----------------------------------------------------------------------------------------
# Random weights in place of the ConstantOfShape fills
# ----------------------------------------------------------------------------------------


def _consumers(graph: onnx.GraphProto) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    uses: dict[str, list[tuple[onnx.NodeProto, int]]] = defaultdict(list)
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name:
                uses[name].append((node, i))
    return uses


def _role(name: str, uses: Mapping[str, list[tuple[onnx.NodeProto, int]]]) -> tuple[str, onnx.NodeProto | None]:
    """What weight `name` is, from its first computing consumer (following Unsqueeze,
    Reshape, ...): conv-weight, gemm-weight, matmul-weight, bn-scale, bn-bias, bn-mean,
    bn-var, scale (a Mul operand), bias (a Conv/Gemm bias, an Add/Sum operand) or other."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        value = todo.pop(0)
        if value in seen:
            continue
        seen.add(value)
        for node, i in uses.get(value, []):
            op = node.op_type
            if op in _PASS_THROUGH:
                todo.extend(o for o in node.output if o)
                continue
            if op == "Conv":
                return ("conv-weight" if i == 1 else "bias" if i == 2 else "other"), node
            if op == "Gemm":
                return ("gemm-weight" if i == 1 else "bias" if i == 2 else "other"), node
            if op == "MatMul":
                return ("matmul-weight" if i == 1 else "other"), node
            if op == "BatchNormalization":
                return {1: "bn-scale", 2: "bn-bias", 3: "bn-mean", 4: "bn-var"}.get(i, "other"), node
            if op == "Mul":
                return "scale", node
            if op in ("Add", "Sum"):
                return "bias", node
            return "other", node
    return "other", None


def _attr(node: onnx.NodeProto | None, name: str, default: int) -> int:
    if node is not None:
        for a in node.attribute:
            if a.name == name:
                return int(helper.get_attribute_value(a))
    return default


def random_weight(role: str, shape: tuple[int, ...], rng: np.random.Generator,
                  node: onnx.NodeProto | None = None) -> np.ndarray:
    """A float32 array of `shape` drawn for a weight of `role` (see `_role`).

    Conv and Gemm/MatMul weights are He-normal (std sqrt(2 / fan_in)), so a
    conv -> (BatchNorm) -> ReLU chain keeps the second moment of its activations;
    BatchNorm scales and Mul scales are in [0.5, 1.5], variances in [0.5, 1.5]
    (positive), means, biases and anything else in [-0.1, 0.1]."""
    if role == "conv-weight":
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return _normal(rng, shape, np.sqrt(2.0 / max(fan_in, 1)))
    if role in ("gemm-weight", "matmul-weight"):
        dims = [d for d in shape if d != 1] or [1]  # the matrix of a [1, 1, N, K] or [N, K, 1, 1] weight
        if role == "gemm-weight" and len(dims) == 2:
            fan_in = dims[1] if _attr(node, "transB", 0) else dims[0]
        else:
            fan_in = shape[-2] if len(shape) >= 2 else int(np.prod(shape))  # 1-D: its length
        return _normal(rng, shape, np.sqrt(2.0 / max(fan_in, 1)))
    if role in ("bn-scale", "scale", "bn-var"):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    return rng.uniform(-0.1, 0.1, shape).astype(np.float32)  # bn-bias, bn-mean, bias, other


def _normal(rng: np.random.Generator, shape: tuple[int, ...], std: float) -> np.ndarray:
    data = rng.standard_normal(shape, dtype=np.float32)
    data *= np.float32(std)
    return data


def _const_of_shape_fills(graph: onnx.GraphProto) -> dict[str, tuple[onnx.NodeProto, tuple[int, ...]]]:
    """Output name -> (node, shape) of every ConstantOfShape whose shape is an initializer
    and whose value is float (the filled weights)."""
    inits = {i.name: i for i in graph.initializer}
    fills = {}
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or not node.input or node.input[0] not in inits:
            continue
        dtype = onnx.TensorProto.FLOAT
        for a in node.attribute:
            if a.name == "value":
                dtype = a.t.data_type
        if dtype != onnx.TensorProto.FLOAT:
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]).reshape(-1))
        fills[node.output[0]] = (node, shape)
    return fills


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded data for every graph input that is not an initializer (static shapes
    only): standard normal for floats; for integers, indices valid for every Gather
    that takes the input as indices (token ids below the vocabulary size), else
    0..9; booleans at random."""
    rng = np.random.default_rng(seed)
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    uses = _consumers(graph)
    out = {}
    for vi in graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = tuple(d.dim_value for d in tt.shape.dim)
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        if np.issubdtype(dtype, np.floating):
            out[vi.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            out[vi.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            bounds = [int(inits[node.input[0]].dims[_attr(node, "axis", 0)])
                      for node, i in uses.get(vi.name, [])
                      if node.op_type == "Gather" and i == 1 and node.input[0] in inits]
            out[vi.name] = rng.integers(0, min(bounds, default=10), shape).astype(dtype)
    return out


def prepare(path: str | Path, seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Load a light model and return it with seeded random weights in place of its
    ConstantOfShape fills, and seeded random inputs.

    Weights are drawn by role (`random_weight`), then calibrated on the inputs so the
    activations stay O(1) however deep the net: the running mean and variance of
    every BatchNormalization whose statistics were fills become the statistics of
    the tensor it normalizes (layer by layer, as a network trained with these
    weights would have them; variances stay positive), and a classifier feeding
    the final Softmax is scaled so its logits have standard deviation 2 (a softmax
    that is not saturated, so its outputs check the logits).

    The new weights are initializers named like the values the fills produced; in a
    model of IR version < 4 (all light models) they are declared as graph inputs too,
    as that IR version requires. The same `seed` always gives the same model."""
    model = onnx.load(str(path))
    graph = model.graph
    fills = _const_of_shape_fills(graph)
    uses = _consumers(graph)
    rng = np.random.default_rng(seed)

    weights: dict[str, np.ndarray] = {}
    for name, (_node, shape) in fills.items():
        role, consumer = _role(name, uses)
        weights[name] = random_weight(role, shape, rng, consumer)

    dropped_nodes = {id(node) for node, _ in fills.values()}
    kept = [n for n in graph.node if id(n) not in dropped_nodes]
    still_used = {i for n in kept for i in n.input} | {o.name for o in graph.output}
    shape_inits = {node.input[0] for node, _ in fills.values()} - still_used
    del graph.node[:]
    graph.node.extend(kept)
    inits = [i for i in graph.initializer if i.name not in shape_inits]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    inputs = [i for i in graph.input if i.name not in shape_inits]
    del graph.input[:]
    graph.input.extend(inputs)
    data = random_inputs(model, seed)
    if model.ir_version < 4:
        inputs += [helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, list(v.shape))
                   for k, v in weights.items()]
    del graph.input[:]
    graph.input.extend(inputs)

    _calibrate_batchnorms(model, weights, data)
    _calibrate_logits(model, weights, data)
    graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in weights.items())
    onnx.checker.check_model(model)
    return model, data


def _session(model: onnx.ModelProto, weights: Mapping[str, np.ndarray], free: set[str],
             fetch: list[str]) -> ort.InferenceSession:
    """An onnxruntime session of `model` with `weights` as initializers except those
    named in `free` (graph inputs, fed at run time) and `fetch` as extra outputs."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    g = probe.graph
    g.initializer.extend(numpy_helper.from_array(v, k) for k, v in weights.items() if k not in free)
    declared = {i.name for i in g.input}
    g.input.extend(helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, list(weights[k].shape))
                   for k in sorted(free) if k not in declared)
    outputs = {o.name for o in g.output}
    g.output.extend(helper.make_empty_tensor_value_info(name) for name in dict.fromkeys(fetch)
                    if name not in outputs)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(probe.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _calibrate_batchnorms(model: onnx.ModelProto, weights: dict[str, np.ndarray],
                          inputs: Mapping[str, np.ndarray]) -> None:
    """Set the mean/var fills of each BatchNormalization to the per-channel statistics
    of its input, level by level (a BatchNorm's level is one more than the deepest
    calibrated BatchNorm before it): one onnxruntime run per level."""
    level: dict[str, int] = {}
    todo: dict[int, list[onnx.NodeProto]] = defaultdict(list)
    for node in model.graph.node:
        depth = max((level.get(i, 0) for i in node.input if i), default=0)
        if (node.op_type == "BatchNormalization" and len(node.input) == 5
                and node.input[3] in weights and node.input[4] in weights):
            depth += 1
            todo[depth].append(node)
        for o in node.output:
            level[o] = depth
    if not todo:
        return
    free = {n.input[i] for nodes in todo.values() for n in nodes for i in (3, 4)}
    sess = _session(model, weights, free, [n.input[0] for nodes in todo.values() for n in nodes])
    for depth in sorted(todo):
        nodes = todo[depth]
        feed = {**inputs, **{k: weights[k] for k in free}}
        for node, x in zip(nodes, run_session(sess, [n.input[0] for n in nodes], feed)):
            axes = (0, *range(2, x.ndim))
            x = x.astype(np.float64)
            var = x.var(axis=axes)
            floor = max(1e-2 * float(np.median(var)), 1e-6)
            weights[node.input[3]] = x.mean(axis=axes).astype(np.float32)
            weights[node.input[4]] = np.maximum(var, floor).astype(np.float32)


def _calibrate_logits(model: onnx.ModelProto, weights: dict[str, np.ndarray],
                      inputs: Mapping[str, np.ndarray], std: float = 2.0) -> None:
    """Scale the filled weight and bias of the Gemm/Conv/MatMul that feeds each final
    Softmax (through Reshape/Flatten/...) so the logits have standard deviation `std`."""
    producers = {o: n for n in model.graph.node for o in n.output}
    targets: list[tuple[str, onnx.NodeProto]] = []
    for node in model.graph.node:
        if node.op_type != "Softmax":
            continue
        value = _through_pass_through(node.input[0], producers)
        prod = producers.get(value)
        if (prod is not None and prod.op_type in ("Gemm", "Conv", "MatMul")
                and _through_pass_through(prod.input[1], producers) in weights):
            targets.append((value, prod))
    if not targets:
        return
    sess = _session(model, weights, set(), [v for v, _ in targets])
    for (_value, prod), z in zip(targets, run_session(sess, [v for v, _ in targets], inputs)):
        observed = float(np.std(z.astype(np.float64)))
        if observed == 0.0 or not np.isfinite(observed):
            continue
        c = np.float32(std / observed)
        for name in prod.input[1:3]:
            source = _through_pass_through(name, producers)
            if source in weights:
                weights[source] = weights[source] * c


def _through_pass_through(value: str, producers: Mapping[str, onnx.NodeProto]) -> str:
    """The value `value` is a Reshape/Unsqueeze/... of (or itself)."""
    prod = producers.get(value)
    while prod is not None and prod.op_type in _PASS_THROUGH and prod.input:
        value = prod.input[0]
        prod = producers.get(value)
    return value


# ----------------------------------------------------------------------------------------
# Compiled model vs onnxruntime
# ----------------------------------------------------------------------------------------


@dataclass
class Comparison:
    """How the simulated outputs of a compiled model compare with onnxruntime's.

    `max_abs_err` and `max_rel_err` are over all outputs (relative: to |reference|
    where it is nonzero); `tolerance_ratio` is the largest |sim - ref| / (atol + rtol
    |ref|) with the acceptance tolerance (rtol 1e-3, atol 1e-4 x max |ref| per
    output): `ok` when it is at most 1."""

    max_abs_err: float
    max_rel_err: float
    tolerance_ratio: float
    max_abs_ref: float
    cycles: int | float
    seconds: float
    per_output: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.tolerance_ratio <= 1.0)

    def __str__(self) -> str:
        return (f"max_abs_err={self.max_abs_err:.3g} max_rel_err={self.max_rel_err:.3g} "
                f"max|ref|={self.max_abs_ref:.3g} tolerance_ratio={self.tolerance_ratio:.3g} "
                f"({'ok' if self.ok else 'MISMATCH'}), {self.cycles} cycles, {self.seconds:.1f} s")


def output_errors(got: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """max_abs_err, max_rel_err, tolerance_ratio and max_abs_ref (over finite values)
    of one output. Equal infinities and NaN where the reference has NaN count as exact."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        return {"max_abs_err": float("inf"), "max_rel_err": float("inf"), "tolerance_ratio": float("inf"),
                "max_abs_ref": float(np.abs(ref).max(initial=0.0))}
    with np.errstate(invalid="ignore"):
        diff = np.abs(got - ref)
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))  # equal infinities, NaN for NaN
    diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
    finite = np.abs(ref[np.isfinite(ref)])
    max_ref = float(finite.max(initial=0.0))
    atol = ATOL_FRACTION * max_ref
    bound = atol + RTOL * np.abs(ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / bound)
        rel = np.where(ref != 0, diff / np.abs(ref), 0.0)
    return {"max_abs_err": float(diff.max(initial=0.0)), "max_rel_err": float(rel.max(initial=0.0)),
            "tolerance_ratio": float(ratio.max(initial=0.0)), "max_abs_ref": max_ref}


def compare(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], arch: str = "default",
            **options) -> Comparison:
    """Import `model`, compile it with `npu-default` for `arch` (`options` go to the
    pipeline), simulate it on `inputs` and compare every output with onnxruntime.

    Raises what the compiler raises (OnnxImportError, CompileError, RunError,
    SimError) when the model does not get that far."""
    t0 = time.perf_counter()
    res, _ = compile_and_run(model, arch, inputs=dict(inputs), **options)
    seconds = time.perf_counter() - t0
    ref = onnxruntime_outputs(model, dict(inputs))
    per_output = {name: output_errors(res.outputs[name], want) for name, want in ref.items()}
    return Comparison(
        max_abs_err=max(e["max_abs_err"] for e in per_output.values()),
        max_rel_err=max(e["max_rel_err"] for e in per_output.values()),
        tolerance_ratio=max(e["tolerance_ratio"] for e in per_output.values()),
        max_abs_ref=max(e["max_abs_ref"] for e in per_output.values()),
        cycles=res.report["cycles"], seconds=seconds, per_output=per_output)


_NODE_DIAG = re.compile(r"^error: node '.*?' \((?P<op>[^,]+), opset (?P<opset>\d+)\): (?P<what>.*)$")


def diagnostic_groups(message: str) -> list[tuple[str, int]]:
    """The lines of a (possibly multi-line) diagnostic grouped by cause: per-node
    import errors by (op type, opset, what is wrong), any other line by itself.
    Returns (first line of the group, number of lines) in order of appearance."""
    groups: dict[str, list] = {}
    for line in message.strip().splitlines():
        line = line.strip()
        if not line.startswith("error:"):
            continue  # details after the one-line diagnostics
        m = _NODE_DIAG.match(line)
        key = f"{m['op']}|{m['opset']}|{m['what']}" if m else line
        if key in groups:
            groups[key][1] += 1
        else:
            groups[key] = [line, 1]
    if not groups:
        first = message.strip().splitlines()[0] if message.strip() else ""
        return [(first, 1)]
    return [(line, n) for line, n in groups.values()]


def diagnostic_summary(error: BaseException) -> str:
    """One line: the first diagnostic of each cause, with how many nodes share it."""
    parts = [line if n == 1 else f"{line} (and {n - 1} more like it)"
             for line, n in diagnostic_groups(str(error))]
    return f"{type(error).__name__}: " + "; ".join(parts)


NOT_SUPPORTED_YET: tuple[type[BaseException], ...] = (OnnxImportError, RunError)
"""What a model that needs a missing feature fails with: the importer's diagnostics
(an unsupported operator, attribute, element type) and the runtime's refusal of
its inputs (say int64 token ids). Anything else - a compile error, a simulator
fault, a mismatch - is a bug to fix, not a feature to wait for."""


def compare_or_xfail(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], arch: str = "default",
                     **options) -> Comparison:
    """`compare`, but a model that needs a feature not supported yet (see
    NOT_SUPPORTED_YET) makes the calling test xfail with the grouped diagnostic, so
    the test passes as soon as the feature lands."""
    import pytest

    try:
        return compare(model, inputs, arch, **options)
    except NOT_SUPPORTED_YET as e:
        pytest.xfail(diagnostic_summary(e))


# ----------------------------------------------------------------------------------------
# Transformers: the body without the integer token input
# ----------------------------------------------------------------------------------------


def embeddings_as_inputs(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]
                         ) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The model from its embeddings on: every Gather that looks up an integer graph
    input in an initializer table is removed, its output becomes a float graph input,
    fed with the rows the lookup would give for `inputs`. So the rest of a
    transformer can be checked while integer graph inputs are not supported."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {i.name: i for i in graph.initializer}
    int_inputs = {vi.name for vi in graph.input if vi.name not in inits
                  and not np.issubdtype(helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type),
                                        np.floating)}
    feeds = {k: v for k, v in inputs.items() if k not in int_inputs}
    kept, new_inputs = [], []
    for node in graph.node:
        if (node.op_type == "Gather" and len(node.input) == 2 and node.input[1] in int_inputs
                and node.input[0] in inits):
            table = numpy_helper.to_array(inits[node.input[0]])
            rows = np.take(table, np.asarray(inputs[node.input[1]]), axis=_attr(node, "axis", 0))
            feeds[node.output[0]] = rows.astype(np.float32)
            new_inputs.append(helper.make_tensor_value_info(node.output[0], onnx.TensorProto.FLOAT,
                                                            list(rows.shape)))
            continue
        kept.append(node)
    used = {i for n in kept for i in n.input} | {o.name for o in graph.output}
    remaining = [vi for vi in graph.input if vi.name in used]
    tables = [t for t in graph.initializer if t.name in used]
    del graph.node[:]
    graph.node.extend(kept)
    del graph.input[:]
    graph.input.extend(remaining + new_inputs)
    del graph.initializer[:]
    graph.initializer.extend(tables)
    onnx.checker.check_model(out)
    return out, feeds

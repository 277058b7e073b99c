"""Shared end-to-end helpers for tests: ONNX model -> npu-default -> simulator,
compared with onnxruntime."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
import onnxruntime as ort

from lowering.importer.onnx_import import import_model
from lowering.pipeline import DEFAULT_PIPELINE, compile_module
from npu_dialects.arch import Arch, parse_arch_spec
from npu_dialects.tile import KernelOp
from npu_dialects.weights import weights_of
from runtime.run import RunResult, random_inputs, run
from sim.program import signature


def compile_and_run(model: onnx.ModelProto, arch: Arch | str = "default", seed: int = 0,
                    inputs: dict[str, np.ndarray] | None = None, **options) -> tuple[RunResult, dict]:
    """Compile `model` for `arch` with `npu-default` (options go to the pipeline) and simulate it."""
    if isinstance(arch, str):
        arch = parse_arch_spec(arch)
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights, **options)
    weights = weights_of(module)
    if inputs is None:
        inputs = random_inputs(signature(module), seed=seed)
    return run(module, weights, inputs, arch), inputs


def onnxruntime_outputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, run_session(sess, names, inputs)))


def run_session(sess: ort.InferenceSession, names: list[str], feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """`sess.run(names, feed)` for tensor outputs (TypeError naming any sequence, map or
    sparse output: the test models have none)."""
    outs = sess.run(names, dict(feed))
    tensors = [o for o in outs if isinstance(o, np.ndarray)]
    if len(tensors) != len(outs):
        bad = [n for n, o in zip(names, outs) if not isinstance(o, np.ndarray)]
        raise TypeError(f"onnxruntime outputs {', '.join(bad)} are not tensors")
    return tensors


def max_abs_error(model: onnx.ModelProto, arch: Arch | str = "default", **options) -> float:
    """Largest |simulated - onnxruntime| over all outputs."""
    res, inputs = compile_and_run(model, arch, **options)
    ref = onnxruntime_outputs(model, inputs)
    return max(float(np.abs(res.outputs[k] - ref[k]).max(initial=0.0)) for k in ref)


def grouped_kernels(model: onnx.ModelProto, arch: Arch | str = "default", **options) -> list[KernelOp]:
    """The kernels of `model` as npu-layer-group leaves them (options go to the pipeline)."""
    if isinstance(arch, str):
        arch = parse_arch_spec(arch)
    module, weights = import_model(model, arch)
    after = DEFAULT_PIPELINE[DEFAULT_PIPELINE.index("npu-layer-group") + 1:]
    compile_module(module, arch, weights, disable=after, **options)
    return [k for k in module.walk() if isinstance(k, KernelOp)]


def line_buffered_kernels(model: onnx.ModelProto, arch: Arch | str = "default", **options) -> list[str]:
    """The kernels npu-layer-group line-buffers in `model` (options go to the pipeline)."""
    return [k.kernel.data for k in grouped_kernels(model, arch, **options) if k.is_line_buffered]

"""One design point: compile a model for an arch and simulate it (timing-only unless
numerics are asked for), as a plain function of plain values, so a local process
pool, Ray or Dask can run it and the results are the same wherever it ran.

`evaluate(job)` never raises for a point that fails: a model that does not fit, an
unsupported op or a compiler bug is a result with `status` `failed` (a diagnosed
user error: its one-line diagnostic) or `crash` (anything else), kept in the table.
"""

from __future__ import annotations

import hashlib
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any

FIGURES = ("cycles", "time_us", "tasks", "kernels", "dram_bytes_read", "dram_bytes_written", "dram_bytes",
           "dram_vs_min", "roofline_cycles", "roofline_ratio", "model_macs", "model_min_dram_bytes",
           "kernel_min_dram_bytes", "fusion_floor_dram_bytes", "utilization.cube", "utilization.vector",
           "utilization.dma", "memory.dram_arena_bytes", "memory.dram_lower_bound_bytes", "memory.weights_bytes",
           "memory.sram_peak_bytes", "events_used")
"""The report figures a point records (`runtime.run.make_report`, flattened; lists such as
the per-core SRAM peaks give their maximum), plus `dram_bytes` (read + written),
`dram_vs_min` (that over the model's minimum DRAM bytes) and `kernels` (their count)."""
ACCURACY = ("output_max_rel_err", "output_cosine")
"""With numerics, the outputs against onnxruntime's run of the model on the same inputs:
the largest relative error (`tools.tolerance.metrics`) and the smallest cosine over the
outputs - what an arch's special-function methods (`fn_*`) cost in accuracy."""


@dataclass(frozen=True)
class Job:
    """What a worker needs: the model (bytes, or a cluster reference to them), its digest
    and name, the arch spec, npu-default options and the simulation mode."""

    model: Any
    digest: str
    name: str
    arch: str
    options: dict[str, Any] = field(default_factory=dict)
    numerics: bool = False
    pipeline: str | None = None


_MODELS: dict[str, Any] = {}  # digest -> onnx.ModelProto, per worker process


def forget_models() -> None:
    """Drop this process's parsed models (an executor closing)."""
    _MODELS.clear()


def model_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _model(job: Job):
    import onnx
    m = _MODELS.get(job.digest)
    if m is None:
        m = _MODELS[job.digest] = onnx.load_from_string(job.model)
    return m


def evaluate(job: Job) -> dict[str, Any]:
    """Compile and simulate one (model, arch) point; the result row (never raises)."""
    from runtime.run import random_inputs, run
    from sim import SimError, signature
    from tools.api import compile as npu_compile
    from tools.cli import UsageError, UserError
    from tools.dse.models import model_inputs
    row: dict[str, Any] = {"model": job.name, "arch": job.arch, "status": "ok", "error": ""}
    t0 = time.perf_counter()
    try:
        exe = npu_compile(_model(job), arch=job.arch, pipeline=job.pipeline, **_options(job.options))
        t1 = time.perf_counter()
        inputs = (model_inputs(job.name, _model(job)) or random_inputs(signature(exe.module), 0)) \
            if job.numerics else None
        res = run(exe.module, exe.weights if job.numerics else {}, inputs, timing_only=not job.numerics)
        t2 = time.perf_counter()
    except (UserError, UsageError, SimError) as e:
        lines = getattr(e, "lines", None)
        row.update(status="failed", error=(lines[0] if lines else str(e)).splitlines()[0])
        return row
    except Exception as e:  # a compiler bug: recorded with where it happened, the sweep goes on
        where = traceback.extract_tb(e.__traceback__)[-1]
        row.update(status="crash", error=f"{type(e).__name__}: {e} ({where.filename}:{where.lineno})")
        return row
    row.update(figures(res.report))
    if job.numerics and inputs is not None:
        row.update(output_error(job, inputs, res.outputs))
    row["compile_s"] = round(t1 - t0, 3)
    row["simulate_s"] = round(t2 - t1, 3)
    return row


_REFS: dict[str, Any] = {}  # digest -> onnxruntime's outputs on the seed-0 inputs, per worker process


def output_error(job: Job, inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    """ACCURACY of one run (None each when onnxruntime cannot run the model)."""
    import numpy as np

    from tools.tolerance import metrics
    refs = _REFS.get(job.digest)
    if refs is None:
        try:
            import onnxruntime as ort
            sess = ort.InferenceSession(job.model, providers=["CPUExecutionProvider"])
            names = [o.name for o in sess.get_outputs()]
            refs = dict(zip(names, sess.run(names, {i.name: inputs[i.name] for i in sess.get_inputs()})))
        except Exception:  # (onnxruntime raises many types; the figures stay empty)
            refs = {}
        _REFS[job.digest] = refs
    ms = [metrics(outputs[k], np.asarray(v)) for k, v in refs.items() if k in outputs]
    if not ms:
        return dict.fromkeys(ACCURACY)
    return {"output_max_rel_err": max(m["max_rel_err"] for m in ms), "output_cosine": min(m["cosine"] for m in ms)}


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """npu-default options from a spec (lists become tuples, as the pass takes them)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in options.items()}


def figures(report: dict[str, Any]) -> dict[str, Any]:
    """FIGURES of one run report."""
    out: dict[str, Any] = {}
    for name in FIGURES:
        v: Any = report
        for part in name.split("."):
            v = v.get(part) if isinstance(v, dict) else None
        if isinstance(v, list):  # (the kernel rows count; per-core SRAM peaks give their maximum)
            v = len(v) if name == "kernels" else max(v, default=None)
        out[name] = v
    out["dram_bytes"] = report["dram_bytes_read"] + report["dram_bytes_written"]
    least = report.get("model_min_dram_bytes")
    out["dram_vs_min"] = round(out["dram_bytes"] / least, 4) if least else None
    return out


def job_dict(job: Job) -> dict[str, Any]:
    d = asdict(job)
    d.pop("model")
    return d

"""Host side of one run: validate inputs against the module's I/O signature,
run the simulator, and turn its result into the run report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp

from npu_dialects.arch import Arch, arch_of
from npu_dialects.entry import int_attr
from sim import Signature, SimResult, signature, simulate
from sim.program import Layout, onnx_dtype


class RunError(Exception):
    """Bad inputs for a run (missing, unknown, wrong shape or dtype): a user error."""


@dataclass
class RunResult:
    """Outputs keyed by ONNX output name, the report dict, the Chrome trace
    (None unless asked for) and the raw simulator result."""

    outputs: dict[str, np.ndarray]
    report: dict[str, Any]
    trace: dict[str, Any] | None
    sim: SimResult | None  # (None when it ran through runtime.device)
    captured: list[tuple[list[str], np.ndarray]] = field(default_factory=list)  # (ONNX nodes, value) per alloc
    records: list[Any] = field(default_factory=list)  # the task records (runtime.device)


FLOAT_DTYPES = ("float32", "float16", "bfloat16")
"""ONNX input types taken from any floating-point array (cast, as float32 always was)."""
OWN_INTEGERS = ("int8", "uint8", "int32")
"""ONNX integer input types a buffer of the same type holds (values of their range, exactly)."""


def validate_inputs(sig: Signature, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Check `inputs` against the signature; returns arrays keyed by name, in the type the
    program holds them in: float32 (also carrying int64/bool inputs), float16, bfloat16,
    int8, uint8 or int32 as the model declares the input.

    Floating-point arrays of another precision are cast to the declared float type;
    integer and bool arrays are accepted for inputs the model declares integer/bool
    (int8/uint8/int32 when every value is in the type's range; the others carried as
    f32, exact below 2**24); anything else, a missing or unknown name or a wrong shape
    is a RunError with a one-line message."""
    known = [n for n, _ in sig.inputs]
    listing = ", ".join(f"'{n}' {list(s)}" for n, s in sig.inputs) or "none"
    for name in inputs:
        if name not in known:
            raise RunError(f"unknown input '{name}' (the model's inputs: {listing})")
    out: dict[str, np.ndarray] = {}
    for name, shape in sig.inputs:
        if name not in inputs:
            raise RunError(f"missing input '{name}' (the model's inputs: {listing})")
        x = np.asarray(inputs[name])
        want = sig.input_dtypes.get(name, "float32")
        floating = np.issubdtype(x.dtype, np.floating) or x.dtype == onnx_dtype("bfloat16")
        if want in FLOAT_DTYPES and not floating:
            raise RunError(f"input '{name}' has dtype {x.dtype}, expected {want}")
        if want not in FLOAT_DTYPES:
            if not (np.issubdtype(x.dtype, np.integer) or x.dtype == np.bool_):
                raise RunError(f"input '{name}' has dtype {x.dtype}, expected {want}")
            if want in OWN_INTEGERS:
                info = np.iinfo(want)
                if x.size and (x.min() < info.min or x.max() > info.max):
                    raise RunError(f"input '{name}' has values outside the range [{info.min}, {info.max}] of {want}")
            elif x.size and np.abs(x.astype(np.int64)).max() >= 2 ** 24:
                raise RunError(f"input '{name}' has values beyond 2**24, which f32 cannot carry exactly")
        if tuple(x.shape) != tuple(shape):
            raise RunError(f"input '{name}' has shape {list(x.shape)}, expected {list(shape)}")
        held = want if want in FLOAT_DTYPES or want in OWN_INTEGERS else "float32"
        out[name] = x.astype(onnx_dtype(held), copy=False)
    return out


def random_inputs(sig: Signature, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs of the signature's shapes and types: standard-normal floats (of the
    declared float type); integers and bools drawn from the range the compiler recorded
    for each (`Signature.input_ranges`: inside every table the input indexes, 0/1 for a
    mask), int8/uint8 without one from their whole range. An other integer input without
    a known range is a RunError asking for --inputs."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, shape in sig.inputs:
        dtype = sig.input_dtypes.get(name, "float32")
        if dtype in FLOAT_DTYPES:
            out[name] = rng.standard_normal(shape).astype(np.float32).astype(onnx_dtype(dtype))
            continue
        whole = (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max) + 1) if dtype in ("int8", "uint8") else None
        bounds = (sig.input_ranges or {}).get(name, (0, 2) if dtype == "bool" else whole)
        if not isinstance(bounds, tuple):
            why = bounds or ("the program records no range for it (it was compiled without npu-default's "
                             "graph stage, or by an older compiler)")
            raise RunError(f"cannot draw random values for {dtype} input '{name}': {why}; pass --inputs "
                           "with real values")
        out[name] = rng.integers(bounds[0], bounds[1], shape).astype(dtype)
    return out


def _num(x: float) -> int | float:
    """JSON-friendly cycle count: an int when integral, else rounded to 3 decimals."""
    r = round(float(x), 3)
    return int(r) if r == int(r) else r



def module_facts(module: ModuleOp, arch: Arch, layout: Layout) -> dict[str, Any]:
    """What the compiler recorded on a task-level module: the model's work and the
    roofline bound on `arch`, the memory plan, and from its loaded program's `layout`
    the SRAM peaks and event slots used."""
    facts: dict[str, Any] = {}
    macs, nbytes = int_attr(module, "npu.model_macs"), int_attr(module, "npu.model_min_bytes")
    if macs is not None and nbytes is not None:
        facts["model_macs"] = macs
        facts["model_min_dram_bytes"] = nbytes
        by_type = module.attributes.get("npu.model_macs_by_type")  # (absent: all f32)
        if isinstance(by_type, DictionaryAttr):
            facts["model_macs_by_type"] = {k: v.value.data for k, v in by_type.data.items()
                                           if isinstance(v, IntegerAttr)}
        facts["roofline_cycles"] = arch.roofline_cycles(facts.get("model_macs_by_type", macs), nbytes)
    kernel_bytes = int_attr(module, "npu.kernel_min_bytes")
    if kernel_bytes is not None:  # every fused kernel moving its operands and results once, no layer groups
        facts["kernel_min_dram_bytes"] = kernel_bytes
    floor = int_attr(module, "npu.fusion_floor_bytes")
    if floor is not None:  # the fewest bytes of layer groups whose weights fit one core's SRAM
        facts["fusion_floor_dram_bytes"] = floor
    facts["memory"] = {
        "dram_arena_bytes": int_attr(module, "npu.dram_arena_bytes"),
        "dram_lower_bound_bytes": int_attr(module, "npu.dram_lower_bound_bytes"),
        "weights_bytes": int_attr(module, "npu.dram_weights_bytes"),
        "sram_peak_bytes": list(layout.sram_peak),
    }
    facts["events_used"] = layout.event_slots
    return facts


def make_report(res: SimResult, module: ModuleOp | None = None) -> dict[str, Any]:
    """The run report (see DESIGN.md "The command-line contract"); with the module,
    also the roofline bound, the memory plan and the events used."""
    arch = res.arch
    cycles = res.cycles
    denom = arch.cores * cycles
    util = {
        "cube": sum(res.busy["cube"]) / denom if denom else 0.0,
        "vector": sum(res.busy["vector"]) / denom if denom else 0.0,
        "dma": res.dram_bytes_transferred / (arch.dram_bw * cycles) if cycles else 0.0,
    }
    kernels: dict[str, dict[str, Any]] = {}
    for t in res.tasks:
        k = kernels.get(t.kernel)
        if k is None:
            k = kernels[t.kernel] = {"name": t.kernel, "onnx_nodes": [], "cores": [], "tasks": 0,
                                     "start": t.start, "end": t.end, "dram_bytes_read": 0,
                                     "dram_bytes_written": 0, "predicted_cycles": None, "task_cycles": 0.0}
        k["onnx_nodes"] += [n for n in t.nodes if n not in k["onnx_nodes"]]
        if t.core not in k["cores"]:
            k["cores"].append(t.core)
        k["tasks"] += 1
        k["start"] = min(k["start"], t.start)
        k["end"] = max(k["end"], t.end)
        k["task_cycles"] = max(k["task_cycles"], t.end - t.body_start - t.gated)
        k["dram_bytes_read"] += t.dram_bytes_read
        k["dram_bytes_written"] += t.dram_bytes_written
        if t.predicted_cycles is not None:
            k["predicted_cycles"] = max(k["predicted_cycles"] or 0, t.predicted_cycles)
    rows = []
    layout = res.layout if module is not None else None
    assert module is None or layout is not None, "a run's report with its module needs the program's layout"
    mins = layout.kernel_dram_bytes if layout is not None else {}
    for k in kernels.values():
        if k["name"] in mins:  # (what the kernel moved against its minimum)
            k["min_dram_bytes"] = mins[k["name"]]
            moved = k["dram_bytes_read"] + k["dram_bytes_written"]
            k["dram_vs_min"] = round(moved / mins[k["name"]], 4) if mins[k["name"]] else None
        k["cores"].sort()
        k["cycles"] = _num(k["end"] - k["start"])
        k["task_cycles"] = _num(k["task_cycles"])
        k["start"], k["end"] = _num(k["start"]), _num(k["end"])
        rows.append(k)
    report: dict[str, Any] = {
        "arch": arch.to_dict(),
        "cycles": cycles,
        "time_us": round(cycles / arch.freq * 1e6, 6),
        "tasks": len(res.tasks),
        "dram_bytes_read": int(res.dram_bytes_read),
        "dram_bytes_written": int(res.dram_bytes_written),
        "utilization": util,
        "kernels": rows,
        "warnings": list(res.warnings),
    }
    if module is not None and layout is not None:
        facts = module_facts(module, arch, layout)
        report.update(facts)
        if "roofline_cycles" in facts and cycles:
            report["roofline_ratio"] = round(cycles / facts["roofline_cycles"], 4)
    return report


def run(module: ModuleOp, weights: Mapping[str, np.ndarray], inputs: Mapping[str, Any] | None,
        arch: Arch | None = None, trace: bool = False, timing_only: bool = False, **sim_options: Any) -> RunResult:
    """Validate `inputs`, simulate the task-level `module` on `arch` (default: the
    module's `npu.arch`) and build the report. Raises RunError for bad inputs and
    sim.SimError for faults of the program; `sim_options` go to `sim.simulate`.
    `timing_only`: no data (`inputs` and `weights` may be empty; no outputs), the
    same report (`sim.simulate`)."""
    sig = signature(module)
    ins = validate_inputs(sig, inputs or {}) if not timing_only or inputs else {}
    arch = arch or arch_of(module)
    res = simulate(module, weights, ins, arch, trace=trace, timing_only=timing_only, **sim_options)
    return RunResult(outputs=res.outputs, report=make_report(res, module),
                     trace=res.trace_json() if trace else None, sim=res)

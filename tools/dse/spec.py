"""The sweep a `npu-dse SPEC.toml` file describes: models, the arch space, the search,
and the area proxy the Pareto picture uses (the file's keys are under Algorithm).
Every value is checked up front: an error names the file, the key and what is allowed.

Algorithm
---------
    models = ["resnet50", "mobilenet_v2", "bert_base_128", "path/to/model.onnx"]
    base = "default"          # the arch every point overrides
    search = "auto"           # grid | optuna | auto (grid when the space has <= budget points)
    budget = 60               # points the guided search evaluates
    seed = 0
    numerics = false          # true: functional simulation instead of timing-only
    pipeline = "builtin.module(my-pass,npu-default)"   # optional, instead of npu-default
    out = "dse-results"       # relative to the current directory

    [space]                   # arch parameters: a list, or a range
    cores = [1, 2, 4, 8]
    cube = ["16x16x16", "32x16x16"]
    sram_bytes = { from = 131072, to = 2097152, scale = "log2" }   # doubling
    dram_bw = { from = 64, to = 256, step = 64 }
    cube_i8 = [2, 4]          # precision: int8 and f32 cube rates, vector rates, requant
    requant = ["float", "fixed"]
    precision = ["f32", "bf16"]   # the type the models compute in (npu-default's option)

    [area]                    # coefficients of the area proxy (the defaults are AREA)
    mac = 1.0
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npu_dialects import special
from npu_dialects.arch import PARAM_NAMES, STRING_PARAMS, Arch, ArchError, fmt_value, parse_arch_spec

SWEPT = ("cores", "cube", "vector_lanes", "sram_bytes", "dram_bw", "dma_latency", "dma_channels", "event_slots",
         "sync_latency", "cube_i8", "cube_f32_passes", "vector_f16", "vector_i8", "requant", *special.PARAMS)
"""The arch parameters a space may sweep (`freq` and `align` change no cycle count). The
precision ones (the cube's int8 and f32 rates, the vector unit's 16- and 8-bit rates,
`requant` = "float" | "fixed") are swept like the rest, and so are the special-function
methods (`fn_exp = ["table64", "table256", "exact"]`: with `numerics` the table gains each
output's error against onnxruntime); none enters the area proxy."""

OPTION_AXES: dict[str, tuple[str, ...]] = {"precision": ("f32", "f16", "bf16")}
"""Axes that are npu-default options, not arch parameters, and the values each takes:
`precision` compiles every model to compute in that type on the point's arch (a float
model's weights converted at compile time; a quantized model's float parts). A point's
label (`point_label`) is its arch spec followed by them."""

AREA: dict[str, float] = {
    "mac": 1.0,  # one MAC of a core's cube (M x K x N of them per core)
    "lane": 1.5,  # one f32 lane of a core's vector unit
    "sram_kib": 2.0,  # one KiB of a core's SRAM
    "dma_channel": 16.0,  # one DMA channel (descriptor queue and engine) of a core
    "event_slot": 0.25,  # one hardware event slot (shared)
    "dram_bw": 4.0,  # one byte per cycle of DRAM bandwidth (PHY and controller; shared)
}
"""Area proxy, in units of one cube MAC:

    area = cores x (mac x M x K x N + lane x vector_lanes + sram_kib x sram_bytes / 1024
                    + dma_channel x dma_channels) + event_slot x event_slots + dram_bw x dram_bw

The weights are a proxy, not a process node: they rank designs by the resources that
cost silicon. The default arch is 4 x (4096 + 96 + 1024 + 32) + 16 + 512 = 21,520."""

SEARCHES = ("auto", "grid", "optuna")


class SpecError(Exception):
    """A bad sweep spec: the message names the file and the key."""


@dataclass(frozen=True)
class Axis:
    """One swept parameter and its values, in order."""

    name: str
    values: tuple[Any, ...]


@dataclass
class DseSpec:
    """A parsed sweep (see the module docstring)."""

    models: list[str]
    base: str = "default"
    axes: list[Axis] = field(default_factory=list)
    search: str = "auto"
    budget: int = 60
    seed: int = 0
    numerics: bool = False
    out: str = "dse-results"
    area: dict[str, float] = field(default_factory=lambda: dict(AREA))
    options: dict[str, Any] = field(default_factory=dict)  # compile options (npu-default's)
    pipeline: str | None = None  # a pass pipeline instead of npu-default (plugin passes first)
    source: str = "<spec>"

    def size(self) -> int:
        n = 1
        for a in self.axes:
            n *= len(a.values)
        return n

    def grid(self) -> list[dict[str, Any]]:
        """Every point of the space (the cartesian product, in axis order)."""
        names = [a.name for a in self.axes]
        return [dict(zip(names, vals)) for vals in itertools.product(*(a.values for a in self.axes))]

    def uses_grid(self) -> bool:
        return self.search == "grid" or (self.search == "auto" and self.size() <= self.budget)


def point_spec(base: str, point: dict[str, Any]) -> str:
    """The `--arch` spec of a point: the base plus its overrides, canonical."""
    return arch_of_point(base, point).spec()


def arch_of_point(base: str, point: dict[str, Any]) -> Arch:
    """The arch of a point: the base with its arch parameters (not its `OPTION_AXES`)."""
    text = ",".join([base, *(f"{k}={fmt_value(v)}" for k, v in point.items() if k not in OPTION_AXES)])
    return parse_arch_spec(text)


def point_options(point: dict[str, Any]) -> dict[str, Any]:
    """The npu-default options a point sets (its `OPTION_AXES`)."""
    return {k: v for k, v in point.items() if k in OPTION_AXES}


def point_label(base: str, point: dict[str, Any]) -> str:
    """What names a point in the tables: its arch spec, then its options (`precision=bf16`)."""
    return " ".join([point_spec(base, point), *(f"{k}={v}" for k, v in point_options(point).items())])


def area(arch: Arch, coeff: dict[str, float] | None = None) -> float:
    """The area proxy of `arch` (AREA's formula)."""
    c = {**AREA, **(coeff or {})}
    per_core = (c["mac"] * arch.cube_macs + c["lane"] * arch.vector_lanes + c["sram_kib"] * arch.sram_bytes / 1024
                + c["dma_channel"] * arch.dma_channels)
    return arch.cores * per_core + c["event_slot"] * arch.event_slots + c["dram_bw"] * arch.dram_bw


def load_spec(path: str | Path) -> DseSpec:
    """Parse and check a sweep spec file (raises SpecError)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise SpecError(f"{p}: cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{p}: not valid TOML: {e}") from None
    return parse_spec(data, str(p))


_TOP = {"models", "base", "search", "budget", "seed", "numerics", "out", "space", "area", "options", "pipeline"}


def parse_spec(data: dict[str, Any], source: str = "<spec>") -> DseSpec:
    """Check a spec's table (as TOML loads it); raises SpecError naming `source` and the key."""
    def bad(key: str, what: str) -> SpecError:
        return SpecError(f"{source}: '{key}': {what}")

    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise bad(unknown[0], f"unknown key (the keys are {', '.join(sorted(_TOP))})")
    models = data.get("models")
    if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
        raise bad("models", "expected a non-empty list of model names or .onnx paths")
    spec = DseSpec(models=list(models), source=source)
    spec.base = _relative_chip(_typed(data, "base", str, spec.base, bad), source)
    try:
        parse_arch_spec(spec.base)
    except ArchError as e:
        raise bad("base", str(e)) from None
    spec.search = _typed(data, "search", str, spec.search, bad)
    if spec.search not in SEARCHES:
        raise bad("search", f"expected one of {', '.join(SEARCHES)}, got '{spec.search}'")
    spec.budget = _typed(data, "budget", int, spec.budget, bad)
    if spec.budget < 1:
        raise bad("budget", f"expected a positive number of points, got {spec.budget}")
    spec.seed = _typed(data, "seed", int, spec.seed, bad)
    spec.numerics = _typed(data, "numerics", bool, spec.numerics, bad)
    spec.out = _typed(data, "out", str, spec.out, bad)
    space = data.get("space", {})
    if not isinstance(space, dict):
        raise bad("space", "expected a table of arch parameters")
    spec.axes = [_axis(name, v, spec.base, bad) for name, v in space.items()]
    spec.area = _area(data.get("area", {}), bad)
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise bad("options", "expected a table of npu-default options (e.g. group_max_kernels = 8)")
    spec.options = dict(options)
    both = [a.name for a in spec.axes if a.name in OPTION_AXES and a.name in spec.options]
    if both:
        raise bad(f"space.{both[0]}", "also set in 'options': sweep it or fix it, not both")
    if "pipeline" in data:
        spec.pipeline = _typed(data, "pipeline", str, None, bad)
    return spec


def _relative_chip(base: str, source: str) -> str:
    """A chip file `base` (`chips/x.toml,k=v`) found beside the spec file when it is not
    found from the current directory."""
    first, _, rest = base.partition(",")
    path = Path(first)
    if first.endswith(".toml") and not path.is_absolute() and not path.exists():
        beside = Path(source).parent / path
        if beside.exists():
            return str(beside) + ("," + rest if rest else "")
    return base


def _typed(data: dict[str, Any], key: str, kind: type, default: Any, bad) -> Any:
    v = data.get(key, default)
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise bad(key, f"expected {kind.__name__}, got {v!r}")
    return v


def _axis(name: str, v: Any, base: str, bad) -> Axis:
    key = f"space.{name}"
    if name in OPTION_AXES:
        values = tuple(v) if isinstance(v, list) else (v,)
        allowed = OPTION_AXES[name]
        if not values or any(x not in allowed for x in values) or len(set(values)) != len(values):
            raise bad(key, f"expected distinct values among {', '.join(repr(a) for a in allowed)}, got {v!r}")
        return Axis(name, values)
    if name not in SWEPT:
        hint = "an arch parameter" if name not in PARAM_NAMES else "a parameter that changes cycles"
        raise bad(key, f"not {hint} (sweepable: {', '.join(SWEPT + tuple(OPTION_AXES))})")
    if isinstance(v, list):
        values = tuple(v)
    elif isinstance(v, dict):
        values = _range(v, key, bad)
    else:
        values = (v,)
    if not values:
        raise bad(key, "no values")
    checked = []
    for x in values:
        text = fmt_value(x) if isinstance(x, (int, str)) and not isinstance(x, bool) else None
        if text is None:
            want = ("names: " + ", ".join(f'"{n}"' for n in STRING_PARAMS[name]) if name in STRING_PARAMS
                    else f"integers{' or MxKxN strings' if name == 'cube' else ''}")
            raise bad(key, f"expected {want}, got {x!r}")
        try:
            checked.append(getattr(arch_of_point(base, {name: text}), name))  # ("512K" is 524288)
        except ArchError as e:
            raise bad(key, str(e)) from None
    if len(set(checked)) != len(checked):
        raise bad(key, "a value is listed twice")
    return Axis(name, tuple(fmt_value(x) if name == "cube" else x for x in checked))


def _range(v: dict[str, Any], key: str, bad) -> tuple[int, ...]:
    extra = sorted(set(v) - {"from", "to", "step", "scale"})
    if extra:
        raise bad(key, f"unknown range key '{extra[0]}' (a range has from, to, and step or scale = \"log2\")")
    lo, hi = v.get("from"), v.get("to")
    if not isinstance(lo, int) or not isinstance(hi, int) or lo < 1 or hi < lo:
        raise bad(key, f"a range needs integers 1 <= from <= to, got from={lo!r}, to={hi!r}")
    scale, step = v.get("scale"), v.get("step")
    if scale is not None:
        if scale != "log2" or step is not None:
            raise bad(key, "scale must be \"log2\" (doubling from 'from'), without a step")
        out, x = [], lo
        while x <= hi:
            out.append(x)
            x *= 2
        return tuple(out)
    step = 1 if step is None else step
    if not isinstance(step, int) or step < 1:
        raise bad(key, f"step must be a positive integer, got {step!r}")
    return tuple(range(lo, hi + 1, step))


def _area(v: Any, bad) -> dict[str, float]:
    if not isinstance(v, dict):
        raise bad("area", "expected a table of coefficients")
    out = dict(AREA)
    for k, x in v.items():
        if k not in AREA:
            raise bad(f"area.{k}", f"unknown coefficient (they are {', '.join(AREA)})")
        if not isinstance(x, (int, float)) or isinstance(x, bool) or x < 0:
            raise bad(f"area.{k}", f"expected a number >= 0, got {x!r}")
        out[k] = float(x)
    return out

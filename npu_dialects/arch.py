"""The parametric NPU: `Arch` (a plain frozen dataclass), its presets, the
`--arch` spec parser and the `#npu.arch<...>` attribute that carries it in IR.

Every pass and the simulator read the machine from the module attribute
`npu.arch`; `arch_of(module)` returns the `default` preset when it is absent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from difflib import get_close_matches
from math import ceil
from typing import Any

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Dialect, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer


class ArchError(ValueError):
    """A bad `--arch` spec or `#npu.arch` attribute (user error, exit 1/2); `hint` (a
    `hint: ...` line or None) says what would be accepted."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


MAX_VALUE = 1 << 62
"""The largest value of an arch parameter: sizes and offsets stay 64-bit integers (the
compiler itself takes `sram_bytes = 2**60` as unbounded)."""
LIMITS = {"cores": 1024, "dma_channels": 1024, "dma_latency": 1 << 32, "sync_latency": 1 << 32}
"""Smaller bounds: counts the simulator keeps state for each of (vector clocks per pair
of cores, a timeline per DMA channel), latencies summed into 64-bit cycle counts."""
DRAM_BYTES = 1 << 34
"""The device DRAM of every NPU of the family (16 GiB): a program whose weights,
activations, inputs and outputs need more does not compile (`npu-memplan`), and the
runtime's device heap has this size."""


@dataclass(frozen=True)
class Arch:
    """One NPU of the family. Field names are the names users see everywhere."""

    cores: int = 4
    cube: tuple[int, int, int] = (16, 16, 16)  # M x K x N MACs per cycle per core
    vector_lanes: int = 64  # f32 elements per cycle
    sram_bytes: int = 512 * 1024  # per core
    dram_bw: int = 128  # bytes per cycle, shared
    dma_latency: int = 200  # cycles per descriptor
    dma_channels: int = 2  # per core
    event_slots: int = 64
    sync_latency: int = 100  # cycles per cross-core event
    freq: int = 1_000_000_000  # Hz
    align: int = 64  # bytes

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            vals = v if isinstance(v, tuple) else (v,)
            if any(not isinstance(x, int) or x <= 0 for x in vals):
                raise ArchError(f"arch parameter '{f.name}' must be a positive integer, got {fmt_value(v)}")
            limit = LIMITS.get(f.name, MAX_VALUE)
            if any(x > limit for x in vals):
                raise ArchError(f"arch parameter '{f.name}' must be at most {limit}, got {fmt_value(v)}")
        if self.align & (self.align - 1):
            raise ArchError(f"arch parameter 'align' must be a power of two, got {self.align}")

    @property
    def cube_macs(self) -> int:
        m, k, n = self.cube
        return m * k * n

    # -- the cost of work on this machine: every cycle estimate (the compute ops the
    # simulator charges, the cost model, layer and strip group plans) is made of these

    def cube_cycles(self, m: int, k: int, n: float, batch: int = 1) -> int:
        """Cycles of `batch` independent [m, k] @ [k, n] products on one core's cube:
        each dimension is padded up to the cube's (`cm x ck x cn` MACs per cycle), so
        a 3 x 3 product costs as much as a 16 x 16 one on the default cube."""
        cm, ck, cn = self.cube
        return batch * ceil(m / cm) * ceil(k / ck) * ceil(n / cn)

    def vector_cycles(self, elements: int, cost: int = 1) -> int:
        """Cycles of `cost` vector passes over `elements` f32 values on one core."""
        return ceil(elements * cost / self.vector_lanes)

    def roofline_cycles(self, macs: int, dram_bytes: int) -> int:
        """The roofline bound: all cores' cubes busy, or DRAM streaming, whichever is longer."""
        return max(ceil(macs / (self.cores * self.cube_macs)), ceil(dram_bytes / self.dram_bw))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cube"] = fmt_value(self.cube)
        return d

    def spec(self) -> str:
        """Canonical spec string: `default` plus every parameter that differs."""
        base = PRESETS["default"]
        diffs = [f"{f.name}={fmt_value(getattr(self, f.name))}" for f in fields(self)
                 if getattr(self, f.name) != getattr(base, f.name)]
        return ",".join(["default", *diffs])


PRESETS: dict[str, Arch] = {
    "default": Arch(),
    "edge-small": Arch(cores=1, cube=(8, 8, 8), vector_lanes=16, sram_bytes=128 * 1024,
                       dram_bw=32, dma_channels=1, event_slots=16),
    "server": Arch(cores=8, cube=(32, 32, 32), vector_lanes=128, sram_bytes=2 * 1024 * 1024,
                   dram_bw=512),
}

PARAM_NAMES = tuple(f.name for f in fields(Arch))


def fmt_value(v: Any) -> str:
    return "x".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


def _parse_value(name: str, text: str) -> Any:
    try:
        if name == "cube":
            parts = tuple(int(p) for p in text.lower().split("x"))
            if len(parts) != 3:
                raise ValueError
            return parts
        return int(text)
    except ValueError:
        want = "MxKxN, e.g. 16x16x16" if name == "cube" else "an integer"
        raise ArchError(f"arch parameter '{name}': expected {want}, got '{text}'") from None


def with_overrides(arch: Arch, overrides: dict[str, str]) -> Arch:
    kw: dict[str, Any] = {}
    for k, v in overrides.items():
        if k not in PARAM_NAMES:
            near = get_close_matches(k, PARAM_NAMES, n=1)
            maybe = f"did you mean '{near[0]}'? " if near else ""
            raise ArchError(f"unknown arch parameter '{k}'", f"hint: {maybe}the parameters are {', '.join(PARAM_NAMES)}")
        kw[k] = _parse_value(k, v)
    return replace(arch, **kw)


def parse_arch_spec(spec: str) -> Arch:
    """`default`, `default,cores=1,dram_bw=256`, `edge-small,cube=8x8x8`."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        raise ArchError("empty arch spec")
    name, rest = parts[0], parts[1:]
    if "=" in name:
        name, rest = "default", parts
    if name not in PRESETS:
        raise ArchError(f"unknown arch preset '{name}'", f"hint: the presets are {', '.join(PRESETS)}, each "
                                                        "optionally followed by overrides: default,cores=1")
    overrides: dict[str, str] = {}
    for p in rest:
        if "=" not in p:
            raise ArchError(f"bad arch override '{p}': expected name=value")
        k, v = p.split("=", 1)
        overrides[k.strip()] = v.strip()
    return with_overrides(PRESETS[name], overrides)


@irdl_attr_definition
class ArchAttr(ParametrizedAttribute):
    """`#npu.arch<cores = 4, cube = 16x16x16, ...>`: the machine a module targets.

    Parameters not written take the `default` preset's value."""

    name = "npu.arch"
    spec: StringAttr  # canonical `k=v,...` text; the Arch object is derived from it

    @staticmethod
    def from_arch(arch: Arch) -> "ArchAttr":
        text = ",".join(f"{f.name}={fmt_value(getattr(arch, f.name))}" for f in fields(arch))
        return ArchAttr(StringAttr(text))

    @property
    def arch(self) -> Arch:
        return parse_arch_spec("default," + self.spec.data) if self.spec.data else PRESETS["default"]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[StringAttr]:
        items: list[str] = []
        seen: set[str] = set()
        parser.parse_punctuation("<")
        done = parser.parse_optional_punctuation(">") is not None
        while not done:
            pos = parser.pos
            key = parser.parse_identifier()
            if key not in PARAM_NAMES:
                parser.raise_error(f"unknown npu.arch parameter '{key}'", pos)
            if key in seen:
                parser.raise_error(f"npu.arch parameter '{key}' is given twice", pos)
            seen.add(key)
            parser.parse_punctuation("=")
            if key == "cube":
                m = parser.parse_integer(allow_boolean=False, allow_negative=False)
                rest = parser.parse_optional_identifier() or ""  # lexed as `x16x16`
                value = f"{m}{rest}"
            else:
                value = str(parser.parse_integer(allow_boolean=False, allow_negative=True))
            items.append(f"{key}={value}")
            try:
                with_overrides(PRESETS["default"], {key: value})
            except ArchError as e:
                parser.raise_error(str(e), pos)
            done = parser.parse_optional_punctuation(",") is None
        if items:
            parser.parse_punctuation(">")
        text = ",".join(items)
        try:
            parse_arch_spec("default," + text)
        except ArchError as e:
            parser.raise_error(str(e))
        return [StringAttr(text)]

    def print_parameters(self, printer: Printer) -> None:
        arch = self.arch
        printer.print_string(
            "<" + ", ".join(f"{f.name} = {fmt_value(getattr(arch, f.name))}" for f in fields(arch)) + ">")


def arch_of(module: ModuleOp) -> Arch:
    """The machine a module targets (`default` when it names none)."""
    attr = module.attributes.get("npu.arch")
    return attr.arch if isinstance(attr, ArchAttr) else PRESETS["default"]


def set_arch(module: ModuleOp, arch: Arch) -> None:
    module.attributes["npu.arch"] = ArchAttr.from_arch(arch)


NPU = Dialect("npu", [], [ArchAttr])

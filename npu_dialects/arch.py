"""The parametric NPU: `Arch` (a plain frozen dataclass), chip files and the presets
made of them, the `--arch` spec parser and the `#npu.arch<...>` attribute that
carries the machine in IR.

A chip is a TOML file (`npu_dialects/chips/*.toml` are the presets): the parameter
names as keys, optionally `name`, `description` and `base` (a preset or another
chip file `NAME.toml`, relative to this one; default `default`) whose values it
overrides. `--arch path/chip.toml,sram_bytes=1M` reads one and applies overrides
after it. A chip file is read only when it is a regular file of at most
`MAX_CHIP_BYTES` (`read_regular_file`: never a device, FIFO or stream), and a chain of
bases is at most `MAX_CHIP_DEPTH` files long. `parse_arch_params` reads the fully
resolved `k=v,...` form (`arch_params`) that data files carry: it never opens a file.

Every pass and the simulator read the machine from the module attribute
`npu.arch`; `arch_of(module)` returns the `default` preset when it is absent.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from difflib import get_close_matches
from fractions import Fraction
from functools import cached_property
from math import ceil
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from npu_dialects import dtypes, special
from npu_dialects.files import NotRegularFileError, read_regular_file

DType = str | Attribute | None
"""An element type for the cost of work: a name (`f32`, `i8`, ...), the type itself, or
None (f32)."""


def type_bits(dtype: DType) -> int:
    """Bits of one element of `dtype` (32 for f32, i32 and None; 16 for f16/bf16; 8 for
    i8/ui8), what the cube and vector rates depend on."""
    if dtype is None:
        return 32
    name = dtype if isinstance(dtype, str) else dtypes.type_name(dtype)
    entry = dtypes.ELEMENT_TYPES.get(name or "")
    if entry is None:
        raise ArchError(f"no cube or vector rate for element type {dtype}")
    return entry[1] * 8


def value_type(v: SSAValue | Attribute) -> str:
    """The name of the element type of a tensor/memref value or type (f32 for others)."""
    return widest_type((v,))


def widest_type(values: Iterable[SSAValue | Attribute]) -> str:
    """The name of the widest element type among tensor/memref `values` (or their types):
    what a vector op is priced by. f32 when there is none."""
    best, bits = "f32", 0
    for v in values:
        t = v.type if isinstance(v, SSAValue) else v
        if isinstance(t, TensorType | MemRefType):
            name = dtypes.type_name(t.element_type)
            if name is not None and type_bits(name) > bits:
                best, bits = name, type_bits(name)
    return best


class ArchError(ValueError):
    """A bad `--arch` spec or `#npu.arch` attribute (user error, exit 1/2); `hint` (a
    `hint: ...` line or None) says what would be accepted."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


MAX_VALUE = 1 << 62
"""The largest value of an arch parameter: sizes and offsets stay 64-bit integers (the
compiler itself takes `sram_bytes = 2**60` as unbounded)."""
STRING_PARAMS: dict[str, tuple[str, ...]] = {"requant": ("float", "fixed"), "requant_unit": ("cube", "vector"),
                                             "bias_unit": ("cube", "vector"), "units": ("concurrent", "serial")}
"""The parameters that are names, and the names each takes."""
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
    cube_i8: int = 2  # int8 MACs per cycle, as a multiple of the f16/bf16 ones (the cube's K widens)
    cube_f32_passes: int = 1  # passes of the cube an f32 product takes (1: as fast as f16)
    vector_f16: int = 2  # 16-bit elements per cycle, as a multiple of vector_lanes (f32 ones)
    vector_i8: int = 4  # 8-bit elements per cycle, as a multiple of vector_lanes
    requant: str = "float"  # the requantization unit: float (a float multiply) or fixed (multiplier, shift)
    requant_unit: str = "cube"  # where a product's requantize runs: the cube's output stage, or the vector unit
    bias_unit: str = "cube"  # where a product's per-channel bias add runs: the cube's output stage, or the vector unit
    # a core's cube, vector unit and DMA issue run their own queues at once, ordered by
    # `npu_compute.fence` (concurrent), or one compute op at a time (serial)
    units: str = "concurrent"
    flag_latency: int = 4  # cycles a fence adds when it makes a unit wait for another
    # how the vector unit evaluates each special function (`npu_dialects/special.py`):
    # exact, tableN or polyD, optionally per type (`f16:table256+exact`)
    fn_exp: str = "exact"
    fn_tanh: str = "exact"
    fn_erf: str = "exact"
    fn_sigmoid: str = "exact"
    fn_reciprocal: str = "exact"
    fn_rsqrt: str = "exact"

    def cube_output_cycles(self, elements: int) -> int:
        """Cycles the cube's output stage takes to requantize `elements` accumulators as
        it writes them out (`requant_unit = cube`, as Ascend's FixPipe), or to add their
        per-channel bias (`bias_unit = cube`, as Ethos-U's output stage or Ascend's bias
        table): one M x N block of the cube a cycle."""
        m, _, n = self.cube
        return ceil(elements / (m * n))

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in special.PARAMS:
                _check_special(f.name, v)
                continue
            if f.name in STRING_PARAMS:
                if v not in STRING_PARAMS[f.name]:
                    raise ArchError(f"arch parameter '{f.name}' must be one of "
                                    f"{', '.join(STRING_PARAMS[f.name])}, got {fmt_value(v)!r}")
                continue
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
    # simulator charges, the cost model, layer and strip group plans) is made of these,
    # each for the element type the work is done in (`dtype`: a type name or attribute)

    def cube_cycles(self, m: int, k: int, n: float, batch: int = 1, dtype: DType = "f32") -> int:
        """Cycles of `batch` independent [m, k] @ [k, n] products on one core's cube with
        inputs of `dtype`: each dimension is padded up to the cube's (`cm x ck x cn` MACs
        per cycle for f16/bf16), so a 3 x 3 product costs as much as a 16 x 16 one on the
        default cube. int8 inputs widen K `cube_i8` times (as a 16x32x16 int8 cube); an
        f32 product takes `cube_f32_passes` passes."""
        cm, ck, cn = self.cube
        bits = type_bits(dtype)
        ck *= self.cube_i8 if bits == 8 else 1
        cycles = batch * ceil(m / cm) * ceil(k / ck) * ceil(n / cn)
        return cycles * self.cube_f32_passes if bits == 32 else cycles

    def vector_cycles(self, elements: int, cost: int = 1, dtype: DType = "f32") -> int:
        """Cycles of `cost` vector passes over `elements` values of `dtype` (the widest
        type the op reads or writes) on one core: `vector_lanes` f32 or i32 values per
        cycle, `vector_f16` times as many 16-bit and `vector_i8` times as many 8-bit ones."""
        return ceil(elements * cost / self.vector_rate(dtype))

    def vector_rate(self, dtype: DType = "f32") -> int:
        """Elements of `dtype` one core's vector unit does per cycle."""
        bits = type_bits(dtype)
        return self.vector_lanes * (self.vector_i8 if bits == 8 else self.vector_f16 if bits == 16 else 1)

    def cube_rate(self, dtype: DType = "f32") -> Fraction:
        """MACs with inputs of `dtype` one core's cube does per cycle (unpadded)."""
        bits = type_bits(dtype)
        if bits == 8:
            return Fraction(self.cube_macs * self.cube_i8)
        return Fraction(self.cube_macs, self.cube_f32_passes if bits == 32 else 1)

    def special_specs(self) -> dict[str, str]:
        """Special function -> how the vector unit evaluates it (its `fn_*` value)."""
        return {fn: getattr(self, p) for p, fn in special.PARAMS.items()}

    @cached_property
    def approximates(self) -> bool:
        """Whether any special function is not evaluated exactly (asked by every cost
        estimate: computed once per arch)."""
        return any(getattr(self, p) != "exact" for p in special.PARAMS)

    def special_passes(self, functions: Iterable[str], dtype: DType = "f32") -> int:
        """Vector passes per element that evaluating `functions` costs beyond one pass
        each (0 when the arch evaluates them exactly, at the vector rate)."""
        if not self.approximates:
            return 0
        name = dtype if isinstance(dtype, str) else dtypes.type_name(dtype) if dtype is not None else "f32"
        return special.passes(self.special_specs(), tuple(functions), name or "f32")

    def special_evaluator(self, dtype: str) -> special.Evaluator | None:
        """How the simulator evaluates special functions in tiles of `dtype` (None: exactly)."""
        if not self.approximates:
            return None
        return special.evaluator(self.special_specs(), dtype)

    def roofline_cycles(self, macs: int | Mapping[str, int], dram_bytes: int) -> int:
        """The roofline bound: all cores' cubes busy, or DRAM streaming, whichever is longer.
        `macs` is a count of f32 MACs or the MACs by input type name (`{"i8": ..., ...}`),
        each at its type's rate (`cube_rate`)."""
        by_type = {"f32": macs} if isinstance(macs, int) else macs
        cube = sum((Fraction(v) / self.cube_rate(t) for t, v in by_type.items()), Fraction(0))
        return max(ceil(cube / self.cores), ceil(dram_bytes / self.dram_bw))

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


PRESETS: dict[str, Arch] = {}
"""The built-in presets by name: `npu_dialects/chips/NAME.toml` (filled below)."""
CHIPS_DIR = Path(__file__).resolve().parent / "chips"
"""Where the built-in presets live (package data)."""

PARAM_NAMES = tuple(f.name for f in fields(Arch))


def fmt_value(v: Any) -> str:
    return "x".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


BYTE_PARAMS = ("sram_bytes", "align")
"""Parameters in bytes: they may also be written with a K, M or G suffix (`512K`, 1024-based)."""
_SIZE = re.compile(r"(\d[\d_]*)\s*(?:([KMG])(?:i?B)?)?", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """`524288`, `512K`, `512KiB`, `2M`, `1G` -> bytes (K = 1024); None if not a size."""
    m = _SIZE.fullmatch(text.strip())
    if m is None:
        return None
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[(m.group(2) or "").upper()]
    return int(m.group(1).replace("_", "")) * scale


def _check_special(name: str, text: Any) -> str:
    """A `fn_*` value, checked (ArchError naming the parameter)."""
    if not isinstance(text, str):
        raise ArchError(f"arch parameter '{name}': expected exact, tableN or polyD, got {_describe(text)}")
    try:
        special.parse_spec(text)
    except ValueError as e:
        raise ArchError(f"arch parameter '{name}': {e}",
                        "hint: e.g. exact, table256, poly5, or per type f16:table256+exact") from None
    return text


def _parse_value(name: str, text: str) -> Any:
    if name in special.PARAMS:
        return _check_special(name, text)
    if name in STRING_PARAMS:
        if text not in STRING_PARAMS[name]:
            raise ArchError(f"arch parameter '{name}': expected one of {', '.join(STRING_PARAMS[name])}, "
                            f"got '{text}'")
        return text
    try:
        if name == "cube":
            parts = tuple(int(p) for p in text.lower().split("x"))
            if len(parts) != 3:
                raise ValueError
            return parts
        size = parse_size(text) if name in BYTE_PARAMS else None
        return size if size is not None else int(text)
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


def is_chip_path(text: str) -> bool:
    """Whether the first element of a spec names a chip file rather than a preset."""
    return text.endswith(".toml") or ("=" not in text and ("/" in text or os.sep in text))


def parse_arch_spec(spec: str) -> Arch:
    """`default`, `default,cores=1,dram_bw=256`, `edge-small,cube=8x8x8`,
    `chips/mine.toml,sram_bytes=1M` (a chip file, then overrides)."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        raise ArchError("empty arch spec")
    name, rest = parts[0], parts[1:]
    if is_chip_path(name):
        base = load_chip(name)
    else:
        if "=" in name:
            name, rest = "default", parts
        base = preset(name)
    overrides: dict[str, str] = {}
    for p in rest:
        if "=" not in p:
            raise ArchError(f"bad arch override '{p}': expected name=value")
        k, v = p.split("=", 1)
        overrides[k.strip()] = v.strip()
    return with_overrides(base, overrides)


def arch_params(arch: Arch) -> str:
    """`arch` fully resolved, every parameter: `cores=4,cube=16x16x16,...` (what an
    executable's header carries: data, independent of the presets and of any file)."""
    return ",".join(f"{f.name}={fmt_value(getattr(arch, f.name))}" for f in fields(arch))


def parse_arch_params(text: str) -> Arch:
    """The machine of `arch_params` text: every parameter exactly once as `k=v`, nothing
    else (no preset, no chip file: nothing is opened). Raises ArchError."""
    values: dict[str, str] = {}
    for part in text.split(","):
        k, eq, v = part.partition("=")
        if not eq or k not in PARAM_NAMES or k in values:
            what = "not name=value" if not eq else "unknown" if k not in PARAM_NAMES else "repeated"
            raise ArchError(f"bad resolved arch: '{part[:50]}' is {what}")
        values[k] = v
    missing = [n for n in PARAM_NAMES if n not in values]
    if missing:
        raise ArchError(f"bad resolved arch: no '{missing[0]}'")
    return Arch(**{k: _parse_value(k, v) for k, v in values.items()})


def _find_preset(name: str) -> tuple[Arch | None, str]:
    """The preset `name`, built in or a plugin's; else None and a `did you mean` hint part."""
    if name not in PRESETS:
        _plugin_presets()
    if name in PRESETS:
        return PRESETS[name], ""
    near = get_close_matches(name, list(PRESETS), n=1)
    return None, f"did you mean '{near[0]}'? " if near else ""


def preset(name: str) -> Arch:
    """The preset `name`, built in or a plugin's (ArchError naming the presets if there is none)."""
    arch, maybe = _find_preset(name)
    if arch is not None:
        return arch
    raise ArchError(f"unknown arch preset '{name}'",
                    f"hint: {maybe}the presets are {', '.join(PRESETS)}, or a chip file (path/chip.toml), each "
                    "optionally followed by overrides: default,cores=1")


def chip_toml(arch: Arch) -> str:
    """`arch` as a chip file: the canonical spec as a comment, then every parameter."""
    lines = [f"# {arch.spec()}"]
    for f in fields(arch):
        v = getattr(arch, f.name)
        lines.append(f'{f.name} = "{fmt_value(v)}"' if isinstance(v, tuple | str) else f"{f.name} = {v}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- chip files

CHIP_KEYS = ("name", "description", "base")
"""The keys of a chip file besides the parameter names."""
MAX_CHIP_BYTES = 1 << 20
"""The largest chip file read (the presets are under 1 KB)."""
MAX_CHIP_DEPTH = 16
"""The longest chain of chip files through `base`."""


def load_chip(path: str | os.PathLike[str]) -> Arch:
    """The machine the chip file `path` describes (its `base` resolved); every problem
    is an ArchError `PATH: 'key': why`, naming the allowed range or type."""
    return _load_chip(str(path), ())


def _load_chip(shown: str, chain: tuple[tuple[Path, str], ...]) -> Arch:
    real = Path(shown).resolve()
    if any(r == real for r, _ in chain):
        cycle = " -> ".join([*(s for _, s in chain), shown])
        raise ArchError(f"{chain[-1][1]}: 'base': a cycle of chip files: {cycle}")
    if len(chain) >= MAX_CHIP_DEPTH:
        raise ArchError(f"{chain[-1][1]}: 'base': a chain of more than {MAX_CHIP_DEPTH} chip files")
    table = _read_toml(shown)
    for key in table:
        if key not in PARAM_NAMES and key not in CHIP_KEYS:
            known = (*CHIP_KEYS, *PARAM_NAMES)
            near = get_close_matches(key, known, n=1)
            maybe = f"did you mean '{near[0]}'? " if near else ""
            raise ArchError(f"{shown}: unknown key '{key}'", f"hint: {maybe}the keys are {', '.join(known)}")
    for key in CHIP_KEYS:
        if key in table and not isinstance(table[key], str):
            raise ArchError(f"{shown}: '{key}': expected a string, got {_describe(table[key])}")
    params = {k: _chip_value(shown, k, v) for k, v in table.items() if k in PARAM_NAMES}
    chain = (*chain, (real, shown))
    if "base" in table:
        base = _chip_base(shown, table["base"], chain)
    elif real == (CHIPS_DIR / "default.toml").resolve():  # the root: it lists every parameter
        missing = [n for n in PARAM_NAMES if n not in params]
        if missing:
            raise ArchError(f"{shown}: the root preset misses {', '.join(missing)}")
        return Arch(**params)
    else:
        base = preset("default")
    return replace(base, **params)


def _read_toml(shown: str) -> dict[str, Any]:
    try:
        text = read_regular_file(shown, MAX_CHIP_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise ArchError(f"{shown}: no such chip file",
                        "hint: a chip file is found from the current directory, a 'base' file from "
                        "the chip file that names it") from None
    except NotRegularFileError as e:
        raise ArchError(f"{shown}: not a chip file: {e.strerror}") from None
    except OSError as e:
        raise ArchError(f"{shown}: cannot read the chip file: {e.strerror or e}") from None
    except ValueError as e:  # (a UnicodeDecodeError too)
        why = f"not UTF-8 text (byte {e.start})" if isinstance(e, UnicodeDecodeError) else str(e)
        raise ArchError(f"{shown}: not a chip file: {why}") from None
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ArchError(f"{shown}: TOML nested too deeply") from None
    except tomllib.TOMLDecodeError as e:
        m = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", str(e))
        where, why = (f"{shown}:{m.group(2)}:{m.group(3)}", m.group(1)) if m else (shown, str(e))
        raise ArchError(f"{where}: TOML syntax error: {why[:1].lower() + why[1:]}") from None


def _chip_base(shown: str, base: str, chain: tuple[tuple[Path, str], ...]) -> Arch:
    """A preset, or a chip file `NAME.toml` relative to the file naming it (any other
    path is refused before it is opened)."""
    if not is_chip_path(base):
        arch, maybe = _find_preset(base)
        if arch is not None:
            return arch
        raise ArchError(f"{shown}: 'base': unknown arch preset '{base}'",
                        f"hint: {maybe}a base is a preset ({', '.join(PRESETS)}) or a chip file, "
                        "relative to this one (other.toml)")
    if not base.endswith(".toml") or "\0" in base:
        raise ArchError(f"{shown}: 'base': '{base[:200]}' is neither a preset nor a chip file (NAME.toml)",
                        f"hint: a base is a preset ({', '.join(PRESETS)}) or a chip file, relative to this one "
                        "(other.toml)")
    return _load_chip(os.path.normpath(os.path.join(os.path.dirname(shown), base)), chain)


def _chip_value(shown: str, name: str, v: Any) -> Any:
    """A chip file's value of parameter `name`, checked against its type and range."""
    limit = LIMITS.get(name, MAX_VALUE)
    if name in special.PARAMS:
        try:
            return _check_special(name, v)
        except ArchError as e:
            raise ArchError(f"{shown}: {e}", e.hint) from None
    if name in STRING_PARAMS:
        if v not in STRING_PARAMS[name]:
            raise ArchError(f"{shown}: '{name}': expected one of "
                            f"{', '.join(_toml(x) for x in STRING_PARAMS[name])}, got {_describe(v)}")
        return v
    if name == "cube":
        if isinstance(v, str) and re.fullmatch(r"\d+x\d+x\d+", v.strip().lower()):
            v = [int(x) for x in v.strip().lower().split("x")]
        if not (isinstance(v, list) and len(v) == 3 and all(_is_int(x) for x in v)):
            raise ArchError(f"{shown}: 'cube': expected \"MxKxN\" or [M, K, N] (integers), got {_describe(v)}")
        if any(not 1 <= x <= limit for x in v):
            raise ArchError(f"{shown}: 'cube': each of M, K, N must be between 1 and {limit}, got {_toml(v)}")
        return tuple(v)
    size = parse_size(v) if name in BYTE_PARAMS and isinstance(v, str) else None
    v = v if size is None else size
    if not isinstance(v, int) or isinstance(v, bool):
        want = "an integer or a size such as \"512K\"" if name in BYTE_PARAMS else "an integer"
        raise ArchError(f"{shown}: '{name}': expected {want}, got {_describe(v)}")
    if not 1 <= v <= limit:
        raise ArchError(f"{shown}: '{name}': must be between 1 and {limit}, got {v}")
    if name == "align" and v & (v - 1):
        raise ArchError(f"{shown}: 'align': must be a power of two, got {v}")
    return v


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return str(v)


def _describe(v: Any) -> str:
    """`the string "4"`, `the float 4.0`, `a table`: what a TOML value is, for errors."""
    if isinstance(v, dict):
        return "a table"
    kind = {bool: "boolean", str: "string", float: "float", list: "array", int: "integer"}.get(type(v), "value")
    return f"the {kind} {_toml(v)}"


_PLUGINS_LOADED: list[bool] = []


def _plugin_presets() -> None:
    """Add the presets of installed plugins to PRESETS, once, when a name is not found:
    entry point group `npu_compiler.chips` (`npu_dialects/plugins.py`), a chip file or a
    folder of them, each a preset named by its file stem."""
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED.append(True)
    from npu_dialects.plugins import called
    for plugin, where in called("npu_compiler.chips"):
        path = Path(where)
        for file in sorted(path.glob("*.toml")) if path.is_dir() else [path]:
            if file.stem in PRESETS:
                raise ArchError(f"{file}: plugin '{plugin}' names a chip '{file.stem}', the name of another preset")
            PRESETS[file.stem] = load_chip(file)


def _builtin_presets() -> dict[str, Arch]:
    """Every `chips/*.toml` by its stem, `default` first."""
    names = sorted((p.stem for p in CHIPS_DIR.glob("*.toml")), key=lambda n: (n != "default", n))
    for name in names:
        PRESETS[name] = load_chip(CHIPS_DIR / f"{name}.toml")
    return PRESETS


_builtin_presets()


@irdl_attr_definition
class ArchAttr(ParametrizedAttribute):
    """`#npu.arch<cores = 4, cube = 16x16x16, ...>`: the machine a module targets.

    Parameters not written take the `default` preset's value."""

    name = "npu.arch"
    spec: StringAttr  # canonical `k=v,...` text; the Arch object is derived from it

    @staticmethod
    def from_arch(arch: Arch) -> "ArchAttr":
        return ArchAttr(StringAttr(arch_params(arch)))

    @property
    def arch(self) -> Arch:
        """The machine: the `default` preset with the attribute's `k=v` overrides (never a file)."""
        if not self.spec.data:
            return PRESETS["default"]
        pairs = [p.split("=", 1) for p in self.spec.data.split(",") if p.strip()]
        if any(len(kv) != 2 for kv in pairs):
            raise ArchError(f"bad npu.arch parameters '{self.spec.data[:200]}': expected name=value")
        return with_overrides(PRESETS["default"], {k.strip(): v.strip() for k, v in pairs})

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
            elif key in special.PARAMS:
                value = parser.parse_optional_identifier() or parser.parse_optional_str_literal()
                if value is None:
                    parser.raise_error(f"npu.arch parameter '{key}' expects exact, tableN or polyD "
                                       "(a string for a per-type value)", pos)
            elif key in STRING_PARAMS:
                value = parser.parse_optional_identifier() or parser.parse_optional_str_literal()
                if value is None:
                    parser.raise_error(f"npu.arch parameter '{key}' expects one of "
                                       f"{', '.join(STRING_PARAMS[key])}", pos)
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
            "<" + ", ".join(f"{f.name} = {_attr_value(getattr(arch, f.name))}" for f in fields(arch)) + ">")


def _attr_value(v: Any) -> str:
    """A parameter's value in `#npu.arch<...>`: a string that is not an identifier quoted."""
    text = fmt_value(v)
    return text if not isinstance(v, str) or re.fullmatch(r"[A-Za-z_][\w.]*", text) else f'"{text}"'


def arch_of(module: ModuleOp) -> Arch:
    """The machine a module targets (`default` when it names none)."""
    attr = module.attributes.get("npu.arch")
    return attr.arch if isinstance(attr, ArchAttr) else PRESETS["default"]


def set_arch(module: ModuleOp, arch: Arch) -> None:
    module.attributes["npu.arch"] = ArchAttr.from_arch(arch)


NPU = Dialect("npu", [], [ArchAttr])

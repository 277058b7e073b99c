"""Chips as data (issue 20 item 3): `--arch path/chip.toml[,k=v]`, the built-in presets
as chip files, every chip-file error naming the file, the key and what is allowed,
`npu-opt --print-arch` (its output is a chip file of the same machine), and a run
whose report names the chip's parameters."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from npu_dialects.arch import CHIPS_DIR, PRESETS, Arch, ArchError, chip_toml, load_chip, parse_arch_spec

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "tests" / "models" / "lenet.onnx"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_presets_are_todays_values() -> None:
    """The values the presets had in code before they became chip files, written out."""
    assert PRESETS["default"] == Arch(cores=4, cube=(16, 16, 16), vector_lanes=64, sram_bytes=524288, dram_bw=128,
                                      dma_latency=200, dma_channels=2, event_slots=64, sync_latency=100,
                                      freq=1000000000, align=64)
    assert PRESETS["edge-small"] == Arch(cores=1, cube=(8, 8, 8), vector_lanes=16, sram_bytes=131072, dram_bw=32,
                                         dma_latency=200, dma_channels=1, event_slots=16, sync_latency=100,
                                         freq=1000000000, align=64)
    assert PRESETS["server"] == Arch(cores=8, cube=(32, 32, 32), vector_lanes=128, sram_bytes=2097152, dram_bw=512,
                                     dma_latency=200, dma_channels=2, event_slots=64, sync_latency=100,
                                     freq=1000000000, align=64)
    assert list(PRESETS) == ["default", "edge-small", "lut", "realistic", "server"]
    assert PRESETS["realistic"] == Arch(cube_f32_passes=4, requant="fixed", bias_unit="cube")
    assert PRESETS["lut"] == Arch(**{p: "table256" for p in ("fn_exp", "fn_tanh", "fn_erf", "fn_sigmoid",
                                                               "fn_reciprocal", "fn_rsqrt")})
    assert PRESETS["default"] == Arch()  # (the dataclass defaults agree with default.toml)
    assert parse_arch_spec("edge-small,cores=2") == Arch(**{**PRESETS["edge-small"].__dict__, "cores": 2})


def test_presets_are_package_data() -> None:
    """The chip files ship with the package: declared in pyproject.toml and found where
    the installed `npu_dialects` is."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "chips/*.toml" in pyproject["tool"]["setuptools"]["package-data"]["npu_dialects"]
    assert sorted(p.name for p in CHIPS_DIR.glob("*.toml")) == ["default.toml", "edge-small.toml", "lut.toml",
                                                                 "realistic.toml", "server.toml"]
    out = subprocess.run(["python", "-c", "from npu_dialects.arch import CHIPS_DIR; print(CHIPS_DIR)"],
                         capture_output=True, text=True, cwd="/", check=True).stdout.strip()
    assert Path(out, "default.toml").is_file()


def test_chip_file_with_overrides_and_sizes(tmp_path: Path) -> None:
    chip = write(tmp_path / "chip.toml", 'name = "mine"\ndescription = "a test chip"\n'
                                         'cores = 2\ncube = [8, 16, 32]\nsram_bytes = "2M"\nalign = "128"\n')
    a = parse_arch_spec(str(chip))
    assert (a.cores, a.cube, a.sram_bytes, a.align) == (2, (8, 16, 32), 2 << 20, 128)
    assert a.dram_bw == PRESETS["default"].dram_bw  # (no base: the default preset)
    b = parse_arch_spec(f"{chip},sram_bytes=1048576,cores=1")
    assert (b.cores, b.sram_bytes, b.cube) == (1, 1 << 20, (8, 16, 32))
    assert parse_arch_spec(f"{chip},sram_bytes=512K").sram_bytes == 512 * 1024  # (sizes in overrides too)
    assert parse_arch_spec(f"{chip},cube=4x4x4").cube == (4, 4, 4)


def test_base_inheritance(tmp_path: Path) -> None:
    write(tmp_path / "family" / "big.toml", 'base = "server"\nsram_bytes = "4M"\n')
    write(tmp_path / "family" / "sub" / "bigger.toml", 'base = "../big.toml"\ncores = 16\n')
    a = load_chip(tmp_path / "family" / "sub" / "bigger.toml")
    assert a == Arch(**{**PRESETS["server"].__dict__, "sram_bytes": 4 << 20, "cores": 16})
    # a relative base is found from the file that names it, not from the current directory
    write(tmp_path / "edge.toml", 'base = "edge-small"\n')
    assert load_chip(tmp_path / "edge.toml") == PRESETS["edge-small"]


def test_round_trip_through_print_arch(tmp_path: Path) -> None:
    chip = write(tmp_path / "chip.toml", 'base = "edge-small"\ncube = "8x16x32"\nsram_bytes = "1M"\n')
    spec = f"{chip},dma_latency=300"
    p = subprocess.run(["npu-opt", "--print-arch", spec], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    arch = parse_arch_spec(spec)
    assert p.stdout == chip_toml(arch)
    lines = p.stdout.splitlines()
    assert lines[0] == f"# {arch.spec()}" and parse_arch_spec(arch.spec()) == arch
    assert [ln.split(" = ")[0] for ln in lines[1:]] == list(Arch.__dataclass_fields__)
    printed = write(tmp_path / "printed.toml", p.stdout)
    assert load_chip(printed) == arch
    for preset in PRESETS.values():
        assert load_chip(write(tmp_path / "p.toml", chip_toml(preset))) == preset


def test_print_arch_bad_spec_exits_2() -> None:
    p = subprocess.run(["npu-opt", "--print-arch", "default,cores=0"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines()[0] == ("error: bad --print-arch 'default,cores=0': "
                                        "arch parameter 'cores' must be a positive integer, got 0")


ERRORS = [  # (file name, text, the message after "PATH: ", a hint or None)
    ("zero.toml", "sram_bytes = 0\n", "'sram_bytes': must be between 1 and 4611686018427387904, got 0", None),
    ("cores.toml", "cores = 2000\n", "'cores': must be between 1 and 1024, got 2000", None),
    ("cube0.toml", 'cube = "8x0x8"\n', "'cube': each of M, K, N must be between 1 and 4611686018427387904, "
                                       "got [8, 0, 8]", None),
    ("align.toml", "align = 48\n", "'align': must be a power of two, got 48", None),
    ("typo.toml", "sram_byte = 5\n", "unknown key 'sram_byte'", "hint: did you mean 'sram_bytes'? the keys are "
                                                                "name, description, base, cores, cube"),
    ("str.toml", 'cores = "4"\n', "'cores': expected an integer, got the string \"4\"", None),
    ("float.toml", "freq = 1e9\n", "'freq': expected an integer, got the float 1000000000.0", None),
    ("bool.toml", "cores = true\n", "'cores': expected an integer, got the boolean true", None),
    ("size.toml", 'sram_bytes = "lots"\n', "'sram_bytes': expected an integer or a size such as \"512K\", "
                                           "got the string \"lots\"", None),
    ("cube.toml", 'cube = "8x8"\n', "'cube': expected \"MxKxN\" or [M, K, N] (integers), got the string \"8x8\"",
     None),
    ("table.toml", "[cores]\nn = 1\n", "'cores': expected an integer, got a table", None),
    ("name.toml", "name = 3\n", "'name': expected a string, got the integer 3", None),
    ("base.toml", 'base = "edge-smal"\n', "'base': unknown arch preset 'edge-smal'",
     "hint: did you mean 'edge-small'? a base is a preset"),
]


@pytest.mark.parametrize("name,text,message,hint", ERRORS, ids=[e[0] for e in ERRORS])
def test_chip_errors(tmp_path: Path, name: str, text: str, message: str, hint: str | None) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(ArchError) as e:
        parse_arch_spec(f"{path},cores=1")
    assert str(e.value) == f"{path}: {message}"
    if hint is not None:
        assert e.value.hint is not None and e.value.hint.startswith(hint), e.value.hint


def test_syntax_error_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "syntax.toml", "cores = 4\nsram_bytes =\n")
    with pytest.raises(ArchError, match=f"^{path}:2:13: TOML syntax error: invalid value$"):
        parse_arch_spec(str(path))


def test_missing_file_and_base_cycle(tmp_path: Path) -> None:
    with pytest.raises(ArchError, match=f"^{tmp_path}/nope.toml: no such chip file$"):
        parse_arch_spec(f"{tmp_path}/nope.toml")
    write(tmp_path / "a.toml", 'base = "b.toml"\n')
    write(tmp_path / "b.toml", 'base = "./a.toml"\n')
    with pytest.raises(ArchError) as e:
        load_chip(tmp_path / "a.toml")
    assert str(e.value) == (f"{tmp_path}/b.toml: 'base': a cycle of chip files: "
                            f"{tmp_path}/a.toml -> {tmp_path}/b.toml -> {tmp_path}/a.toml")
    write(tmp_path / "self.toml", 'base = "self.toml"\n')
    with pytest.raises(ArchError, match="a cycle of chip files"):
        load_chip(tmp_path / "self.toml")
    write(tmp_path / "gone.toml", 'base = "sub/gone.toml"\n')
    with pytest.raises(ArchError, match=f"^{tmp_path}/sub/gone.toml: no such chip file$"):
        load_chip(tmp_path / "gone.toml")


def test_run_reports_the_chip(tmp_path: Path) -> None:
    """`npu-run MODEL --arch chip.toml --timing-only`: the report's `arch` is the chip's;
    an edited chip file is a new arch for the compile cache (same name, other contents)."""
    chip = write(tmp_path / "chip.toml", 'base = "edge-small"\ncores = 2\nsram_bytes = "256K"\ndram_bw = 64\n')

    def run(report: str) -> dict:
        p = subprocess.run(["npu-run", str(LENET), "--arch", f"{chip},dma_latency=150", "--timing-only",
                            "--report", report, "--cache-dir", str(tmp_path / "cache")],
                           capture_output=True, text=True, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        return json.loads((tmp_path / report).read_text())["arch"]

    assert run("r1.json") == {"cores": 2, "cube": "8x8x8", "vector_lanes": 16, "sram_bytes": 262144, "dram_bw": 64,
                              "dma_latency": 150, "dma_channels": 1, "event_slots": 16, "sync_latency": 100,
                              "freq": 1000000000, "align": 64, "cube_i8": 2, "cube_f32_passes": 1,
                              "vector_f16": 2, "vector_i8": 4, "requant": "float", "requant_unit": "cube", "bias_unit": "cube",
                              "units": "concurrent", "flag_latency": 4,
                              **{f"fn_{f}": "exact" for f in ("exp", "tanh", "erf", "sigmoid", "reciprocal", "rsqrt")}}
    write(chip, 'base = "edge-small"\ncores = 1\n')
    assert run("r2.json")["cores"] == 1


def test_plugin_presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chips of installed plugins (entry point group `npu_compiler.chips`: a folder of chip
    files or one file) are presets by their stems, found when a name is not built in."""
    import npu_dialects.arch as arch_module
    import npu_dialects.plugins as plugins

    write(tmp_path / "vendor" / "vendor-a.toml", 'base = "edge-small"\ncores = 2\n')
    write(tmp_path / "vendor" / "vendor-b.toml", 'base = "vendor-a"\nsram_bytes = "1M"\n')
    write(tmp_path / "one.toml", "cores = 3\n")
    entries = (("vendor", tmp_path / "vendor"), ("one", str(tmp_path / "one.toml")))
    monkeypatch.setattr(plugins, "called", lambda group: entries if group == "npu_compiler.chips" else ())
    monkeypatch.setattr(arch_module, "PRESETS", dict(PRESETS))
    monkeypatch.setattr(arch_module, "_PLUGINS_LOADED", [])
    assert parse_arch_spec("vendor-b,dram_bw=64") == Arch(**{**PRESETS["edge-small"].__dict__, "cores": 2,
                                                               "sram_bytes": 1 << 20, "dram_bw": 64})
    assert parse_arch_spec("one").cores == 3
    assert list(arch_module.PRESETS)[5:] == ["vendor-a", "vendor-b", "one"]
    with pytest.raises(ArchError) as e:
        parse_arch_spec("vendor-c")
    assert e.value.hint is not None and "default, edge-small, lut, realistic, server, vendor-a, vendor-b, one" in e.value.hint

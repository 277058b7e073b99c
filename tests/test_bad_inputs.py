"""The bad-input corpus (`tests/bad_inputs/`): every case of `cases.toml` runs a real
command-line tool in a subprocess and must exit 1 or 2 as listed, print no traceback and
no "internal error", and give a first diagnostic line (the first stderr line with
`error:`) matching the case's regex, naming the culprit; `hint`, when given, must match
a `hint:` line. The binary inputs are built once per worker by `make_corpus.build`."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent / "bad_inputs"
CASES: list[dict[str, Any]] = tomllib.loads((HERE / "cases.toml").read_text())["case"]
TIMEOUT = 60  # seconds per case: a hang is a failure, not a stuck suite


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The binary corpus, built once per worker (about a second: one small compile)."""
    spec = importlib.util.spec_from_file_location("make_corpus", HERE / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    make_corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_corpus)
    return make_corpus.build(tmp_path_factory.mktemp("bad_inputs"))


def run_case(case: dict[str, Any], gen: Path, out: Path) -> subprocess.CompletedProcess[str]:
    if "mkdir" in case:
        (out / case["mkdir"]).mkdir()
    text = case["run"].replace("{dir}", str(HERE)).replace("{gen}", str(gen)).replace("{out}", str(out))
    return subprocess.run(shlex.split(text), capture_output=True, text=True, timeout=TIMEOUT, cwd=out,
                          stdin=subprocess.DEVNULL)


def test_manifest_is_well_formed() -> None:
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 60
    categories = {i.split("/")[0] for i in ids}
    assert categories == {"onnx", "mlir", "pass", "arch", "exe", "npz"}
    for c in CASES:
        assert c["exit"] in (1, 2) and c["run"].split()[0] in ("npu-opt", "npu-compile", "npu-run", "npu-import"), c
        re.compile(c["match"])


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input(case: dict[str, Any], corpus: Path, tmp_path: Path) -> None:
    p = run_case(case, corpus, tmp_path)
    err = p.stderr
    assert "Traceback" not in err + p.stdout, err
    assert "internal error" not in err, err
    assert p.returncode == case["exit"], f"exit {p.returncode}, expected {case['exit']}:\n{err}"
    diagnostic = next((line for line in err.splitlines() if "error:" in line), None)
    assert diagnostic is not None, f"no 'error:' line on stderr:\n{err}"
    assert re.search(case["match"], diagnostic), f"{diagnostic!r} does not match {case['match']!r}"
    if "hint" in case:
        hints = [line for line in err.splitlines() if line.startswith("hint: ")]
        assert any(re.search(case["hint"], h) for h in hints), f"no hint matching {case['hint']!r}:\n{err}"


@pytest.mark.parametrize("arch", ["default,dram_bw=1000000000000", "default,sram_bytes=4611686018427387904"])
def test_extreme_archs_still_run(arch: str, corpus: Path, tmp_path: Path) -> None:
    """Limits of the spec, not bad input: a DRAM so fast its transfers end below the float
    resolution of the clock (they hung until the watchdog), an SRAM far larger than the
    host's memory (the simulator allocated it whole)."""
    p = subprocess.run(["npu-run", str(corpus / "good.onnx"), "--arch", arch, "--inputs",
                        str(corpus / "in_good.npz")], capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "cycles:" in p.stdout

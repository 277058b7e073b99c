"""npu-tile's searches in forked workers (`lowering.tile.tile_search.search_many`,
`NPU_COMPILE_JOBS`): the IR is byte-identical to the searches run one by one, on a
model with enough distinct kernels to fork, whole processes (no pytest threads)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lowering.tile.tile_search import PARALLEL_MIN_SEARCHES, compile_jobs

ROOT = Path(__file__).parent.parent


def _opt(tmp: Path, jobs: int, arch: str) -> str:
    out = tmp / f"j{jobs}" / "out.mlir"
    out.parent.mkdir()
    env = {**os.environ, "NPU_COMPILE_JOBS": str(jobs), "PYTHONPATH": str(ROOT)}
    for args in (["tools.npu_import", str(ROOT / "tests/models/bert_encoder.onnx"), "-o", str(tmp / "in.mlir"),
                  "--arch", arch],
                 ["tools.npu_opt", str(tmp / "in.mlir"), "-p", "npu-default", "--remarks", "-o", str(out)]):
        p = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, env=env, cwd=ROOT)
        assert p.returncode == 0, p.stderr
    return out.read_text() + p.stderr


@pytest.mark.parametrize("arch", ["default", "default,cores=1,sram_bytes=131072"])
def test_forked_searches_give_the_serial_ir(tmp_path, arch):
    serial, forked = _opt(tmp_path, 1, arch), _opt(tmp_path, 2, arch)
    tiled = [ln for ln in serial.splitlines() if ln.startswith("remark: npu-tile: applied")]
    assert len({ln.split("tile ", 1)[1] for ln in tiled}) >= PARALLEL_MIN_SEARCHES  # enough to fork
    assert forked == serial


def test_compile_jobs_from_the_environment(monkeypatch):
    monkeypatch.setenv("NPU_COMPILE_JOBS", "3")
    assert compile_jobs() == 3
    monkeypatch.setenv("NPU_COMPILE_JOBS", "zero")
    assert compile_jobs() >= 1

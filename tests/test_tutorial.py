"""docs/tutorial.md runs as written: its blocks in order, in an empty directory, in a
virtual environment of its own (no system site packages) that has npu-compiler
installed (editable, from this tree, with its dependencies from the package index or
pip's cache). A fenced block whose info string has `file=PATH` is
written to PATH; a `sh` block runs with bash (`set -e`) and must succeed; the `sh setup`
block (making the venv) is what this test does itself; other blocks are prose. So the
tutorial cannot rot: a renamed API or a changed output breaks CI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```\s*$", re.M | re.S)


def blocks(text: str) -> list[tuple[str, str]]:
    """(info string, body) of every fenced block, in order."""
    return [(m.group("info").strip(), m.group("body")) for m in FENCE.finditer(text)]


def test_tutorial_blocks_are_well_formed():
    found = blocks(TUTORIAL.read_text())
    files = [info for info, _ in found if "file=" in info]
    commands = [info for info, _ in found if info == "sh"]
    assert len(files) >= 8 and len(commands) >= 7
    setup = [body for info, body in found if info == "sh setup"]
    assert len(setup) == 1 and "-e /path/to/npu-compiler" in setup[0] and "--system-site-packages" not in setup[0]
    assert all(re.search(r"file=\S+", info) for info in files)


def test_tutorial_runs(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=True).create(env_dir)
    bindir = env_dir / "bin"
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(env_dir),
           "NPU_NO_CACHE": "1", "PYTHONNOUSERSITE": "1"}
    env.pop("PYTHONPATH", None)
    # the `sh setup` block: npu-compiler and its dependencies in the venv, and xDSL's own
    # xdsl-opt parsing our dialects there (issue 46: only the project installed)
    subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", "-e", str(ROOT)], check=True, env=env,
                   capture_output=True, text=True, timeout=900)
    ops = ROOT / "tests" / "filecheck" / "npu_graph" / "ops.mlir"
    r = subprocess.run([str(bindir / "xdsl-opt"), str(ops)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    again = subprocess.run([str(bindir / "xdsl-opt")], input=r.stdout, env=env, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0 and again.stdout == r.stdout, again.stderr  # round-trips
    assert "npu_graph.conv2d" in r.stdout
    work = tmp_path / "work"
    work.mkdir()
    for i, (info, body) in enumerate(blocks(TUTORIAL.read_text())):
        m = re.search(r"file=(\S+)", info)
        if m:
            path = work / m.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
        elif info == "sh":
            r = subprocess.run(["bash", "-e", "-c", body], cwd=work, env=env, capture_output=True, text=True,
                               timeout=600)
            assert r.returncode == 0, f"tutorial block #{i} failed:\n{body}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    assert (work / "sweep" / "results.csv").exists()
    assert sys.executable  # (the venv's python is not this one: the tutorial ran in its own environment)

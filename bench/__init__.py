"""Benchmarks that print figures and write their tables under `bench/results/`; every
table names the commit it was made on (`write_table`)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("lowering", "npu_dialects", "sim", "runtime", "tools", "bench")
"""What a table's figures depend on: a change there makes the tree differ from its commit."""


def source_commit() -> str:
    """The checked-out commit (short hash), with '+ local changes' when the tracked
    SOURCES (not the tables under bench/results) differ from it, or 'unknown' outside
    a git checkout."""
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    try:
        head = git("rev-parse", "--short", "HEAD").stdout.strip()
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", *SOURCES,
                    ":(exclude)bench/results").stdout.strip()
    except OSError:
        return "unknown"
    return f"{head} + local changes" if head and dirty else head or "unknown"


def write_table(lines: list[str], out: str | None) -> None:
    """Write a table's lines to `out` (nothing when None), ending with the commit line."""
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text("\n".join([*lines, "", f"Made on commit {source_commit()}."]) + "\n")


_SPAWN = ("import os, sys\n"
          "pid = os.fork()\n"
          "if pid == 0:\n"
          "    os.execvp(sys.argv[2], sys.argv[2:])\n"
          "_, status, usage = os.wait4(pid, 0)\n"
          "with open(sys.argv[1], 'w') as f:\n"
          "    f.write(f'{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}')\n"
          "sys.exit(os.waitstatus_to_exitcode(status))\n")
"""A small Python process that forks `cmd` and writes its peak RSS (KB) and CPU seconds."""


def measured(cmd: list[str], **popen: Any) -> tuple[subprocess.CompletedProcess[str], float, float, float]:
    """Run `cmd` (`subprocess.run` keywords, output captured as text): the completed
    process, wall seconds, CPU seconds and peak resident MB of `cmd` itself. The
    command is forked from a small launcher, not from this process: a child's peak
    RSS counts the pages it shares with its parent until it execs, so a benchmark
    holding models in memory would otherwise inflate every figure."""
    import sys
    import tempfile
    import time
    with tempfile.NamedTemporaryFile("r", suffix=".rusage") as f:
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", _SPAWN, f.name, *cmd], capture_output=True, text=True, **popen)
        wall = time.perf_counter() - t
        kb, cpu = (f.read().split() + ["0", "0"])[:2]
    return p, wall, float(cpu), int(kb) / 1024


def run_checked(cmd: list[str], root: Path) -> tuple[subprocess.CompletedProcess[str], float, float, float]:
    """`measured` of `cmd` run in `root` with it on PYTHONPATH and the compile cache's
    on/off switch left to the command; RuntimeError with its last stderr line when it fails."""
    import os
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("NPU_NO_CACHE", None)
    p, wall, cpu, peak = measured(cmd, env=env, cwd=root)
    if p.returncode != 0:
        raise RuntimeError((p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1])
    return p, wall, cpu, peak

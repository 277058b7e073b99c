"""Benchmarks that print figures and write their tables under `bench/results/`; every
table names the commit it was made on (`write_table`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

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

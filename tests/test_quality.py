"""Quality gates of issue 14, read off the source with `ast` (nothing is imported):

- a module docstring in npu_dialects/, lowering/, sim/, runtime/ and tools/ says in
  at most 15 lines what the module is for; a section that starts with a line
  `Algorithm` followed by a line of dashes may follow and is not counted
  (trailing blank lines before it are not counted either);
- no function in lowering/ (methods and nested functions included) is longer than
  80 lines, `end_lineno - lineno + 1` of its `def`.

A failure lists every offending file or function with its length.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCSTRING_DIRS = ("npu_dialects", "lowering", "sim", "runtime", "tools")
FUNCTION_DIRS = ("lowering",)
MAX_DOCSTRING_LINES = 15
MAX_FUNCTION_LINES = 80
DASHES = re.compile(r"-{3,}")


def python_files(dirs: tuple[str, ...]) -> list[Path]:
    files = sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))
    assert files, f"no Python files under {dirs} in {ROOT}"
    return files


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def summary_length(doc: str) -> int:
    """Lines of `doc` before its `Algorithm` heading (all of it without one), trailing blank lines left out."""
    lines = doc.splitlines()
    for i in range(len(lines) - 1):
        if lines[i].strip() == "Algorithm" and DASHES.fullmatch(lines[i + 1].strip()):
            lines = lines[:i]
            break
    while lines and not lines[-1].strip():
        lines.pop()
    return len(lines)


def functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under `node` with its qualified name (`Class.method.nested`)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            yield name, child
            yield from functions(child, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from functions(child, prefix + child.name + ".")
        else:
            yield from functions(child, prefix)


def test_module_docstrings_short() -> None:
    too_long = []
    for path in python_files(DOCSTRING_DIRS):
        doc = ast.get_docstring(parse(path))
        if doc is not None and (n := summary_length(doc)) > MAX_DOCSTRING_LINES:
            too_long.append(f"{path.relative_to(ROOT)}: {n} lines")
    assert not too_long, (
        f"module docstrings longer than {MAX_DOCSTRING_LINES} lines before an 'Algorithm' section "
        "(move the how-it-works detail under 'Algorithm' + a line of dashes):\n  " + "\n  ".join(too_long)
    )


def test_functions_short() -> None:
    too_long = []
    for path in python_files(FUNCTION_DIRS):
        for name, fn in functions(parse(path)):
            n = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if n > MAX_FUNCTION_LINES:
                too_long.append(f"{path.relative_to(ROOT)}:{fn.lineno} {name}: {n} lines")
    assert not too_long, f"functions longer than {MAX_FUNCTION_LINES} lines:\n  " + "\n  ".join(too_long)

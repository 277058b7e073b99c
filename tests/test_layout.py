"""The layout's arrows run one way (issue 46 item 6), read off the source with `ast`:

- no import cycle between files: a chain `a.py -> b.py -> a.py` fails the test;
- no module in npu_dialects/ imports lowering/, tools/, sim/ or runtime/ (a dialect
  does not depend on the layers above it: its canonicalization patterns live with it);
- no `from X import _private` of another module's private name.

Every `import` counts, at module level or inside a function (a function-local import
that dodges a cycle is still an arrow), and so does one under `if TYPE_CHECKING:`;
relative imports are resolved. A package excused for a while (while a change splits it)
is listed with the reason in `KNOWN`, empty since the split of npu_dialects/graph/ and
lowering/importer/ made their shared helpers public.

Algorithm
---------
Each file under the five packages is a node; an import of `a.b.c` (or `from a.b
import c`) draws an edge to the file of the longest prefix that is a project module
(`a/b/c.py`, `a/b/c/__init__.py`, ...). Importing a module also runs its packages'
`__init__.py` files, but those edges are not drawn: a package's `__init__` that
re-exports its children is not a cycle with them. Cycles are the strongly connected
components of the graph (Tarjan); each is reported as one chain through it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("npu_dialects", "lowering", "sim", "runtime", "tools")
UPPER = ("lowering", "tools", "sim", "runtime")

KNOWN: dict[str, str] = {}
"""Packages inside which a cycle or a private import is allowed for now, with the reason:
only between two of the package's own modules (e.g. `"lowering.foo": "being split into
modules (issue N); the split decides which of its helpers become public"`). Empty: take a
package off as soon as its helpers are public (no test checks that an entry is still
needed)."""


def known(*modules: str) -> str | None:
    """The package of KNOWN all of `modules` are in, if any."""
    return next((p for p in KNOWN if all(m == p or m.startswith(p + ".") for m in modules)), None)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_files() -> dict[str, Path]:
    """Dotted module name -> file, for every Python file of the five packages."""
    files = {module_name(p): p for d in PACKAGES for p in sorted((ROOT / d).rglob("*.py"))}
    assert files, f"no Python files under {PACKAGES} in {ROOT}"
    return files


def resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module of `from ... import` in `module` (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    is_package = project_files()[module].name == "__init__.py" if module in project_files() else False
    drop = node.level - 1 if is_package else node.level
    base = base[: len(base) - drop]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: Path) -> Iterator[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            source = resolve(module, node)
            for alias in node.names:
                yield source, alias.name, node.lineno


def target(files: dict[str, Path], source: str, name: str | None) -> str | None:
    """The project module an import lands in: `source.name` when that is a module, else `source`."""
    if name is not None and f"{source}.{name}" in files:
        return f"{source}.{name}"
    parts = source.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in files:
            return candidate
        parts.pop()
    return None


def graph() -> dict[str, set[str]]:
    files = project_files()
    edges: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        for source, name, _ in imports(module, path):
            dest = target(files, source, name)
            if dest is not None and dest != module:
                edges[module].add(dest)
    return edges


def components(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def chain(edges: dict[str, set[str]], component: list[str]) -> list[str]:
    """One cycle through the component's first file (breadth-first: a shortest one)."""
    members = set(component)
    start = component[0]
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [*reversed(path), start]
                if child not in parent:
                    parent[child] = node
                    following.append(child)
        frontier = following
    return component


def file_of(module: str) -> str:
    return str(project_files()[module].relative_to(ROOT))


def test_no_import_cycles() -> None:
    edges = graph()
    cycles = [c for c in components(edges) if known(*c) is None]
    chains = [" -> ".join(file_of(m) for m in chain(edges, c)) for c in cycles]
    assert not chains, "import cycles between files:\n  " + "\n  ".join(chains)


def test_dialects_import_no_upper_layer() -> None:
    files = project_files()
    upward = [
        f"{file_of(module)}:{line} imports {source}"
        for module, path in files.items()
        if module.split(".")[0] == "npu_dialects"
        for source, _, line in imports(module, path)
        if source.split(".")[0] in UPPER
    ]
    assert not upward, "npu_dialects/ imports a layer above it:\n  " + "\n  ".join(upward)


def test_no_private_imports_across_modules() -> None:
    files = project_files()
    private = []
    for module, path in files.items():
        for source, name, line in imports(module, path):
            if name is None or not name.startswith("_") or name.startswith("__"):
                continue
            if source.split(".")[0] not in PACKAGES or source == module:
                continue
            if known(module, source) is not None:
                continue
            private.append(f"{file_of(module)}:{line} from {source} import {name}")
    assert not private, "imports of another module's private name:\n  " + "\n  ".join(private)

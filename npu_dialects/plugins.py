"""Plugins: separately installed Python packages that extend the compiler through
entry points (`[project.entry-points."GROUP"]` in their pyproject.toml), found once per
process with `importlib.metadata`. A plugin that fails to load is an error naming the
entry point (never silently skipped). The groups are under Algorithm.

Algorithm
---------

- `npu_compiler.dialects`: a `Dialect` (or a function returning an iterable of them),
  loaded into every context the tools make (`npu_dialects.make_context`);
- `npu_compiler.passes`: a `ModulePass` class, registered under its `name`
  (`lowering.get_all_passes`: `npu-opt --list-passes`, pipelines, `npu-run -p`);
- `npu_compiler.importers`: a module or function whose import or call registers ONNX
  converters (`@converter("com.example.MyOp")`: domain-qualified op types);
- `npu_compiler.patterns`: a function called once, which registers native PDL
  constraints and rewrites (`lowering.patterns.native.register_*`); a fusion rule is a
  PDL pattern calling `npu.fuse`;
- `npu_compiler.fusion_rules`: a path (or a function returning one) to a PDL file of
  patterns calling `npu.fuse`: a fusion rule npu-fuse applies first, named by the entry
  point (`npu-default{fuse-disable=NAME}` switches it off like a built-in rule);
- `npu_compiler.chips`: a path (or a function returning one) to a chip `.toml` or a
  directory of them, each a preset named by its file stem (`--arch mychip`).
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUPS = ("npu_compiler.dialects", "npu_compiler.passes", "npu_compiler.importers", "npu_compiler.patterns",
          "npu_compiler.fusion_rules", "npu_compiler.chips")


class PluginError(Exception):
    """A plugin entry point that cannot be loaded (one-line message naming it)."""


def _describe(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    who = f" of package '{dist.name}'" if dist is not None else ""
    return f"plugin entry point '{ep.name} = {ep.value}' (group {ep.group}){who}"


@cache
def _entry_points() -> Any:
    """Every installed entry point, read once per process (one scan of the installed
    packages is about 5 ms; one per group was 26 ms on the compile cache's warm path),
    or none without reading them when no package declares a plugin (`_declared`):
    importing `importlib.metadata` and parsing every package's entry points cost
    ~50 ms a process, a third of a warm cache hit."""
    if not _declared():
        return None
    from importlib.metadata import entry_points
    return entry_points()


PLUGIN_MARK = "[npu_compiler."
"""How an `entry_points.txt` declaring an entry point of a plugin group starts it."""


def _declared() -> bool:
    """Whether an `entry_points.txt` of a package on `sys.path` (`*.dist-info`,
    `*.egg-info`: where `importlib.metadata` finds them) has a section of a plugin
    group: a text scan, no metadata parsed."""
    for entry in sys.path:
        try:
            found = os.scandir(entry or ".")
        except OSError:  # (a zip, a missing directory)
            continue
        with found:
            for d in found:
                if not d.name.endswith((".dist-info", ".egg-info")):
                    continue
                try:
                    with open(os.path.join(d.path, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
                        if PLUGIN_MARK in f.read():
                            return True
                except OSError:
                    continue
    return False


def group_entry_points(group: str) -> list[EntryPoint]:
    """The entry points of `group`, sorted by name."""
    found = _entry_points()
    return [] if found is None else sorted(found.select(group=group), key=lambda e: e.name)


def fingerprint() -> str:
    """Every entry point of the plugin groups with its package's name and version (the
    compile cache keys on it: installing, removing or upgrading a plugin misses; an
    editable plugin's source edits do not)."""
    lines = []
    for group in GROUPS:
        for ep in group_entry_points(group):
            dist = getattr(ep, "dist", None)
            lines.append(f"{group} {ep.name}={ep.value} {dist.name if dist else ''} {dist.version if dist else ''}")
    return "\n".join(lines)


@cache
def loaded(group: str) -> tuple[tuple[str, Any], ...]:
    """(entry point name, loaded object) of every plugin in `group`, sorted by name."""
    out: list[tuple[str, Any]] = []
    for ep in group_entry_points(group):
        try:
            out.append((ep.name, ep.load()))
        except Exception as e:  # (a broken plugin is the user's to fix: say which one)
            raise PluginError(f"cannot load {_describe(ep)}: {type(e).__name__}: {e}") from None
    return tuple(out)


def called(group: str) -> tuple[tuple[str, Any], ...]:
    """`loaded(group)` with each callable object replaced by what calling it returns
    (once per process)."""
    return _called(group)


@cache
def _called(group: str) -> tuple[tuple[str, Any], ...]:
    out = []
    for name, obj in loaded(group):
        if callable(obj) and not isinstance(obj, type):
            try:
                obj = obj()
            except Exception as e:
                raise PluginError(f"plugin '{name}' (group {group}) failed: {type(e).__name__}: {e}") from None
        out.append((name, obj))
    return tuple(out)

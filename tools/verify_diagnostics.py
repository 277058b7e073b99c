"""MLIR's `--verify-diagnostics` for `npu-opt`: the input says, in comments, which
diagnostics it must produce - `// expected-error @+1 {{substring}}` (also `-warning`,
`-remark`, `-note`; `@+N`, `@-N`, `@above`, `@below`, `@unknown` or the same line;
`expected-error-re` with `{{regex}}` parts) - and npu-opt checks each chunk's
diagnostics against them: an unexpected diagnostic or an expectation nobody met is
reported at its line, and any mismatch is exit 1.

`expectations(text, file, line_offset)` reads the annotations of one chunk;
`diagnostics_of(e, names)` turns npu-opt's exception (a parse error, a verifier error, a
pass's CompileError) into diagnostics; `remark_diagnostic` a remark (at the first op of
the input whose location names one of its ONNX nodes); `mismatches` matches them.

Algorithm
---------
As MLIR's `SourceMgrDiagnosticVerifierHandler`: `@above` is the nearest line above
without an annotation, `@below` the nearest one below; a diagnostic is consumed by the
first unmet expectation of its severity and line whose text it contains. Notes are
checked only against `expected-note` (an unexpected note is no mismatch: notes ride on
an error). Located diagnostics are npu-opt's `FILE:LINE:COL: SEVERITY: MESSAGE` lines; a
pass error at an op the pass built is placed through the op's ONNX node names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.ir import Operation

from npu_dialects.locs import node_names
from tools.diagnostics import source_span

ANNOTATION = re.compile(
    r"expected-(?P<severity>error|warning|remark|note)(?P<re>-re)? *(?:@(?P<at>[+-]\d+|above|below|unknown))?"
    r" *\{\{(?P<text>.*)\}\}\s*$")
"""One annotation (the whole rest of the line: the text may hold `}}`)."""
LOCATED = re.compile(r"^(?P<where>(?P<file>.+?):(?P<line>\d+):(?P<col>\d+)): "
                     r"(?P<severity>error|warning|remark|note): (?P<message>.*)$")
"""A located diagnostic line as npu-opt prints it (`tools/diagnostics.py`)."""
ANY_ANNOTATION = re.compile(rb"expected-(?:error|warning|remark|note)(?:-re)? *(?:@\S+)? *\{\{")


@dataclass
class Expected:
    """An annotation: `line` is where the diagnostic must be (None: `@unknown`)."""

    severity: str
    line: int | None
    text: str
    regex: bool
    where: str  # `FILE:LINE:COL` of the annotation itself
    matched: bool = False

    def matches(self, d: Diagnostic) -> bool:
        if self.severity != d.severity or self.line != d.line:
            return False
        if self.regex:
            return re.search(re_pattern(self.text), d.message) is not None
        return self.text in d.message


@dataclass
class Diagnostic:
    """One diagnostic npu-opt produced (`line` None: not located in the input)."""

    severity: str
    message: str
    line: int | None = None
    where: str = ""
    context: list[str] = field(default_factory=list)


def re_pattern(text: str) -> str:
    """An `expected-*-re` text as a regex: its `{{...}}` parts as written, the rest literal."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return "".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts))


def has_annotations(data: bytes) -> bool:
    """Whether the input holds any `expected-*` annotation (MLIR's checking is on)."""
    return ANY_ANNOTATION.search(data) is not None


def expectations(text: str, file: str, line_offset: int = 0) -> list[Expected]:
    """The annotations of one chunk (its first line is line `line_offset + 1` of `file`)."""
    out: list[Expected] = []
    below: list[Expected] = []
    plain: int | None = None  # the last line without an annotation
    lines = text.split("\n")
    for i, line in enumerate(lines):
        n = line_offset + i + 1
        m = ANNOTATION.search(line)
        if m is None:
            plain = n
            for e in below:
                e.line = n
            below = []
            continue
        e = Expected(m["severity"], n, m["text"], bool(m["re"]), f"{file}:{n}:{m.start() + 1}")
        at = m["at"]
        if at == "unknown":
            e.line = None
        elif at == "above":
            e.line = plain if plain is not None else n - 1
        elif at == "below":
            below.append(e)
        elif at is not None:
            e.line = n + int(at)
        out.append(e)
    for e in below:  # (no line below: it can never match, and is reported unmet)
        e.line = line_offset + len(lines) + 1
    return out


def node_lines(module: Operation) -> dict[str, tuple[int, str]]:
    """ONNX node name -> (line, `FILE:LINE:COL`) of the first op of the input located there."""
    out: dict[str, tuple[int, str]] = {}
    for op in module.walk():
        span = source_span(op)
        if span is None:
            continue
        where = span.get_location()
        for name in node_names(op):
            out.setdefault(name, (where.line, str(where)))
    return out


def _at_nodes(d: Diagnostic, nodes: list[str], names: Mapping[str, tuple[int, str]]) -> Diagnostic:
    """`d` placed at the first of `nodes` the input has an op for (unchanged if none)."""
    for n in nodes:
        if n in names:
            d.line, d.where = names[n]
            break
    return d


def diagnostics_of(e: BaseException, names: Mapping[str, tuple[int, str]]) -> list[Diagnostic]:
    """The diagnostics an exception of npu-opt's prints: each located line one (the source
    lines and hints after it its context), else its first line, unlocated - or located
    through the ONNX nodes of the op a CompileError names."""
    out: list[Diagnostic] = []
    text = str(e).strip()
    for line in text.split("\n"):
        m = LOCATED.match(line)
        if m:
            out.append(Diagnostic(m["severity"], m["message"], int(m["line"]), m["where"]))
        elif out:
            out[-1].context.append(line)
    if not out:
        first = text.split("\n")[0].removeprefix("error: ")
        op = getattr(e, "op", None)
        out.append(_at_nodes(Diagnostic("error", first), node_names(op) if isinstance(op, Operation) else [], names))
    return out


def remark_diagnostic(pass_name: str, kind: str, nodes: tuple[str, ...], line: str,
                      names: Mapping[str, tuple[int, str]]) -> Diagnostic:
    """A remark (`npu-fuse: applied: [fc, bias] ...`) at the first of its nodes in the input."""
    return _at_nodes(Diagnostic("remark", line.removeprefix("remark: ")), list(nodes), names)


def mismatches(expected: list[Expected], produced: list[Diagnostic], file: str) -> list[str]:
    """The reports of a chunk: each diagnostic no expectation took, then each expectation
    no diagnostic met (at the annotation); empty when everything matches."""
    out: list[str] = []
    left: list[Diagnostic] = []
    for d in produced:
        e = next((x for x in expected if not x.matched and x.matches(d)), None)
        if e is not None:
            e.matched = True
        elif d.severity != "note":
            left.append(d)
    for d in left:
        if d.line is None:
            out.append(f"{file}: error: unexpected {d.severity} (not located in the input; "
                       f"expected-{d.severity}@unknown expects it): {d.message}")
        else:
            out.append("\n".join([f"{d.where}: error: unexpected {d.severity}: {d.message}", *d.context]))
    for x in expected:
        if x.matched:
            continue
        near = [d for d in left if d.severity == x.severity and (re.search(re_pattern(x.text), d.message)
                                                                 if x.regex else x.text in d.message)]
        at = f"line {x.line}" if x.line is not None else "an unknown location"
        hint = ""
        if near:
            hint = f"; one was, at line {near[0].line}" if near[0].line is not None else "; one was, unlocated"
        out.append(f"{x.where}: error: expected {x.severity} \"{x.text}\" at {at} was not produced{hint}")
    return out

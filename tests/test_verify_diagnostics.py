"""`tools/verify_diagnostics.py`: where each annotation points, how a diagnostic is
matched, and what a mismatch reports (npu-opt's end to end: lit npu-opt/verify_diagnostics*)."""

from __future__ import annotations

from tools.verify_diagnostics import (
    Diagnostic,
    diagnostics_of,
    expectations,
    has_annotations,
    mismatches,
    re_pattern,
)

TEXT = """\
op1
// expected-error @above {{a}}
// expected-warning @below {{b}}
// expected-remark @+2 {{c}}

op6 // expected-error {{d}}
// expected-note @-2 {{e}}
// expected-error @unknown {{f}}
"""


def test_each_designator_points_where_mlir_says():
    got = [(e.severity, e.line, e.text) for e in expectations(TEXT, "t.mlir", line_offset=10)]
    assert got == [("error", 11, "a"), ("warning", 15, "b"), ("remark", 16, "c"), ("error", 16, "d"),
                   ("note", 15, "e"), ("error", None, "f")]
    assert expectations(TEXT, "t.mlir")[0].where == "t.mlir:2:4"


def test_below_with_no_line_below_points_past_the_end():
    (e,) = expectations("// expected-error @below {{x}}", "t.mlir")
    assert e.line == 2 and not e.matches(Diagnostic("error", "x", 1))  # (the text has one line)


def test_regex_parts_and_text_with_braces():
    assert re_pattern("got {{[0-9]+}} [x]") == r"got\ [0-9]+\ \[x\]"
    (e,) = expectations("x // expected-error-re {{got {{[0-9]+}} of}}", "t.mlir")
    assert e.regex and e.matches(Diagnostic("error", "we got 12 of them", 1))
    (e,) = expectations("x // expected-error {{a}} b {{c}}", "t.mlir")
    assert e.text == "a}} b {{c"
    assert has_annotations(b"// expected-remark@+1 {{x}}") and not has_annotations(b"// expected things")


def test_located_exception_lines_become_diagnostics_with_context():
    e = ValueError("f.mlir:3:5: error: bad op\n  x = y\n    ^\nf.mlir:1:1: note: defined here\nhint: try z")
    err, note = diagnostics_of(e, {})
    assert (err.severity, err.line, err.message, err.context) == ("error", 3, "bad op", ["  x = y", "    ^"])
    assert (note.severity, note.line, note.context) == ("note", 1, ["hint: try z"])
    (plain,) = diagnostics_of(ValueError("error: npu-x: no input 'q'"), {})
    assert plain.line is None and plain.message == "npu-x: no input 'q'"


def test_mismatches_report_both_sides_and_ignore_unexpected_notes():
    expected = expectations("op\n// expected-error @above {{wanted}}\n", "t.mlir")
    produced = [Diagnostic("error", "other", 1, "t.mlir:1:1"), Diagnostic("note", "n", 1, "t.mlir:1:1")]
    assert mismatches(expected, produced, "t.mlir") == [
        "t.mlir:1:1: error: unexpected error: other",
        't.mlir:2:4: error: expected error "wanted" at line 1 was not produced']
    expected = expectations("op\n// expected-error @above {{wanted}}\n", "t.mlir")
    assert mismatches(expected, [Diagnostic("error", "what was wanted", 1, "t.mlir:1:1")], "t.mlir") == []

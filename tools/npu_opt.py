"""`npu-opt`: the xDSL opt driver with the npu dialects and passes.

Adds to `xdsl-opt`: MLIR's `--pass-pipeline='builtin.module(a,b{k=v})'` (`-p` takes it too), `--list-passes`
(each option with its help), `--print-arch SPEC`, `--version`, weight side files relocated
when writing elsewhere, clean diagnostics (exit 1 bad input, 2 bad usage, 130 interrupted;
tracebacks only with NPU_DEBUG=1; a verifier error once, at its line). As mlir-opt:
locations only with `--print-debuginfo`, `--verify-diagnostics` checking `expected-error`
annotations (`tools/verify_diagnostics.py`; an input without any keeps xDSL's meaning), `-`
(or no file) for standard input, `--split-input-file` running every chunk, `--mlir-`
spellings. Observability (`lowering/instrument.py`, on stderr): `--time-passes`,
`--print-ir-before/after[-all]`, `-after-change`, `-after-failure`, `--pattern-stats`,
`--debug-only=CHANNEL`, `--mlir-elide-elementsattrs-if-larger=N`, a progress line. The IR is
verified as read and after the passes (`--verify-each`: after each). `-o FILE` is written
atomically; new weights the passes fold go beside it (or to `--weights-file`).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import difflib
import inspect
import io
import os
import re
import stat
import sys
import textwrap
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    ShrinkException,
    VerifyException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from lowering import get_all_passes
from lowering.errors import CompileError
from lowering.instrument import (
    CHANNELS,
    DEBUG_ALL,
    ElidingPrinter,
    Instrumentation,
    InstrumentOptions,
    collecting_remarks,
    debugging,
    print_after_names,
)
from lowering.remarks import collecting, write_remarks
from npu_dialects import all_dialects, strip_unknown_locs
from npu_dialects.arch import ArchError, chip_toml, parse_arch_spec
from npu_dialects.plugins import PluginError
from npu_dialects.weights import (
    attach_weights,
    is_dirty,
    referenced_weights,
    relocate,
    save_weights,
)
from tools.cli import EXIT_INTERRUPTED, UserError, console, error_line, write_output
from tools.diagnostics import SourceParseError, locate, locate_verify_error, parse_mlir, source_span
from tools.verify_diagnostics import (
    Diagnostic,
    diagnostics_of,
    expectations,
    has_annotations,
    mismatches,
    node_lines,
    remark_diagnostic,
)

STANDARD_PASSES = ("canonicalize", "cse", "dce")


class PipelineSyntaxError(ValueError):
    """A bad pass pipeline or pass option (exit 2), with an optional `hint` line."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def unwrap_pipeline(text: str) -> str:
    """`builtin.module(a,b{k=v})` -> `a,b{k=v}` (the xDSL pipeline syntax)."""
    t = text.strip()
    for anchor in ("builtin.module(", "any("):
        if t.startswith(anchor):
            if not t.endswith(")"):
                raise PipelineSyntaxError(f"unbalanced parentheses in pass pipeline '{text}'")
            t = t[len(anchor):-1].strip()
            break
    else:
        if "(" in t:
            raise PipelineSyntaxError(
                f"pass pipeline '{text}': only 'builtin.module(...)' is supported as anchor")
    if "(" in t:
        raise PipelineSyntaxError(f"pass pipeline '{text}': nested pass anchors are not supported")
    return t


_COMMA_OPTIONS = re.compile(r"\{[^}]*,\s*[\w-]+\s*=")
"""A comma before an option name inside braces: options written as MLIR's list items."""


def _spec_error(text: str, e: ArgSpecParseError) -> PipelineSyntaxError:
    """xDSL's pipeline syntax error (a multi-line rendering) as one line; a hint when
    the options of one pass are separated by commas (MLIR separates them by spaces)."""
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    column = lines[1].rsplit(":", 1)[-1] if len(lines) > 1 else "?"
    reason = lines[-1].strip() if len(lines) > 2 else "syntax error"
    hint = None
    if _COMMA_OPTIONS.search(text):
        hint = ("hint: a pass's options are separated by spaces, e.g. 'npu-default{precision=f16 "
                "fuse-disable=layer-group}'; a comma separates the items of one option's list")
    return PipelineSyntaxError(f"bad pass pipeline '{text}': {reason[:1].lower() + reason[1:]} (column {column})",
                               hint)


_PATH_VALUE = re.compile(r"(?<=[{\s])([\w-]+)=((?![\d.]+(?:[\s}]|$))[^\s{}\"',=]*[/.~][^\s{}\"',=]*)")


def quote_paths(text: str) -> str:
    """Quote unquoted option values that look like paths (`file=rules/x.mlir` ->
    `file="rules/x.mlir"`): xDSL's pipeline lexer stops at `/` and `.`; numbers stay."""
    return _PATH_VALUE.sub(lambda m: f'{m.group(1)}="{m.group(2)}"', text)


def _pass_options(cls: type[ModulePass]) -> list[str]:
    return [f.name.replace("_", "-") for f in dataclasses.fields(cls) if f.init and f.name != "name"]


def parse_passes(available: Mapping[str, Callable[[], type[ModulePass]]], text: str) -> list[ModulePass]:
    """The passes of pipeline `text` (`a,b{k=v}`, as `unwrap_pipeline` leaves it), each
    checked: a syntax error, an unknown pass (hint: the nearest names), an unknown option
    (hint: the pass's options) or a bad option value raises PipelineSyntaxError."""
    try:
        specs = list(parse_pipeline(quote_paths(text)))  # (errors then name columns of the quoted text)
    except ArgSpecParseError as e:  # (a BaseException in xDSL 0.75)
        raise _spec_error(text, e) from None
    passes: list[ModulePass] = []
    for spec in specs:
        if spec.name not in available:
            near = difflib.get_close_matches(spec.name, list(available), n=3, cutoff=0.75)
            maybe = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
            raise PipelineSyntaxError(f"unknown pass '{spec.name}' in pipeline '{text}'",
                                      f"hint: {maybe}npu-opt --list-passes lists every pass")
        cls = available[spec.name]()
        options = _pass_options(cls)
        for option in spec.parameters:
            if option.replace("_", "-") not in options:
                known = f"its options: {', '.join(options)}" if options else "it takes no options"
                raise PipelineSyntaxError(f"pass '{spec.name}' has no option '{option}'", f"hint: {known}")
        try:
            passes.append(cls.from_pass_spec(spec))
        except (ValueError, TypeError) as e:
            raise PipelineSyntaxError(f"pass '{spec.name}': {_bad_option(cls, spec) or e}") from None
    return passes


def _bad_option(cls: type[ModulePass], spec: ArgSpec) -> str | None:
    """`option 'K' = V: why` for the first option of `spec` that fails on its own."""
    for option, value in spec.parameters.items():
        try:
            cls.from_pass_spec(ArgSpec(spec.name, {option: value}))
        except (ValueError, TypeError) as e:
            shown = ",".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
            return f"bad value '{shown}' for option '{option}': {e}"
    return None


STANDARD_SUMMARIES = {
    "canonicalize": "xDSL's canonicalization patterns of the builtin dialects",
    "cse": "xDSL's common subexpression elimination",
    "dce": "xDSL's dead code elimination",
}


def pass_summary(name: str, factory) -> str:
    """The first paragraph of the pass's docstring, on one line (never cut mid-sentence)."""
    if name in STANDARD_SUMMARIES:
        return STANDARD_SUMMARIES[name]
    try:
        doc = (factory().__doc__ or "").strip()
    except ImportError as e:
        return f"(unavailable: {e})"
    return " ".join(doc.split("\n\n", 1)[0].split())


def _clauses(text: str) -> list[str]:
    """`text`'s sentences and `;`-separated clauses (not split inside brackets or backticks)."""
    out, depth, code, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "`":
            code = not code
        elif not code and ch in "([":
            depth += 1
        elif not code and ch in ")]":
            depth = max(0, depth - 1)
        elif not code and depth == 0 and (ch == ";" or ch == "." and text[i + 1:i + 2] in (" ", "")):
            out.append(text[start:i + 1].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [c for c in out if c]


def option_help(cls: type[ModulePass]) -> dict[str, str]:
    """Option (as on the command line) -> its help: the string literal after its field in
    the class (an attribute docstring), else the clause of the pass's docstring that names
    it (`` `double-buffer=false` makes ... ``), whole."""
    fields = [f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"]
    helps: dict[str, str] = {}
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        body = None
    if isinstance(body, ast.ClassDef):
        for stmt, after in zip(body.body, body.body[1:]):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) \
                    and isinstance(after.value.value, str):
                helps[stmt.target.id.replace("_", "-")] = " ".join(after.value.value.split())
    doc = (cls.__doc__ or "").strip()
    clauses = _clauses(" ".join(doc.split()))
    later = _clauses(" ".join(doc.split("\n\n", 1)[1].split())) if "\n\n" in doc else []  # (not the summary)
    for name in (f.replace("_", "-") for f in fields):
        said = [c for c in clauses if f"`{name}=" in c] or [c for c in later if f"`{name}`" in c]
        if name not in helps and said:
            helps[name] = re.sub(r"^Options?:?\s+", "", said[0]).rstrip(";")
    return helps


def print_arch(spec: str) -> None:
    """`--print-arch SPEC`: the resolved parameters as a chip file (ArchError if SPEC is bad)."""
    try:
        arch = parse_arch_spec(spec)
    except ArchError as e:
        raise ArchError(f"bad --print-arch '{spec}': {e}", e.hint) from None
    print(chip_toml(arch), end="")


def _default_text(value: object) -> str:
    """An option's default as it is written after `=` in `pass{k=v}` (strings quoted, list
    items joined by commas; an empty list, which has no spelling there, is `(empty)`)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (tuple, list)):
        return ",".join(_default_text(v).strip('"') for v in value) if value else "(empty)"
    return str(value)


def option_lines(cls: type[ModulePass]) -> list[str]:
    """`name: type = default` for each option of pass `cls` (its dataclass fields, named as
    on the command line: `max-kernels`, not `max_kernels`)."""
    lines = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name == "name":
            continue
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        if f.default is not dataclasses.MISSING:
            default = f" = {_default_text(f.default)}"
        elif f.default_factory is not dataclasses.MISSING:
            default = f" = {_default_text(f.default_factory())}"
        else:
            default = " (required)"
        lines.append(f"{f.name.replace('_', '-')}: {kind}{default}")
    return lines


def list_passes(available: Mapping[str, Callable[[], type[ModulePass]]]) -> str:
    """`npu-opt --list-passes`: each pass with the first paragraph of its docstring, then
    its options indented, one a line, with their types, defaults and help (`option_help`)."""
    width = max((len(n) for n in available), default=0) + 2
    out = []
    for name, factory in sorted(available.items()):
        out.append(f"  {name:<{width}}{pass_summary(name, factory)}")
        try:
            cls = factory()
        except ImportError:
            continue  # (pass_summary said why)
        helps = option_help(cls)
        for line in option_lines(cls):
            said = helps.get(line.split(":", 1)[0])
            out.append(f"      {line}" + (f"  - {said}" if said else ""))
    return "\n".join(out) + "\n"


def compiler_version() -> str:
    """The installed npu-compiler's version (`unknown` when run from a tree not installed)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("npu-compiler")
    except PackageNotFoundError:
        return "unknown"


class NpuOptMain(xDSLOptMain):
    version_format = f"npu-opt (npu-compiler) {compiler_version()}, on xDSL {{xdsl_version}}"

    def register_all_dialects(self) -> None:
        for d in all_dialects():
            self.ctx.register_dialect(d.name, lambda d=d: d)

    def register_all_passes(self) -> None:
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)
        from xdsl.transforms import get_all_passes as xdsl_passes
        std = xdsl_passes()
        for name in STANDARD_PASSES:
            if name in std:
                self.register_pass(name, std[name])

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--pass-pipeline", default=None, metavar="PIPELINE",
            help="MLIR-style pipeline, e.g. 'builtin.module(npu-fuse,npu-tile{double-buffer=false})'")
        arg_parser.add_argument("--list-passes", action="store_true",
                                help="list every pass with a one-line description and its options "
                                     "(type and default), and exit")
        arg_parser.add_argument("--print-arch", metavar="SPEC",
                                help="print the machine an --arch SPEC resolves to (a preset or chip.toml, "
                                     "then overrides) as a chip file and exit")
        arg_parser.add_argument("--no-debuginfo", action="store_true",
                                help="do not print locations (the default now; --print-debuginfo prints them)")
        arg_parser.add_argument("--verify-each", action="store_true",
                                help="verify the IR after every pass, nested passes of npu-default too "
                                     "(default: the input, then once after the passes)")
        self.register_debug_arguments(arg_parser)
        arg_parser.add_argument("--pattern-stats", action="store_true",
                                help="print to stderr how often each rewrite pattern fired, per pass")
        arg_parser.add_argument("--remarks", nargs="?", const="-", metavar="FILE",
                                help="optimisation remarks: every fusion, layer/strip group and tiling made or "
                                     "missed, with the ONNX nodes and why (to stderr, or to FILE)")
        arg_parser.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                                help="a progress line on stderr once a compile passes 2 s "
                                     "(auto: when stderr is a terminal)")
        arg_parser.add_argument("--weights-file", metavar="FILE.npz",
                                help="where new weights the passes fold go (default: beside -o OUT as "
                                     "OUT-STEM.weights.npz; with the IR on standard output, "
                                     "INPUT-STEM.npu-opt.weights.npz in the current directory, named by a note)")

    def register_debug_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        """The IR dumps, eliding, debug channels and MLIR's `--mlir-` spellings of flags."""
        for flag, alias in (("--print-debuginfo", "--mlir-print-debuginfo"), ("--time-passes", "--mlir-timing"),
                            ("--print-op-generic", "--mlir-print-op-generic")):
            add_alias(arg_parser, flag, alias)
        arg_parser._option_string_actions["--verify-diagnostics"].help = (
            "check the diagnostics against the input's '// expected-error @+1 {{text}}' annotations (also "
            "expected-warning, -remark with --remarks, -note; @+N, @-N, @above, @below, @unknown), each chunk of "
            "--split-input-file apart: a mismatch is reported at its line, exit 1 (an input without annotations: "
            "each chunk's error printed on stdout, exit 0, as xdsl-opt does)")
        arg_parser.add_argument("--print-ir-before", "--mlir-print-ir-before", action="append", default=[],
                                metavar="PASS[,PASS]", help="print the IR to stderr before each run of these "
                                "passes (nested passes of npu-default too)")
        arg_parser.add_argument("--print-ir-before-all", "--mlir-print-ir-before-all", action="store_true",
                                help="print the IR to stderr before every pass")
        arg_parser.add_argument("--print-ir-after", "--mlir-print-ir-after", action="append", default=[],
                                metavar="PASS[,PASS]", help="print the IR to stderr after each run of these "
                                "passes (nested passes of npu-default too)")
        arg_parser.add_argument("--print-ir-after-all", "--mlir-print-ir-after-all", action="store_true",
                                help="print the IR to stderr after every pass")
        arg_parser.add_argument("--print-ir-after-change", "--mlir-print-ir-after-change", action="store_true",
                                help="print the IR after a pass only when the pass changed it (alone: after "
                                     "every pass that changed it; with --print-ir-after: those passes)")
        arg_parser.add_argument("--print-ir-after-failure", "--mlir-print-ir-after-failure", action="store_true",
                                help="print the IR as a pass that failed left it (the pass's error follows)")
        arg_parser.add_argument("--mlir-elide-elementsattrs-if-larger", "--elide-elementsattrs-if-larger",
                                type=_count, metavar="N", dest="elide",
                                help="print dense literals of more than N elements as "
                                     "'dense_resource<__elided__>' (the output and the IR dumps)")
        arg_parser.add_argument("--debug-only", action="append", default=[], metavar="CHANNEL[,CHANNEL]",
                                help="print a channel's debug messages to stderr as '[CHANNEL] ...': a pass's "
                                     "name (its decisions - fusions, groups, tilings - as it makes them), "
                                     f"{', '.join(CHANNELS)}")
        arg_parser.add_argument("--debug", action="store_true", help="print every debug channel")

    def setup_pipeline(self) -> None:
        if self.args.print_arch is not None:
            print_arch(self.args.print_arch)
            sys.exit(0)
        if self.args.list_passes:
            print(list_passes(self.available_passes), end="")
            sys.exit(0)
        if self.args.pass_pipeline is not None:
            if self.args.passes:
                raise PipelineSyntaxError("use either -p or --pass-pipeline, not both")
            self.args.passes = unwrap_pipeline(self.args.pass_pipeline)
        elif self.args.passes:  # (-p takes the anchored form too, as npu-run's and npu-compile's -p do)
            self.args.passes = unwrap_pipeline(self.args.passes)
        if self.args.no_debuginfo:
            self.args.print_debuginfo = False
        if self.args.passes:
            parse_passes(self.available_passes, self.args.passes)  # (names the culprit, with a hint)
            self.args.passes = quote_paths(self.args.passes)
        try:
            super().setup_pipeline()
        except (ValueError, TypeError) as e:  # (what parse_passes let through)
            raise PipelineSyntaxError(f"bad pass pipeline '{self.args.passes}': {e}") from None
        self.instrument_options = self.observe_options()

    def observe_options(self) -> InstrumentOptions:
        """The instrumentation the command line asks for (`lowering/instrument.py`)."""
        a = self.args
        try:
            after = print_after_names(a.print_ir_after, self.available_passes)
            before = print_after_names(a.print_ir_before, self.available_passes, "--print-ir-before")
        except ValueError as e:
            raise PipelineSyntaxError(str(e)) from None
        self.debug_channels = debug_channels(["*"] if a.debug else a.debug_only, self.available_passes)
        return InstrumentOptions(time_passes=a.time_passes, print_ir_after=after,
                                 print_ir_after_all=a.print_ir_after_all, pattern_stats=a.pattern_stats,
                                 verify_each=a.verify_each, verify=not a.disable_verify,
                                 progress={"auto": None, "always": True, "never": False}[a.progress],
                                 print_debuginfo=a.print_debuginfo, print_ir_before=before,
                                 print_ir_before_all=a.print_ir_before_all,
                                 print_ir_after_change=a.print_ir_after_change,
                                 print_ir_after_failure=a.print_ir_after_failure, elide_elements=a.elide)

    def run(self) -> None:
        channels = self.debug_channels
        with Instrumentation(self.instrument_options) as inst, debugging(channels), \
                (collecting_remarks() if channels else collecting()) as remarks:
            self.inst, self.remarks = inst, remarks
            self.checking = False  # (MLIR's --verify-diagnostics: remarks are diagnostics to match)
            try:
                self.run_chunks()
            finally:
                if self.args.remarks is not None and not (self.checking and self.args.remarks == "-"):
                    write_remarks(remarks, self.args.remarks)

    def run_chunks(self) -> None:
        """xDSL's driver loop, with mlir-opt's conventions: the output file is written
        only once every chunk is done (atomically; a failure keeps the old file), and
        `--split-input-file` without `--verify-diagnostics` goes on after a chunk fails,
        reporting each failure (then `ChunksFailed`)."""
        chunks, file_extension = self.prepare_input()
        to_file = self.args.output_file not in (None, "-")
        if to_file and not os.path.isdir(os.path.dirname(os.path.abspath(self.args.output_file))):
            raise UserError(f"cannot write '{self.args.output_file}': No such file or directory")  # (before the passes)
        out = io.StringIO() if to_file else sys.stdout
        if self.args.verify_diagnostics:
            chunks = self.check_annotated(chunks, file_extension, out)
        failed = 0
        try:
            for i, (chunk, offset) in enumerate(chunks):
                try:
                    if i > 0:
                        out.write("// -----\n")
                    module = self.parse_chunk(chunk, file_extension, offset)
                    if module is not None:
                        self.apply_passes(module)
                        out.write(self.output_resulting_program(module))
                    out.flush()
                except (ParseError, DiagnosticException) as e:
                    if isinstance(e, ParseError):
                        e.span = dataclasses.replace(e.span, line_offset=offset)
                    if self.args.parsing_diagnostics if isinstance(e, ParseError) else self.args.verify_diagnostics:
                        print(e)
                        for note in getattr(e, "__notes__", []):
                            print(note)
                    elif self.args.split_input_file and len(chunks) > 1:
                        print(error_line(str(e).strip()), file=sys.stderr)  # (and on to the next chunk)
                        failed += 1
                    else:
                        raise
                finally:
                    chunk.close()
        except ShrinkException:
            assert self.args.shrink
            print("Success, can shrink")
            sys.exit(0)
        if failed:
            raise ChunksFailed(failed, len(chunks))
        if self.args.shrink:
            print("Failure, can't shrink")
            sys.exit(1)
        if to_file:
            assert isinstance(out, io.StringIO)
            write_output(self.args.output_file, out.getvalue())

    def check_annotated(self, chunks: list[tuple[IO[bytes], int]], file_extension: str,
                        out: IO[str]) -> list[tuple[IO[bytes], int]]:
        """--verify-diagnostics: an input with `expected-*` annotations is checked as
        mlir-opt checks it (`verify_chunks`), leaving no chunk to run; one without keeps
        xDSL's meaning (each chunk's error printed on stdout, exit 0): its chunks, unread."""
        texts = [(chunk.read(), offset) for chunk, offset in chunks]
        for chunk, _ in chunks:
            chunk.close()
        if not any(has_annotations(data) for data, _ in texts):
            return [(io.BytesIO(data), offset) for data, offset in texts]
        self.checking = True
        self.verify_chunks(texts, file_extension, out)
        return []

    def verify_chunks(self, chunks: list[tuple[bytes, int]], file_extension: str, out: IO[str]) -> None:
        """MLIR's `--verify-diagnostics` (`tools/verify_diagnostics.py`): each chunk's
        diagnostics - its parse, verifier or pass error, its remarks with --remarks, Python
        warnings - against its `expected-*` annotations; every mismatch reported on stderr,
        then DiagnosticsMismatch. A chunk without error prints its IR, as without the flag."""
        name = self.get_input_name()
        failed = 0
        for i, (data, offset) in enumerate(chunks):
            expected = expectations(data.decode("utf-8", "replace"), name, offset)
            produced, text = self.chunk_diagnostics(data, file_extension, offset)
            if text is not None:
                out.write(("// -----\n" if i > 0 else "") + text)
            problems = mismatches(expected, produced, name)
            for problem in problems:
                print(problem, file=sys.stderr)
            failed += bool(problems)
        if failed:
            raise DiagnosticsMismatch(failed, len(chunks))

    def chunk_diagnostics(self, data: bytes, file_extension: str, offset: int) -> tuple[list[Diagnostic], str | None]:
        """What compiling one chunk reports (its diagnostics) and prints (None: it failed)."""
        names: dict[str, tuple[int, str]] = {}
        produced: list[Diagnostic] = []
        text = None
        sink = getattr(self, "remarks", None)
        seen = len(sink) if sink is not None else 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                module = self.parse_chunk(io.BytesIO(data), file_extension, offset)
                if module is not None:
                    names = node_lines(module)
                    self.apply_passes(module)
                    text = self.output_resulting_program(module)
            except (ParseError, DiagnosticException) as e:
                if isinstance(e, ParseError) and not isinstance(e, SourceParseError):
                    e.span = dataclasses.replace(e.span, line_offset=offset)
                produced += diagnostics_of(e, names)
        if sink is not None and self.args.remarks is not None:
            produced += [remark_diagnostic(r.pass_name, r.kind, r.nodes, r.line(), names) for r in sink[seen:]]
        produced += [Diagnostic("warning", str(w.message)) for w in caught
                     if issubclass(w.category, (UserWarning, RuntimeWarning))]  # (not a library's deprecations)
        return produced, text

    def _phase(self, name: str):
        inst = getattr(self, "inst", None)
        return inst.phase(name) if inst is not None else contextlib.nullcontext()

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        """MLIR text through `tools.diagnostics.SourceParser` (ops keep their source
        positions; errors are `FILE:LINE:COL: error: ...`), other frontends as xDSL has them."""
        with self._phase("parse"):
            if (self.args.frontend or file_extension) != "mlir":
                return super().parse_chunk(chunk, file_extension, start_offset)
            return parse_mlir(self.ctx, chunk.read(), self.get_input_name(), start_offset,
                              not self.args.no_implicit_module)

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        if self.args.input_file == "-":  # standard input, as for mlir-opt
            self.args.input_file = None
        src = self.args.input_file
        ext = os.path.splitext(src)[1].lstrip(".") if src else "mlir"
        if not self.args.frontend and ext not in self.available_frontends:
            raise ValueError(f"'{src}': unknown input file extension '.{ext}' (npu-opt reads .mlir files)")
        return super().prepare_input()

    def _src_dir(self) -> str:
        src = self.args.input_file
        return os.path.dirname(os.path.abspath(src)) if src and src != "-" else os.getcwd()

    def apply_passes(self, prog: ModuleOp) -> None:
        attach_weights(prog, None, self._src_dir())  # loaded only if a pass needs values
        inst = getattr(self, "inst", None)
        if inst is None or self.args.print_between_passes:
            super().apply_passes(prog)  # (xDSL's own driver prints between passes)
        else:
            try:
                inst.run(self.pipeline.passes, self.ctx, prog)
            except VerifyException as e:  # the input's verification: at the op, in its file
                raise locate_verify_error(prog, e) from None
            except CompileError as e:  # a pass's diagnostic: at its op, when the op came from the file
                if e.op is None or source_span(e.op) is None:
                    raise
                raise DiagnosticException(locate(e.op, str(e))) from None
        out = self.args.output_file
        out_dir = os.path.dirname(os.path.abspath(out)) if out and out != "-" else os.getcwd()
        if is_dirty(prog):
            self._save_new_weights(prog, out_dir)
        elif out and out != "-" and self._src_dir() != out_dir:
            relocate(prog, self._src_dir(), out_dir)  # keep the weight file reachable

    def _save_new_weights(self, prog: ModuleOp, out_dir: str) -> None:
        """Passes folded new weights: save the ones the output refers to in
        --weights-file, else beside -o OUT (OUT-STEM.weights.npz), else, the IR going to
        standard output, as INPUT-STEM.npu-opt.weights.npz in the current directory
        (never the input's own weight file), named by a note on stderr and by its
        absolute path in the printed module."""
        out, src = self.args.output_file, self.args.input_file
        if _discarded(out):  # (-o /dev/null, or > /dev/null: nothing will read the IR or its weights)
            return
        to_stdout = not out or out == "-" or not os.path.isfile(out) and os.path.exists(out)  # (/dev/stdout)
        if self.args.weights_file:
            path = self.args.weights_file
        elif not to_stdout:
            path = os.path.join(out_dir, f"{os.path.splitext(os.path.basename(out))[0]}.weights.npz")
        else:
            stem = os.path.splitext(os.path.basename(src))[0] if src else "stdin"
            path = f"{stem}.npu-opt.weights.npz"
        with self._phase("write weights"):
            try:
                save_weights(path, referenced_weights(prog))
            except OSError as e:
                raise UserError(f"cannot write '{path}': {e.strerror or e}") from None
        if to_stdout:
            shown = os.path.abspath(path)
            print(f"note: the new weights the passes made are in '{shown}' (--weights-file FILE.npz "
                  "names another file)", file=sys.stderr)
        else:
            shown = os.path.relpath(os.path.abspath(path), out_dir)
        prog.attributes["npu.weights"] = StringAttr(shown)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        with self._phase("print"):
            if self.args.elide is not None and self.args.target == "mlir":
                out = io.StringIO()
                printer = ElidingPrinter(self.args.elide, stream=out, print_debuginfo=self.args.print_debuginfo,
                                         print_generic_format=self.args.print_op_generic,
                                         print_properties_as_attributes=self.args.print_no_properties)
                printer.print_op(prog)
                printer.print_metadata(self.ctx.loaded_dialects)
                out.write("\n\n")  # (as xDSL's mlir target ends)
                return strip_unknown_locs(out.getvalue())
            return strip_unknown_locs(super().output_resulting_program(prog))


def add_alias(parser: argparse.ArgumentParser, flag: str, alias: str) -> None:
    """Make `alias` another spelling of the registered option `flag` (listed beside it)."""
    action = parser._option_string_actions[flag]
    action.option_strings = [*action.option_strings, alias]
    parser._option_string_actions[alias] = action


def _count(text: str) -> int:
    """A non-negative integer option value (argparse's usage error otherwise)."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'")
    return n


def debug_channels(values: Sequence[str], passes: Mapping[str, object]) -> tuple[str, ...]:
    """The channels of repeated `--debug-only=A,B` options (`*`: all); an unknown one is
    a PipelineSyntaxError listing them."""
    names = tuple(n.strip() for v in values for n in v.split(",") if n.strip())
    known = {*passes, *CHANNELS, DEBUG_ALL}
    unknown = [n for n in names if n not in known]
    if unknown:
        near = difflib.get_close_matches(unknown[0], sorted(known), n=3, cutoff=0.75)
        maybe = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
        raise PipelineSyntaxError(f"--debug-only: unknown channel(s) {', '.join(unknown)}",
                                  f"hint: {maybe}the channels are the pass names (npu-opt --list-passes) and "
                                  f"{', '.join(CHANNELS)}")
    return names


def _discarded(out: str | None) -> bool:
    """The IR goes to /dev/null (`-o /dev/null`, or standard output redirected there)."""
    try:
        st = os.stat(out) if out and out != "-" else os.fstat(sys.stdout.fileno())
        null = os.stat(os.devnull)
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


class DiagnosticsMismatch(UserError):
    """--verify-diagnostics: chunks whose diagnostics do not match their annotations,
    each mismatch already reported (exit 1)."""

    def __init__(self, failed: int, total: int):
        what = f"{failed} of the {total} chunks" if total > 1 else "the input"
        super().__init__(f"--verify-diagnostics: the diagnostics of {what} do not match the expected-* annotations")


class ChunksFailed(UserError):
    """Chunks of --split-input-file failed, each already reported (exit 1)."""

    def __init__(self, failed: int, total: int):
        super().__init__(f"{failed} of the {total} chunks failed")


def main(argv: Sequence[str] | None = None) -> int:
    debug = os.environ.get("NPU_DEBUG") == "1"
    try:
        NpuOptMain(description="npu-compiler optimizer driver", args=argv).run()
    except SystemExit as e:
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # (standard output closed early, as by `| head`: not an error of ours)
        return 0
    except (ParseError, DiagnosticException, UserError) as e:  # (MLIR-style `FILE:LINE:COL: error: ...` when
        # located; UserError: an output file that cannot be written, ChunksFailed)
        if debug:
            raise
        print(error_line(str(e).strip()), file=sys.stderr)
        return 1
    except (PipelineSyntaxError, ArchError) as e:
        print(f"error: {e}", file=sys.stderr)
        if e.hint:
            print(e.hint, file=sys.stderr)
        return 2
    except ValueError as e:  # bad file extension, what xDSL's pipeline setup rejects
        if debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 1
    except PluginError as e:  # (an installed plugin that does not load)
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # (the input file)
        what = f"cannot open '{e.filename}': " if e.filename is not None else ""
        print(f"error: {what}{e.strerror or e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - a crash must still be a one-line diagnostic
        if debug:
            raise
        print(f"internal error: {type(e).__name__}: {e} (rerun with NPU_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1
    return 0


console_main = console(main, compile_only=True)
"""The `npu-opt` console script (`tools.cli.console`)."""

if __name__ == "__main__":
    console_main()

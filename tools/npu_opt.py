"""`npu-opt`: the xDSL opt driver with the npu dialects and passes.

Adds to `xdsl-opt`: MLIR's `--pass-pipeline='builtin.module(a,b{k=v})'`,
`--list-passes`, `--print-arch SPEC` (the machine a spec resolves to, as a chip
file), locations (ONNX node names) printed by default, weight side files relocated
when writing elsewhere, clean diagnostics (exit 1 bad input, 2 bad usage, 130
interrupted; tracebacks only with NPU_DEBUG=1). Observability (`lowering/instrument.py`,
on stderr): `--time-passes`, `--print-ir-after=PASS,...`, `--print-ir-after-all`,
`--pattern-stats`, a progress line after 2 s on a terminal (`--progress`). The IR is
verified as read and after the passes (`--verify-each`: after each). As mlir-opt:
`-` (or no file) reads standard input, an empty file is an empty module,
`--split-input-file` runs every chunk and reports each failure. `-o FILE` is written
atomically; new weights the passes fold go beside it (or to `--weights-file`; with the
IR on standard output, to a file a `note:` names).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import io
import os
import re
import stat
import sys
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
from lowering.instrument import Instrumentation, InstrumentOptions, print_after_names
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
from tools.diagnostics import locate, locate_verify_error, parse_mlir, source_span

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
                raise PipelineSyntaxError(f"unbalanced parentheses in --pass-pipeline '{text}'")
            t = t[len(anchor):-1].strip()
            break
    else:
        if "(" in t:
            raise PipelineSyntaxError(
                f"--pass-pipeline '{text}': only 'builtin.module(...)' is supported as anchor")
    if "(" in t:
        raise PipelineSyntaxError(f"--pass-pipeline '{text}': nested pass anchors are not supported")
    return t


def _spec_error(text: str, e: ArgSpecParseError) -> PipelineSyntaxError:
    """xDSL's pipeline syntax error (a multi-line rendering) as one line."""
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    column = lines[1].rsplit(":", 1)[-1] if len(lines) > 1 else "?"
    reason = lines[-1].strip() if len(lines) > 2 else "syntax error"
    return PipelineSyntaxError(f"bad pass pipeline '{text}': {reason[:1].lower() + reason[1:]} (column {column})")


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
    if name in STANDARD_SUMMARIES:
        return STANDARD_SUMMARIES[name]
    try:
        doc = (factory().__doc__ or "").strip().splitlines()
    except ImportError as e:
        return f"(unavailable: {e})"
    return doc[0] if doc else ""


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
    """`npu-opt --list-passes`: each pass with the first line of its docstring, then
    its options indented, one a line, with their types and defaults."""
    width = max((len(n) for n in available), default=0) + 2
    out = []
    for name, factory in sorted(available.items()):
        out.append(f"  {name:<{width}}{pass_summary(name, factory)}")
        try:
            out += [f"      {line}" for line in option_lines(factory())]
        except ImportError:
            pass  # (pass_summary said why)
    return "\n".join(out) + "\n"


class NpuOptMain(xDSLOptMain):
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
                                help="do not print locations (ONNX node names)")
        arg_parser.add_argument("--verify-each", action="store_true",
                                help="verify the IR after every pass, nested passes of npu-default too "
                                     "(default: the input, then once after the passes)")
        arg_parser.add_argument("--print-ir-after", action="append", default=[], metavar="PASS[,PASS]",
                                help="print the IR to stderr after each run of these passes "
                                     "(nested passes of npu-default too)")
        arg_parser.add_argument("--print-ir-after-all", action="store_true",
                                help="print the IR to stderr after every pass")
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
        if not self.args.no_debuginfo:
            self.args.print_debuginfo = True
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
        except ValueError as e:
            raise PipelineSyntaxError(str(e)) from None
        return InstrumentOptions(time_passes=a.time_passes, print_ir_after=after,
                                 print_ir_after_all=a.print_ir_after_all, pattern_stats=a.pattern_stats,
                                 verify_each=a.verify_each, verify=not a.disable_verify,
                                 progress={"auto": None, "always": True, "never": False}[a.progress],
                                 print_debuginfo=a.print_debuginfo)

    def run(self) -> None:
        with Instrumentation(self.instrument_options) as inst, collecting() as remarks:
            self.inst = inst
            try:
                self.run_chunks()
            finally:
                if self.args.remarks is not None:
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
            return strip_unknown_locs(super().output_resulting_program(prog))


def _discarded(out: str | None) -> bool:
    """The IR goes to /dev/null (`-o /dev/null`, or standard output redirected there)."""
    try:
        st = os.stat(out) if out and out != "-" else os.fstat(sys.stdout.fileno())
        null = os.stat(os.devnull)
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


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

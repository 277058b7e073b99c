"""MLIR-style diagnostics of `.mlir` input: `FILE:LINE:COL: error: MESSAGE`, then the
source line with a caret under the culprit, as `mlir-opt` prints them. xDSL keeps no
source position on the ops it parses, so `SourceParser` records where each op starts
(`source_span(op)`, weakly, beside the op: passes and printing never see it), and puts an
unknown op at its name and an undefined SSA value at its first use. With these:

- `parse_mlir(ctx, text, name)` parses, raising `SourceParseError` (a `ParseError`
  whose `str` is the MLIR-style diagnostic) for a syntax error or for text that is not
  UTF-8;
- `verify_located(module)` verifies, raising `SourceVerifyError` (a `VerifyException`,
  same notes) at the op that failed, located in its file when it was parsed from one
  (`locate_verify_error` for a VerifyException caught elsewhere);
- `locate(op, message)` puts any other diagnostic about an op (a pass's `CompileError`)
  at the op's position, when it has one.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import sys
import weakref
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.parser import ForwardDeclaredValue, Parser, ParserState, UnresolvedOperand
from xdsl.utils.exceptions import MultipleSpansParseError, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

_SPANS: weakref.WeakKeyDictionary[Operation, Span[Any]] = weakref.WeakKeyDictionary()


def source_span(op: Operation) -> Span[Any] | None:
    """Where `op` starts in the text it was parsed from (None: not parsed by SourceParser)."""
    return _SPANS.get(op)


CONTEXT_WIDTH = 160
"""A source line longer than this is shown as a window of it around the carets."""


def context_lines(span: Span[Any]) -> list[str]:
    """The source line(s) of `span` with carets under it (xDSL's rendering, without
    its location line); a long line cut to the CONTEXT_WIDTH columns around the carets."""
    lines = span.print_with_context(None).rstrip("\n").split("\n")[1:]
    if len(lines) != 2 or len(lines[0]) <= CONTEXT_WIDTH:
        return lines
    text, carets = lines
    at = len(carets) - len(carets.lstrip())
    start = max(0, min(at - CONTEXT_WIDTH // 4, len(text) - CONTEXT_WIDTH))
    head, tail = ("..." if start else ""), ("..." if start + CONTEXT_WIDTH < len(text) else "")
    return [head + text[start:start + CONTEXT_WIDTH] + tail,
            " " * len(head) + carets[start:start + CONTEXT_WIDTH].rstrip() or "^"]


def diagnostic(span: Span[Any], message: str, severity: str = "error") -> str:
    """`FILE:LINE:COL: error: MESSAGE` and the source context, one string."""
    return "\n".join([f"{span.get_location()}: {severity}: {message}", *context_lines(span)])


@dataclasses.dataclass
class SourceParseError(ParseError):
    """A ParseError printed MLIR-style (`FILE:LINE:COL: error: ...`, then the source),
    with `notes` (other places it refers to) after."""

    notes: list[tuple[Span[Any], str]] = dataclasses.field(default_factory=list)
    hint: str | None = None

    def __str__(self) -> str:
        return "\n".join([diagnostic(self.span, self.msg),
                          *(diagnostic(span, msg, "note") for span, msg in self.notes),
                          *([self.hint] if self.hint else [])])


class SourceVerifyError(VerifyException):
    """A verifier error at the op that failed: `FILE:LINE:COL: error: ...` and the source
    line when the op was parsed from a file, else the message as xDSL gave it."""


class _Lexer(MLIRLexer):
    """xDSL's lexer with its string-literal pattern made possessive: xDSL 0.75 nests `+` in
    `*`, so an unterminated string on a long line backtracked exponentially (npu-opt hung
    on `loc("conv1)` followed by a long line). The same strings match."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')


_CLEARER = {"End of file reached before closing string literal.":
            "unterminated string literal: no closing '\"' on this line"}
"""xDSL's messages that say something else than what is wrong."""


class SourceParser(Parser):
    """xDSL's parser recording each op's start (`source_span`) and the first use of each
    forward-referenced SSA value. `line_offset` is added to reported line numbers (a
    chunk of `--split-input-file`)."""

    def __init__(self, ctx: Context, text: str, name: str = "<unknown>", line_offset: int = 0):
        super().__init__(ctx, "", name)
        self._parser_state = ParserState(_Lexer(Input(text, name)))  # (xDSL's Parser builds an MLIRLexer)
        self.line_offset = line_offset
        self.first_use: dict[str, Span[Any]] = {}
        self.forward_names: dict[SSAValue, str] = {}

    def _span(self, span: Span[Any]) -> Span[Any]:
        return dataclasses.replace(span, line_offset=self.line_offset) if self.line_offset else span

    def parse_operation(self) -> Operation:
        start = self._span(self._current_token.span)
        op = super().parse_operation()
        _SPANS[op] = start
        return op

    def _get_op_by_name(self, name: str) -> type[Operation]:
        """xDSL's, an unknown op reported at its name (xDSL points past it) with a hint."""
        if (op := self.ctx.get_optional_op(name, dialect_stack=self._parser_state.dialect_stack)) is not None:
            return op
        here = self._current_token.span
        at = here.input.content.rfind(name, 0, here.start)
        span = Span(at, at + len(name), here.input) if at >= 0 else here
        raise SourceParseError(self._span(span), f"unknown operation '{name}'", hint=self._op_hint(name))

    def _op_hint(self, name: str) -> str:
        dialect = self.ctx.get_optional_dialect(name.split(".", 1)[0]) if "." in name else None
        if dialect is None:
            return f"hint: the dialects are {', '.join(sorted(self.ctx.registered_dialect_names))}"
        ops = [op.name.split(".", 1)[1] for op in dialect.operations]
        near = difflib.get_close_matches(name.split(".", 1)[1], ops, n=3, cutoff=0.7)
        if near:
            return f"hint: did you mean {' or '.join(repr(f'{dialect.name}.{n}') for n in near)}?"
        return f"hint: the {dialect.name} ops are {', '.join(sorted(ops))}"

    def _parse_block(self) -> Block:
        if self._current_token.kind == MLIRTokenKind.EOF:  # (xDSL's message: " in block definition")
            self.raise_error("unexpected end of input: a region is not closed by '}'")
        return super()._parse_block()

    def resolve_operand(self, operand: UnresolvedOperand, type):  # noqa: ANN001 - xDSL's generic signature
        name = operand.operand_name
        if name not in self.ssa_values and name not in self.first_use:
            self.first_use[name] = self._span(operand.span)
        value = super().resolve_operand(operand, type)
        if isinstance(value, ForwardDeclaredValue):
            self.forward_names[value] = name
        return value

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        if self._current_token.kind == MLIRTokenKind.EOF and allow_implicit_module:
            return ModuleOp([])  # an empty file (or only comments) is an empty module, as in mlir-opt
        try:
            module = super().parse_module(allow_implicit_module)
            self._check_resolved(module)
            return module
        except SourceParseError:
            raise
        except ParseError as e:
            undefined = [n for n in self.forward_ssa_references if n in self.first_use]
            if undefined and e.msg.startswith("values used but not defined"):
                first = min(undefined, key=lambda n: self.first_use[n].start)
                raise SourceParseError(self.first_use[first], f"use of undefined value '%{first}'") from None
            notes = ([(self._span(span), msg or e.ref_text or "") for span, msg in e.refs]
                     if isinstance(e, MultipleSpansParseError) else [])
            msg = _CLEARER.get(e.msg, e.msg)
            raise SourceParseError(self._span(e.span), msg, notes) from None
        except RecursionError:  # (each level of brackets or regions takes Python stack frames)
            raise SourceParseError(self._span(self._current_token.span),
                                   "nesting too deep: brackets or regions nested past the parser's "
                                   f"recursion limit ({sys.getrecursionlimit()} frames)") from None
        except (NotImplementedError, ValueError, TypeError, KeyError, IndexError) as e:
            # xDSL tripping over the text itself (`array<i645: 2>` is a NotImplementedError)
            why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise SourceParseError(self._span(self._current_token.span), f"cannot parse what precedes this point "
                                                                          f"({why})") from e


    def _check_resolved(self, module: ModuleOp) -> None:
        """No operand may still be a forward reference: xDSL lets one through when its name
        is defined only inside a region of the op using it (`scf.for %i = %a to %i`)."""
        for op in module.walk():
            for operand in op.operands:
                if isinstance(operand, ForwardDeclaredValue):
                    name = self.forward_names.get(operand, "?")
                    span = self.first_use.get(name) or source_span(op) or self._current_token.span
                    raise SourceParseError(span, f"use of undefined value '%{name}' (not defined where it is used)")


def parse_mlir(ctx: Context, text: str | bytes, name: str, line_offset: int = 0,
               allow_implicit_module: bool = True) -> ModuleOp:
    """Parse `text` (from file `name`) with `SourceParser`; raises SourceParseError."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            good = text[:e.start].decode("utf-8")
            at = Span(len(good), len(good) + 1, Input(good + "\ufffd" + text[e.end:].decode("utf-8", "replace"),
                                                      name), line_offset)
            raise SourceParseError(at, f"the file is not UTF-8 text (byte 0x{text[e.start]:02x})") from None
    return SourceParser(ctx, text, name, line_offset).parse_module(allow_implicit_module)


def locate(op: Operation | None, message: str) -> str:
    """`message` (one line, `error: ...` or not) put at `op`'s source position, with the
    source context after it; unchanged when the op was not parsed from text."""
    span = source_span(op) if op is not None else None
    if span is None:
        return message
    return diagnostic(span, message.removeprefix("error: "))


def failing_op(module: Operation, message: str) -> Operation | None:
    """The op whose own verification (nested ops left out) fails with `message`, else the
    first op failing at all, in the order `verify` visits them (parents first)."""
    first: Operation | None = None
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            if str(e) == message:
                return op
            first = first or op
    return first


def locate_verify_error(module: Operation, e: VerifyException) -> VerifyException:
    """`e` (from verifying `module`) as a SourceVerifyError at the op that failed; `e`
    itself when that op was not parsed from text. The located error drops `e`'s notes:
    xDSL's note is the whole module printed generically with the message under the op
    (`Operation does not verify: ...`), which the source line and caret replace."""
    message = str(e)
    op = failing_op(module, message)
    if op is None or source_span(op) is None:
        return e
    return SourceVerifyError(locate(op, message))


def verify_located(module: ModuleOp) -> None:
    """`module.verify()`, a failure raised as `locate_verify_error` gives it."""
    try:
        module.verify()
    except VerifyException as e:
        raise locate_verify_error(module, e) from None

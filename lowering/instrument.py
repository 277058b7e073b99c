"""Compile observability, as MLIR's pass instrumentations give it: per-pass wall
time (`--time-passes`, nested pipelines such as `npu-default` broken into their
passes, verification shown apart), IR dumps before or after named passes or all of
them, after a change or a failure (`--print-ir-before/after[-all]`, `-after-change`,
`-after-failure`; large literals elided by `ElidingPrinter`), pattern firing counts per
pass (`--pattern-stats`), named debug channels (`debug(channel, message)`,
`--debug-only=CHANNEL`) and a progress line on long compiles when stderr is a terminal.

Tools run a pass list with `run_pipeline(passes, ctx, module, options)` (or build an
`Instrumentation` to time their own phases too, as `npu-opt` times parsing and
printing); a pass that runs a nested pipeline runs it with `run_nested`; pattern-based
passes walk with `PatternWalker`, which counts firings while stats are on.

Verification: the input once, then once after the last pass; after every pass
(nested ones too) with `verify_each`.

Algorithm
---------
The active `Instrumentation` is a context variable, so a nested pipeline and the
walkers inside passes find it without threading it through pass options. Times
form a tree (phase -> nested passes -> verify), each node inclusive of its
children, printed like MLIR's `-mlir-timing` report. Pattern counting wraps the
walker's pattern for the duration of one walk: a greedy applier's patterns are
wrapped one by one, so the pattern that acted on an op is the one counted (an op
the applier erased as dead is counted apart). The progress line is drawn by a
daemon thread every PROGRESS_INTERVAL s once PROGRESS_DELAY s have passed (the
passes hold the GIL only between bytecodes); it is cleared before anything else
is written to the stream. A nested pipeline run outside any instrumentation
(`compile_module`) verifies its own end. Debug channels are a context variable too: a
pass's channel is its name and prints its remarks as it makes them (`collecting_remarks`),
`pipeline` each pass as it starts, `greedy-rewriter` each rewrite a PatternWalker makes.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import IO, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Attribute, Operation, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from lowering import verify_later
from lowering.errors import CompileError
from lowering.remarks import Remark
from npu_dialects import strip_unknown_locs
from npu_dialects.locs import node_names

PROGRESS_DELAY = float(os.environ.get("NPU_PROGRESS_AFTER", "2"))
"""Seconds a compile runs before the progress line appears (env NPU_PROGRESS_AFTER)."""
PROGRESS_INTERVAL = 0.25
"""Seconds between redraws of the progress line."""
VERIFY = "verify"
"""The time report's row of verification (one per level: input and end, or after each pass)."""
DEAD_OP = "(dead op erased)"
"""The pattern-stats label of ops a greedy applier erased as trivially dead."""


@dataclass(frozen=True)
class InstrumentOptions:
    """What to observe. `progress`: None draws the line only when the stream is a
    terminal; `verify`: False verifies nothing (npu-opt --disable-verify)."""

    time_passes: bool = False
    print_ir_after: tuple[str, ...] = ()
    print_ir_after_all: bool = False
    pattern_stats: bool = False
    verify_each: bool = False
    verify: bool = True
    progress: bool | None = None
    print_debuginfo: bool = True
    keep_after: tuple[str, ...] = ()  # passes after which a copy of the module is kept (`Instrumentation.kept`)
    print_ir_before: tuple[str, ...] = ()
    print_ir_before_all: bool = False
    print_ir_after_change: bool = False  # (alone: after every pass that changed the IR)
    print_ir_after_failure: bool = False
    elide_elements: int | None = None  # dense literals of more elements print as `dense_resource<__elided__>`

    def dumps_after(self, pass_name: str) -> bool:
        """Whether the IR is printed after `pass_name` (when it changed, with `print_ir_after_change`)."""
        if self.print_ir_after_all or pass_name in self.print_ir_after:
            return True
        return self.print_ir_after_change and not self.print_ir_after

    def dumps_before(self, pass_name: str) -> bool:
        return self.print_ir_before_all or pass_name in self.print_ir_before


@dataclass
class TimerNode:
    """One row of the time report: inclusive seconds, how often it ran, its rows below."""

    name: str
    seconds: float = 0.0
    count: int = 0
    children: dict[str, TimerNode] = field(default_factory=dict)

    def child(self, name: str) -> TimerNode:
        if name not in self.children:
            self.children[name] = TimerNode(name)
        return self.children[name]


@dataclass
class PatternCount:
    tried: int = 0
    fired: int = 0


_ACTIVE: ContextVar[Instrumentation | None] = ContextVar("npu_instrumentation", default=None)


def active() -> Instrumentation | None:
    """The instrumentation the current compile runs under, if any."""
    return _ACTIVE.get()


@contextlib.contextmanager
def unobserved() -> Iterator[None]:
    """Run passes unseen by the active instrumentation (a pass's internal trial plan:
    its patterns and timings are not the compile's)."""
    token = _ACTIVE.set(None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


class Instrumentation:
    """Observes one compile: call `phase` around the tool's own steps, `run` for the
    pipeline, then `report` (or use it as a context manager, which reports on exit)."""

    def __init__(self, options: InstrumentOptions = InstrumentOptions(), stream: IO[str] | None = None,
                 progress_delay: float | None = None) -> None:
        self.options = options
        self.stream = stream if stream is not None else sys.stderr
        self.root = TimerNode("Total")
        self._stack = [self.root]
        self.passes: list[str] = []  # the running pass and the passes it runs in
        self.patterns: dict[str, dict[str, PatternCount]] = {}
        self.kept: dict[str, ModuleOp] = {}  # pass name -> the module after it (`keep_after`)
        self.start = time.perf_counter()
        show = options.progress if options.progress is not None else _isatty(self.stream)
        delay = PROGRESS_DELAY if progress_delay is None else progress_delay
        self.progress = Progress(self.stream, delay) if show else None
        self.end_verified = False  # (within `run`, which verifies after the last pass)
        self._token = None

    def __enter__(self) -> Instrumentation:
        self._token = _ACTIVE.set(self)
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, kind, value, tb) -> None:
        if self.progress is not None:
            self.progress.stop()
        if self._token is not None:
            _ACTIVE.reset(self._token)
            self._token = None
        if kind is None:
            self.report()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time a step (a pass, parsing, printing) as a row under the current one."""
        node = self._stack[-1].child(name)
        self._stack.append(node)
        t = time.perf_counter()
        try:
            yield
        finally:
            node.seconds += time.perf_counter() - t
            node.count += 1
            self._stack.pop()

    def add_parallel(self, name: str, seconds: float) -> None:
        """A row for work done in another process beside the current step (its wall
        seconds; the rows above it do not include them)."""
        node = self._stack[-1].child(name)
        node.seconds += seconds
        node.count += 1

    def run(self, passes: Sequence[ModulePass], ctx: Context, module: ModuleOp, verify_input: bool = True) -> None:
        """Apply a top-level pass list: verify the input, run the passes, verify the end."""
        if verify_input and self.options.verify:
            with self.phase(VERIFY):
                module.verify()  # (a bad input is the user's: its own message, no pass named)
        self.end_verified = self.options.verify and not self.options.verify_each
        try:
            self.run_passes(passes, ctx, module, self.options.verify_each)
        finally:
            self.end_verified = False
        if passes and self.options.verify and not self.options.verify_each:
            names = ",".join(p.name for p in passes)
            try:
                self.verify(module, names, "IR does not verify after the passes (--verify-each verifies after "
                                           "each one, naming the pass at fault)")
            except CompileError as e:
                self.dump_failure(names, module, e)
                raise

    def run_passes(self, passes: Sequence[ModulePass], ctx: Context, module: ModuleOp, verify_each: bool) -> None:
        """Apply `passes` in order as rows under the current one (timed, dumped, counted)."""
        for i, p in enumerate(passes):
            if self.progress is not None:
                self.progress.update(" > ".join([*self.passes, p.name]) + f" ({i + 1}/{len(passes)})")
            if self.options.dumps_before(p.name):
                self.dump(f"Before {p.name}", module)
            before = self.ir(module) if self.options.print_ir_after_change and self.options.dumps_after(p.name) \
                else None
            debug(PIPELINE_CHANNEL, f"running {' > '.join([*self.passes, p.name])} ({i + 1}/{len(passes)})")
            try:
                with self.phase(p.name), running(p.name):
                    self.passes.append(p.name)
                    try:
                        p.apply(ctx, module)
                    finally:
                        self.passes.pop()
                self.print_after(p.name, module, before)
                if p.name in self.options.keep_after:
                    self.kept[p.name] = module.clone()
                if verify_each and self.options.verify:
                    self.verify(module, p.name, "IR does not verify after the pass")
            except BaseException as e:
                self.dump_failure(p.name, module, e)
                raise

    def verify(self, module: ModuleOp, pass_name: str, message: str) -> None:
        """Verify `module` (timed as `verify`), a failure a CompileError naming `pass_name`."""
        with self.phase(VERIFY):
            try:
                module.verify()
            except VerifyException as e:
                raise CompileError(pass_name, f"{message}: {e}") from e

    def ir(self, module: ModuleOp) -> str:
        """`module` as the dumps print it (locations, elision as the options say)."""
        return ir_text(module, self.options.print_debuginfo, self.options.elide_elements)

    def dump(self, what: str, module: ModuleOp, text: str | None = None) -> None:
        """`// -----// IR Dump After npu-tile (in npu-default) //----- //` and the IR."""
        where = f" (in {' > '.join(self.passes)})" if self.passes else ""
        self.write(f"// -----// IR Dump {what}{where} //----- //\n"
                   + (self.ir(module) if text is None else text) + "\n")

    def print_after(self, pass_name: str, module: ModuleOp, before: str | None = None) -> None:
        """The dump after a pass, if asked for (`before`: the IR before it, to print only a change)."""
        if not self.options.dumps_after(pass_name):
            return
        text = self.ir(module) if before is not None else None
        if text is not None and text == before:
            debug(PIPELINE_CHANNEL, f"{pass_name} did not change the IR")
            return
        self.dump(f"After {pass_name}", module, text)

    def dump_failure(self, pass_name: str, module: ModuleOp, e: BaseException) -> None:
        """With `print_ir_after_failure`, the IR as the failing pass left it (once: the
        pipeline a nested pass runs in fails with it)."""
        if not self.options.print_ir_after_failure or getattr(e, "_npu_ir_dumped", False) \
                or isinstance(e, KeyboardInterrupt):
            return
        try:
            text = self.ir(module)
        except Exception as pe:  # noqa: BLE001 - IR a pass left half-rewritten may not print
            text = f"(the IR does not print: {type(pe).__name__}: {pe})\n"
        self.dump(f"After {pass_name} Failed", module, text)
        with contextlib.suppress(AttributeError, TypeError):
            setattr(e, "_npu_ir_dumped", True)

    def count(self, label: str) -> PatternCount:
        """The pattern counter of `label` in the running pass."""
        per_pass = self.patterns.setdefault(self.passes[-1] if self.passes else "(no pass)", {})
        if label not in per_pass:
            per_pass[label] = PatternCount()
        return per_pass[label]

    def write(self, text: str) -> None:
        """Write to the stream (the progress line erased first, redrawn at its next tick)."""
        with self.progress.quiet() if self.progress is not None else contextlib.nullcontext():
            self.stream.write(text)
            self.stream.flush()

    def report(self) -> None:
        """Print the requested reports (time, pattern statistics) to the stream."""
        self.root.seconds = time.perf_counter() - self.start
        if self.options.time_passes:
            self.write(time_report(self.root))
        if self.options.pattern_stats:
            self.write(pattern_report(self.patterns))


def timed(name: str) -> contextlib.AbstractContextManager[None]:
    """A row `name` in the active instrumentation's time report around a step outside
    the pipeline (loading, importing, packaging, writing); nothing without one."""
    inst = _ACTIVE.get()
    return inst.phase(name) if inst is not None else contextlib.nullcontext()


@contextlib.contextmanager
def running(pass_name: str) -> Iterator[None]:
    """Mark `pass_name` as the running pass (RUNNING_PASS) for the duration."""
    token = RUNNING_PASS.set(pass_name)
    try:
        yield
    finally:
        RUNNING_PASS.reset(token)


def run_pipeline(passes: Sequence[ModulePass], ctx: Context, module: ModuleOp,
                 options: InstrumentOptions = InstrumentOptions(), stream: IO[str] | None = None,
                 verify_input: bool = True) -> Instrumentation:
    """Apply `passes` to `module` under a new instrumentation with `options`, print its
    reports to `stream` (stderr) and return it (its `root` holds the times)."""
    with Instrumentation(options, stream) as inst:
        inst.run(passes, ctx, module, verify_input)
    return inst


def run_nested(owner: str, passes: Sequence[ModulePass], ctx: Context, module: ModuleOp,
               verify_each: bool) -> None:
    """Apply a pass's nested pipeline, verifying after each pass (`verify_each`) or once
    at the end, naming `owner`. Under the active instrumentation each pass is its own
    row, and the end is left to `Instrumentation.run` when it verifies there."""
    inst = active()
    if inst is not None:
        each = verify_each or inst.options.verify_each
        inst.run_passes(passes, ctx, module, each)
        message = ("IR does not verify after the pass (--verify-each verifies after each of its passes, naming "
                   "the one at fault)")
        if not each and inst.options.verify and not inst.end_verified \
                and not verify_later.start(module, owner, message):
            inst.verify(module, owner, message)
        return
    for p in passes:
        with running(p.name):
            p.apply(ctx, module)
        if verify_each:
            verify_after(p.name, module)
    if not verify_each and not verify_later.start(module, owner, "IR does not verify after the pass"):
        verify_after(owner, module)


def verify_after(pass_name: str, module: ModuleOp) -> None:
    """Verify `module`, a failure a CompileError naming `pass_name`."""
    try:
        module.verify()
    except VerifyException as e:
        raise CompileError(pass_name, f"IR does not verify after the pass: {e}") from e


def ir_text(module: Operation, debuginfo: bool = True, elide: int | None = None) -> str:
    """`module` as MLIR text (with its ONNX-node locations when `debuginfo`; dense
    literals of more than `elide` elements elided, as `ElidingPrinter` prints them)."""
    buf = io.StringIO()
    printer = Printer(stream=buf, print_debuginfo=debuginfo) if elide is None else \
        ElidingPrinter(elide, stream=buf, print_debuginfo=debuginfo)
    printer.print_op(module)
    buf.write("\n")
    return strip_unknown_locs(buf.getvalue())


class ElidingPrinter(Printer):
    """xDSL's printer, a dense elements literal of more than `limit` elements (not a
    splat) printed as MLIR's `--mlir-elide-elementsattrs-if-larger` prints it:
    `dense_resource<__elided__> : tensor<...>` (text that parses, without the values)."""

    def __init__(self, limit: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.elide_limit = limit

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and not attribute.is_splat() \
                and len(attribute) > self.elide_limit:
            self.print_string("dense_resource<__elided__> : ")
            self.print_attribute(attribute.type)
            return
        super().print_attribute(attribute)


RULE = "===" + "-" * 73 + "===\n"


def time_report(root: TimerNode) -> str:
    """The time tree as MLIR's `-mlir-timing` prints it (wall seconds, share of the total)."""
    total = root.seconds or 1e-9
    lines = [RULE, f"{'... Execution time report ...':^79}\n", RULE,
             f"  Total Execution Time: {root.seconds:.4f} seconds\n\n", "  ----Wall Time----  ----Name----\n"]

    def rows(node: TimerNode, depth: int) -> None:
        for c in sorted(node.children.values(), key=lambda c: c.name == VERIFY):  # (verification last)
            times = f" ({c.count}x)" if c.count > 1 else ""
            lines.append(f"  {c.seconds:8.4f} ({100 * c.seconds / total:5.1f}%)  {'  ' * depth}{c.name}{times}\n")
            rows(c, depth + 1)

    rows(root, 0)
    lines.append(f"  {root.seconds:8.4f} (100.0%)  Total\n")
    return "".join(lines)


def pattern_report(patterns: dict[str, dict[str, PatternCount]]) -> str:
    """Per pass, each pattern's firings (rewrites made) and tries (ops it was offered)."""
    lines = [RULE, f"{'... Pattern statistics report ...':^79}\n", RULE]
    if not patterns:
        lines.append("  (no pattern-based pass ran)\n")
    for pass_name, counts in patterns.items():
        lines.append(f"{pass_name}\n    fired     tried  pattern\n")
        for label, c in sorted(counts.items(), key=lambda kv: (-kv[1].fired, kv[0])):
            tried = "-" if label == DEAD_OP else c.tried  # (no pattern was offered the op)
            lines.append(f"  {c.fired:7d} {tried:>9}  {label}\n")
    return "".join(lines)


# ----------------------------------------------------------------------------------------
# Pattern counting
# ----------------------------------------------------------------------------------------


def pattern_label(p: RewritePattern) -> str:
    """A pattern's name in the statistics: its `label` if it has one (a parametrised
    pattern telling its instances apart), else its class name."""
    if isinstance(p, (CountedPattern, TracedPattern)):
        return pattern_label(p.inner)
    label = getattr(p, "label", None)
    return label if isinstance(label, str) else type(p).__name__


class CountedPattern(RewritePattern):
    """`inner`, counting each op offered to it and each time it rewrote one."""

    def __init__(self, inner: RewritePattern, counter: PatternCount) -> None:
        self.inner, self.counter = inner, counter

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        before = rewriter.has_done_action
        self.counter.tried += 1
        self.inner.match_and_rewrite(op, rewriter)
        if rewriter.has_done_action and not before:
            self.counter.fired += 1


class CountedApplier(RewritePattern):
    """A greedy applier whose patterns are counted one by one; an action none of them
    took (a dead op the applier erased) is counted as DEAD_OP."""

    def __init__(self, applier: GreedyRewritePatternApplier, inst: Instrumentation | PatternTally) -> None:
        self.patterns = [counting(p, inst) for p in applier.rewrite_patterns]
        self.applier = GreedyRewritePatternApplier(list(self.patterns), applier.ctx,
                                                   folding_enabled=applier.folding_enabled,
                                                   dce_enabled=applier.dce_enabled)
        self.inst = inst

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        fired = sum(p.counter.fired for p in self.patterns if isinstance(p, CountedPattern))
        self.applier.match_and_rewrite(op, rewriter)
        now = sum(p.counter.fired for p in self.patterns if isinstance(p, CountedPattern))
        if rewriter.has_done_action and now == fired:
            self.inst.count(DEAD_OP).fired += 1


def counting(p: RewritePattern, inst: Instrumentation | PatternTally) -> RewritePattern:
    """`p` wrapped to count its firings in the running pass (or in `inst`, a tally)."""
    if isinstance(p, CountedApplier):
        p = p.applier
    if isinstance(p, GreedyRewritePatternApplier):
        return CountedApplier(p, inst)
    return CountedPattern(p, inst.count(pattern_label(p)))


DISABLED_PATTERNS: ContextVar[frozenset[str]] = ContextVar("npu_disabled_patterns", default=frozenset())
"""Pattern labels no `PatternWalker` applies (the pattern-level switch `npu-bisect` uses;
also `NPU_DISABLE_PATTERNS=label,...` in the environment, for reproducing)."""


def print_after_names(values: Sequence[str], available: Iterable[str], flag: str = "--print-ir-after") -> tuple[str, ...]:
    """The passes of repeated `--print-ir-after=A,B` options (or `flag`'s); an unknown
    one is a ValueError."""
    names = tuple(n.strip() for v in values for n in v.split(",") if n.strip())
    known = set(available)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"{flag}: unknown pass(es) {', '.join(unknown)} "
                         "(npu-opt --list-passes lists them)")
    return names


def disabled_patterns() -> frozenset[str]:
    env = os.environ.get("NPU_DISABLE_PATTERNS", "")
    return DISABLED_PATTERNS.get() | frozenset(x.strip() for x in env.split(",") if x.strip())


def without(p: RewritePattern, disabled: frozenset[str]) -> RewritePattern | None:
    """`p` without the patterns labelled in `disabled` (None: nothing left)."""
    if isinstance(p, GreedyRewritePatternApplier):
        kept = [q for q in p.rewrite_patterns if pattern_label(q) not in disabled]
        return GreedyRewritePatternApplier(kept, p.ctx, folding_enabled=p.folding_enabled,
                                           dce_enabled=p.dce_enabled) if kept else None
    return None if pattern_label(p) in disabled else p


MAX_ITERATIONS = 10
"""Walks over a region a recursive `PatternWalker` makes while they still change it
(MLIR's `GreedyRewriteConfig::maxIterations` default)."""
REWRITES_PER_OP = 64
"""Rewrites one walk may make per op it starts with (and one more): a pattern set that
keeps rewriting what it creates never empties the worklist (MLIR's `maxNumRewrites`,
scaled by the region)."""
STILL_FIRING_PROBE = 32
"""Rewrites watched, once a limit is hit, to name the patterns still firing."""
RUNNING_PASS: ContextVar[str] = ContextVar("npu_running_pass", default="")
"""The pass being applied, for diagnostics of code that does not know its pass."""


class PatternWalker(PatternRewriteWalker):
    """xDSL's `PatternRewriteWalker`, skipping the patterns switched off by label
    (`DISABLED_PATTERNS`), reporting how often each pattern fires to the active
    instrumentation when `--pattern-stats` is on, and bounded as MLIR's greedy driver
    is: at most MAX_ITERATIONS walks that change the region, at most REWRITES_PER_OP
    rewrites per op in one walk; past either, a CompileError naming the running pass
    and the patterns still firing (every pattern-based pass walks with it)."""

    def rewrite_region(self, region: Region) -> bool:
        inst = active()
        disabled = disabled_patterns()
        stats = inst is not None and inst.options.pattern_stats
        traced = debug_enabled(GREEDY_CHANNEL)
        if not (stats or disabled or traced):
            return self._walk(region)
        saved = self.pattern
        pattern = without(saved, disabled) if disabled else saved
        if pattern is None:
            return False
        if traced:
            pattern = tracing(pattern)
        self.pattern = counting(pattern, inst) if stats and inst is not None else pattern
        try:
            return self._walk(region)
        finally:
            self.pattern = saved

    def _walk(self, region: Region) -> bool:
        """xDSL's walk loop with the iteration and rewrite limits."""
        listener = self._get_rewriter_listener()
        changed_any = False
        for _ in range(MAX_ITERATIONS if self.apply_recursively else 1):
            self._populate_worklist(region)
            budget = REWRITES_PER_OP * (len(self._worklist._map) + 1)  # (the ops it walks)
            if (done := self._apply(listener, budget + 1)) > budget:
                self._not_converged(listener, f"the rewrites did not converge: {budget} rewrites in one walk "
                                              f"over the IR ({REWRITES_PER_OP} per op)")
            changed = done > 0
            if self.post_walk_func is not None:
                changed |= self.post_walk_func(region, listener)
            changed_any |= changed
            if not changed or not self.apply_recursively:
                return changed_any
        self._populate_worklist(region)
        self._not_converged(listener, f"the rewrites did not converge in {MAX_ITERATIONS} walks over the IR")

    def _apply(self, listener: PatternRewriterListener, limit: int) -> int:
        """Apply the pattern to the worklist's ops until it is empty or `limit` of them
        were rewritten; the number rewritten."""
        done = 0
        rewriter: PatternRewriter | None = None
        while self._worklist and done < limit:
            op = self._worklist.pop()
            if rewriter is None:
                rewriter = PatternRewriter(op)
                rewriter.extend_from_listener(listener)
            rewriter.has_done_action = False
            rewriter.current_operation = op
            rewriter.insertion_point = InsertPoint.before(op)
            rewriter.name_hint = None
            try:
                self.pattern.match_and_rewrite(op, rewriter)
            except Exception as err:
                op.emit_error(f"Error while applying pattern: {err}", underlying_error=err)
            done += rewriter.has_done_action
        return done

    def _not_converged(self, listener: PatternRewriterListener, what: str) -> NoReturn:
        """Raise the CompileError of a walk that does not stop, naming the patterns that
        fire in STILL_FIRING_PROBE more rewrites of the current worklist."""
        tally = PatternTally()
        self.pattern = counting(self.pattern, tally)
        self._apply(listener, STILL_FIRING_PROBE)
        fired = sorted(((c.fired, label) for label, c in tally.counts.items() if c.fired), reverse=True)
        names = ", ".join(f"{label} ({n}x in {STILL_FIRING_PROBE} rewrites)" for n, label in fired) or "none"
        raise CompileError(RUNNING_PASS.get() or "greedy rewrite",
                           f"{what}; patterns still firing: {names} (a pattern that recreates what it "
                           "matched, or patterns that undo each other)")


class PatternTally:
    """Pattern firing counts outside any instrumentation (`counting` takes it)."""

    def __init__(self) -> None:
        self.counts: dict[str, PatternCount] = {}

    def count(self, label: str) -> PatternCount:
        return self.counts.setdefault(label, PatternCount())


# ----------------------------------------------------------------------------------------
# Debug channels (`--debug-only=CHANNEL,...`, `--debug`)
# ----------------------------------------------------------------------------------------

DEBUG_CHANNELS: ContextVar[frozenset[str]] = ContextVar("npu_debug_channels", default=frozenset())
"""The enabled channels (`DEBUG_ALL`: every one)."""
DEBUG_ALL = "*"
PIPELINE_CHANNEL = "pipeline"
"""Each pass as it starts (nested ones with their pipeline), a dump skipped as unchanged."""
GREEDY_CHANNEL = "greedy-rewriter"
"""Each rewrite a `PatternWalker` makes: the pass, the pattern and the op (MLIR's channel name)."""
CHANNELS = {PIPELINE_CHANNEL: "each pass as it starts, and a dump skipped because the pass changed nothing",
            GREEDY_CHANNEL: "each rewrite a pattern makes: pass, pattern, op and its ONNX nodes"}
"""The channels besides the passes' own (a pass's channel is its name: its remarks as it makes them)."""


def debug_enabled(channel: str) -> bool:
    """Whether `debug(channel, ...)` prints (one context-variable read when nothing is on)."""
    on = DEBUG_CHANNELS.get()
    return bool(on) and (channel in on or DEBUG_ALL in on)


def debug(channel: str, message: str) -> None:
    """`[channel] message` on stderr (through the active instrumentation: the progress
    line erased first) when `channel` is enabled."""
    if not debug_enabled(channel):
        return
    text = f"[{channel}] {message}\n"
    inst = active()
    if inst is not None:
        inst.write(text)
    else:
        sys.stderr.write(text)


@contextlib.contextmanager
def debugging(channels: Iterable[str]) -> Iterator[None]:
    """Enable the debug `channels` (`*`: all) inside the block."""
    token = DEBUG_CHANNELS.set(frozenset(channels))
    try:
        yield
    finally:
        DEBUG_CHANNELS.reset(token)


class _EchoedRemarks(list):
    """A remark sink that also prints each remark on its pass's channel as it is made."""

    def append(self, r: Remark) -> None:
        super().append(r)
        debug(r.pass_name, r.line().removeprefix(f"remark: {r.pass_name}: "))


@contextlib.contextmanager
def collecting_remarks() -> Iterator[list[Remark]]:
    """`lowering.remarks.collecting`, each remark also printed on the channel named after
    its pass (`--debug-only=npu-tile` shows npu-tile's tiling decisions as they are made)."""
    from lowering import remarks
    sink = _EchoedRemarks()
    token = remarks._SINK.set(sink)
    try:
        yield sink
    finally:
        remarks._SINK.reset(token)


class TracedPattern(RewritePattern):
    """`inner`, printing each rewrite it makes on the GREEDY_CHANNEL."""

    def __init__(self, inner: RewritePattern) -> None:
        self.inner = inner

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        before = rewriter.has_done_action
        what = f"'{op.name}'" + (f" ({', '.join(node_names(op)[:4])})" if node_names(op) else "")
        self.inner.match_and_rewrite(op, rewriter)
        if rewriter.has_done_action and not before:
            debug(GREEDY_CHANNEL, f"{RUNNING_PASS.get() or '?'}: {pattern_label(self.inner)} rewrote {what}")


def tracing(p: RewritePattern) -> RewritePattern:
    """`p` with each of its patterns traced (a greedy applier's one by one)."""
    if isinstance(p, GreedyRewritePatternApplier):
        return GreedyRewritePatternApplier([tracing(q) for q in p.rewrite_patterns], p.ctx,
                                           folding_enabled=p.folding_enabled, dce_enabled=p.dce_enabled)
    return TracedPattern(p)


# ----------------------------------------------------------------------------------------
# Progress line
# ----------------------------------------------------------------------------------------


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """A one-line status (elapsed seconds and the running pass) redrawn in place on
    `stream` by a daemon thread, once `delay` seconds have passed."""

    def __init__(self, stream: IO[str], delay: float) -> None:
        self.stream, self.delay = stream, delay
        self.text = ""
        self.shown = False
        self.start_time = time.perf_counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="npu-progress", daemon=True)

    def start(self) -> None:
        self.start_time = time.perf_counter()
        self._thread.start()

    def update(self, text: str) -> None:
        self.text = text

    def _loop(self) -> None:
        while not self._stop.wait(PROGRESS_INTERVAL if self.shown else max(0.05, min(PROGRESS_INTERVAL, self.delay))):
            elapsed = time.perf_counter() - self.start_time
            if elapsed >= self.delay:
                with self._lock:
                    self.stream.write(f"\r\033[Kcompiling {elapsed:5.1f} s  {self.text}"[:200])
                    self.stream.flush()
                    self.shown = True

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Erase the line and keep it off while the caller writes to the stream."""
        with self._lock:
            if self.shown:
                self.stream.write("\r\033[K")
                self.stream.flush()
                self.shown = False
            yield

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with self.quiet():
            pass

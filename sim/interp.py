"""Task bodies as Python generators.

Each `npu_task.task` body is compiled once into closures over a flat value list (`env`,
one slot per SSA value), shared by the tasks of a kernel with the same body (`same_body`),
each with its own `env` (`reuse_task`). Running a task is iterating `exec_block(code,
env, hook)`: scalar ops run inline and take no time; at every blocking point the
generator yields a request to the engine (unless its `hook` takes it: see below):

- `(REQ_COMPUTE, info, bufs)`: run a compute op (the engine runs `info.execute`);
- `(REQ_DMA, plan)`: issue a copy (`sim.memory.CopyPlan`); the answer: its token;
- `(REQ_WAIT, token)`: block until that DMA has completed;
- `(REQ_FENCE, src, dst, bufs)`: `npu_compute.fence` (only on `units = concurrent`);
- `(REQ_GATE,)`, `(REQ_EARLY,)`, `(REQ_HANDOFF,)`: markers (answer None): the end of a
  task's `prefetch` (its waits come now), of its `early` ops, its `handoff` point;
- `(REQ_NONE,)`: nothing (answer None): the engine regains control after a hook's `STOP`.

Algorithm
---------
The `hook` is a one-item list holding the function each request is offered to first:
`passes` (takes none) or the engine's `inline` for the core running the task. `inline`
acts on a request the engine can serve at once without the core leaving its running
state (a fence, a copy given a free channel, a wait on a completed copy, a compute op
queued on its unit) as `resume` would and answers it, or says `PASS` (not taken: the
request is yielded) or `STOP` (acted on, and the core must stop: the generator yields
`REQ_NONE`). Taking them inline saves a generator round trip and the engine's dispatch
per request; the engine acts in the same order either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from math import prod
from operator import itemgetter
from typing import Any

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float32Type, FloatAttr, IntegerAttr, IntegerType, MemRefType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from npu_dialects import special
from npu_dialects.arch import Arch, widest_type
from npu_dialects.compute import ApplyOp, ComputeOp, EltwiseOp, FenceOp
from npu_dialects.dma import CopyOp, DoneOp, WaitOp
from npu_dialects.graph import ints
from npu_dialects.locs import loc_names, node_names
from npu_dialects.task import SramOp, TaskOp, ViewOp
from sim.errors import SimError
from sim.memory import F32, SRC_CLIP, Buf, Region, buffer_bytes, buffer_dtype, plan_copy, timing_planner
from sim.values import Values

REQ_COMPUTE = 0
REQ_DMA = 1
REQ_WAIT = 2


class _Done:
    """The token of `npu_dma.done`: a DMA that has already completed."""

    done = True


DONE = _Done()
REQ_GATE = 3
REQ_EARLY = 4
REQ_HANDOFF = 5
REQ_FENCE = 6
REQ_NONE = 7
NONE = (REQ_NONE,)


class _Answer:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


PASS = _Answer("PASS")
"""The `inline` hook's answer: not taken, yield the request to the engine."""
STOP = _Answer("STOP")
"""The `inline` hook's answer: taken, and the core must stop (yield `NONE`)."""


def passes(req: tuple) -> _Answer:
    """The hook of a generator the engine drives request by request: takes none."""
    return PASS

_SCALAR = 0
_REQ = 1
_REGION = 2

_UNSET = object()
_GATE = (_REQ, lambda env: (REQ_GATE,), -1)
_EARLY = (_REQ, lambda env: (REQ_EARLY,), -1)
_HANDOFF = (_REQ, lambda env: (REQ_HANDOFF,), -1)


class OpInfo:
    """Static facts about one op inside a task, for diagnostics, timing and trace."""

    __slots__ = ("op", "name", "nodes", "task_where", "extra", "kernel", "unit", "cycles", "execute", "label",
                 "index")

    def __init__(self, op: Operation, task_where: str, task_nodes: list[str], index: int, kernel: str = "",
                 own: list[str] | None = None):
        """`own`: the op's ONNX nodes (`node_names(op)`), when the caller has them."""
        self.op = op
        self.name = op.name
        if own is None:
            own = node_names(op)
        self.nodes = own or task_nodes
        # (`where` is built when a diagnostic asks: it holds the task's whole node list,
        # and one copy per op of a fused kernel was quadratic memory in its size)
        self.task_where, self.kernel = task_where, kernel
        self.extra = f" (ONNX node {', '.join(own)})" if own and own != task_nodes else ""
        self.unit = ""
        self.cycles = 0
        self.execute: Callable[[list], None] | None = None
        self.label = op.name.split(".", 1)[-1]
        self.index = index

    @property
    def where(self) -> str:
        """`task 'K' (ONNX node a, b): 'op' (ONNX node b) (op #i in the task)`."""
        return f"{self.task_where}: '{self.name}'{self.extra} (op #{self.index} in the task)"

    @property
    def own_where(self) -> str:
        """`where` with the op's own node only, not the task's whole list (compute faults)."""
        if self.extra and self.kernel:
            return f"task '{self.kernel}': '{self.name}'{self.extra} (op #{self.index} in the task)"
        return self.where


def gather_fault(info: OpInfo, arrays: list[np.ndarray]) -> tuple[str, str] | None:
    """The diagnostic of a gather tile kernel (`npu_compute.apply "npu_graph.gather"`)
    whose indices leave its table: one line naming the op, its ONNX node, the first bad
    index and the table's size, and a hint; None for any other op or fault."""
    op = info.op
    if not isinstance(op, ApplyOp) or op.op.data != "npu_graph.gather" or len(arrays) < 2:
        return None
    data, indices = arrays[0], np.asarray(arrays[1])
    axis = op.attrs.data.get("axis")
    a = (axis.value.data if isinstance(axis, IntegerAttr) else 0) % max(1, data.ndim)
    n = data.shape[a] if data.ndim else 0
    with np.errstate(invalid="ignore"):
        bad = ~((indices >= -n) & (indices < n))
    if not bad.any():
        return None
    pos = [int(i) for i in np.argwhere(bad)[0]]
    v = indices[tuple(pos)]
    shown = f"{int(v)}" if np.isfinite(v) and v == int(v) else f"{float(v):g}"
    return (f"{info.own_where}: gather index {shown} (element {pos} of its indices tile) is out of range for "
            f"axis {a} of its table, of size {n} (table shape {list(data.shape)})",
            f"hint: indices must lie in [{-n}, {n}); an integer model input (token ids from --inputs) may "
            "hold one outside")


def exec_block(code: list, env: list, hook: list) -> Iterator[tuple]:
    """Run compiled ops of one block; yields engine requests (those `hook[0]` does not
    take: see the module docstring)."""
    for tag, fn, slot in code:
        if tag == _SCALAR:
            fn(env)
        elif tag == _REQ:
            got = hook[0](req := fn(env))
            if got is PASS or got is STOP:
                got = yield req if got is PASS else NONE
            if slot >= 0:
                env[slot] = got
        else:
            yield from fn(env, hook)


def task_where(task: TaskOp) -> str:
    """`task 'K' (ONNX node a, b)` for diagnostics."""
    return _where(task.kernel.data, task_nodes(task))


def _where(kernel: str, names: list[str]) -> str:
    where = f" (ONNX node {', '.join(names)})" if names else ""
    return f"task '{kernel}'{where}"


class CompileCache:
    """What compiling a module's tasks works out once for all of them: each location's
    ONNX node names (`names`: a module's ops share few location attributes, ResNet-50's
    9.6k ops have 166) and each compute op definition's unit and cycles (`costs`)."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[Attribute, list[str]]] = {}  # id -> (the location, kept alive; its names)
        self.costs: dict[tuple, tuple[str, int]] = {}  # (class, properties, attributes, operand types) -> timing

    def names(self, op: Operation) -> list[str]:
        """`node_names(op)` (a fresh list)."""
        loc = op.location
        got = self.seen.get(id(loc))
        if got is None:
            got = self.seen[id(loc)] = (loc, loc_names(loc))
        return list(got[1])


def task_nodes(task: TaskOp, names_of: Callable[[Operation], list[str]] = node_names) -> list[str]:
    """ONNX nodes of a task: its location, else those of the ops in its body."""
    names = names_of(task)
    if names:
        return names
    out: list[str] = []
    for op in task.walk():
        for n in names_of(op):
            if n not in out:
                out.append(n)
    return out


def ops_and_end(block: Block) -> list[Operation | None]:
    """The ops of `block` (not of the regions inside them), then None: one walk over
    its list (`list(block.ops)` walks it twice: `len` first)."""
    out: list[Operation | None] = []
    op = block._first_op  # pyright: ignore[reportPrivateUsage]
    while op is not None:
        out.append(op)
        op = op._next_op  # pyright: ignore[reportPrivateUsage]
    out.append(None)
    return out


def preorder(block: Block, out: list[Operation]) -> list[Operation]:
    """Append the ops of `block` and of the regions inside them to `out`, in the order
    `Block.walk` gives them (each op before its regions' ops); returns `out`. (A plain
    recursion: the walk's nested generators cost more than the ops it visits.)"""
    op = block._first_op  # pyright: ignore[reportPrivateUsage]  # (the links, not their properties)
    while op is not None:
        out.append(op)
        for region in op.regions:
            b = region._first_block  # pyright: ignore[reportPrivateUsage]
            while b is not None:
                preorder(b, out)
                b = b._next_block  # pyright: ignore[reportPrivateUsage]
        op = op._next_op  # pyright: ignore[reportPrivateUsage]
    return out


# --- scalar semantics ----------------------------------------------------------------

_M64 = (1 << 64) - 1


def _u(x: int) -> int:
    return x & _M64 if x < 0 else x


def _divsi(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _ceildivsi(a: int, b: int) -> int:
    return -((-a) // b)


_BINARY: dict[str, Callable[[int, int], Any]] = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": _divsi,
    "arith.divui": lambda a, b: _u(a) // _u(b),
    "arith.remsi": lambda a, b: a - b * _divsi(a, b),
    "arith.remui": lambda a, b: _u(a) % _u(b),
    "arith.floordivsi": lambda a, b: a // b,
    "arith.ceildivsi": _ceildivsi,
    "arith.ceildivui": lambda a, b: -((-_u(a)) // _u(b)),
    "arith.minsi": min,
    "arith.maxsi": max,
    "arith.minui": lambda a, b: a if _u(a) <= _u(b) else b,
    "arith.maxui": lambda a, b: a if _u(a) >= _u(b) else b,
    "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b,
    "arith.xori": lambda a, b: a ^ b,
    "arith.shli": lambda a, b: a << b,
    "arith.shrsi": lambda a, b: a >> b,
    "arith.shrui": lambda a, b: _u(a) >> b,
}
_DIVIDES = {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
            "arith.ceildivsi", "arith.ceildivui"}

_CMPI: list[Callable[[int, int], bool]] = [
    lambda a, b: a == b, lambda a, b: a != b,
    lambda a, b: a < b, lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b,
    lambda a, b: _u(a) < _u(b), lambda a, b: _u(a) <= _u(b),
    lambda a, b: _u(a) > _u(b), lambda a, b: _u(a) >= _u(b),
]

_CASTS = {"arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"}


def constant_value(op: arith.ConstantOp) -> Any:
    """Python value of an `arith.constant` (int, bool for i1, float)."""
    v = op.value
    if isinstance(v, IntegerAttr):
        if isinstance(v.type, IntegerType) and v.type.width.data == 1:
            return v.value.data != 0
        return int(v.value.data)
    if isinstance(v, FloatAttr):
        return float(v.value.data)
    raise SimError(f"'arith.constant' with unsupported value {v}")


class TaskProgram:
    """A compiled `npu_task.task`: static facts plus the code of its body."""

    def __init__(self, op: TaskOp, index: int, seq: int, names_of: Callable[[Operation], list[str]] = node_names):
        """`names_of`: `node_names` (`CompileCache.names`, shared by a module's tasks)."""
        self.op = op
        self.index = index  # program order among all tasks
        self.seq = seq  # position in its core's queue (the order it starts in)
        self.lane = 0  # the in-order queue of its core it is in (`Engine.add`)
        self.kernel = op.kernel.data
        self.core = op.core_id
        self.wait_slots: tuple[int, ...] = tuple(op.wait_slots)  # (as the op numbers them)
        self.signal_slots: tuple[int, ...] = tuple(op.signal_slots)
        self.waits: list[int] = list(self.wait_slots)  # (event slots as the engine numbers them)
        self.signals: list[int] = list(self.signal_slots)
        self.range: tuple[int, ...] = ints(op.range, ())
        self.prefetch = op.prefetch_ops  # leading body ops run before the waits
        self.early = op.early_ops  # leading body ops that may run during the core's previous task
        self.handoff = op.handoff_ops  # body ops after which the next task's early ops may run
        pc = op.predicted_cycles
        self.predicted_cycles: int | None = pc.value.data if pc is not None else None
        self.nodes = task_nodes(op, names_of)
        self.where = _where(self.kernel, self.nodes)
        self.code: list = []
        self.init_env: list = []
        self.timing_only = False  # its code is for a run that moves no data (`compile_task`)
        self.ops: list[OpInfo] = []
        self.touches: set[str] = set()  # names of the DRAM regions its body reads or writes
        self.uses: set[SSAValue] = set()  # the top-level DRAM buffers (allocs, views, arguments) it uses
        # what another task with the same body needs besides `code` (`reuse_task`): its SRAM
        # buffers in allocation order (slot, offset, shape, dtype, `value` attribute, type,
        # ONNX-node suffix) and the warnings its compile gave
        self.srams: list[tuple[int, int, tuple[int, ...], np.dtype, int | None, Any, str]] = []
        self.own_warnings: list[str] = []

    def start(self, hook: list | None = None) -> Iterator[tuple]:
        """A fresh generator running the task body, with `hook` (default: none)."""
        return exec_block(self.code, list(self.init_env), [passes] if hook is None else hook)

    def label(self) -> str:
        rng = f" range [{self.range[0]}, {self.range[1]})" if len(self.range) == 2 else ""
        return f"'{self.kernel}'{rng} (task #{self.index}, core {self.core})"


class _TaskCompiler:
    """Compiles one task body into closures (see the module docstring)."""

    def __init__(self, prog: TaskProgram, globals_: dict[SSAValue, Any], sram: Region, arch: Arch,
                 check_bounds: bool, warnings: list[str], values: Values, timing_only: bool = False,
                 cache: CompileCache | None = None, ops: list[Operation] | None = None):
        self.prog = prog
        cache = cache or CompileCache()
        self.names_of = cache.names
        self.costs = cache.costs
        self.timing_only = timing_only  # (DMAs get a `TimingPlan`, compute ops no numerics)
        self.values = values
        self.sram_values: dict[int, int] = {}  # the `value` attribute of npu_task.sram -> value id
        self.warnings = warnings
        self.misaligned = False
        self.globals = globals_
        self.sram = sram
        self.arch = arch
        self.check_bounds = check_bounds
        self.slots: dict[int, int] = {}  # by the `id` of a value (alive with the module): an SSA value's hash is a Python call
        self.init: list = []
        # ops are numbered 1.. in walk order of the task body, for diagnostics
        if ops is None:
            ops = preorder(prog.op.body.block, [])
        self.numbers = {id(o): i for i, o in enumerate(ops, start=1)}

    def slot(self, v: SSAValue) -> int:
        s = self.slots.get(id(v))
        if s is None:
            s = len(self.init)
            self.slots[id(v)] = s
            self.init.append(_UNSET)
        return s

    def use(self, v: SSAValue, op: Operation) -> int:
        """Slot of an operand; values from outside the task come from `globals`."""
        s = self.slots.get(id(v))
        if s is not None:
            return s
        if v in self.globals:
            s = self.slot(v)
            g = self.init[s] = self.globals[v]
            if isinstance(g, Buf):
                self.prog.touches.add(g.region.name)
                self.prog.uses.add(v)
            return s
        raise SimError(f"{self.prog.where}: '{op.name}' uses a value defined outside the task "
                       f"that is not a DRAM buffer or constant")

    def compile(self) -> None:
        self.prog.timing_only = self.timing_only
        body = self.prog.op.body.block
        # the body's (lo, hi) index arguments are bound to the task's `range`
        rng = self.prog.range
        for i, a in enumerate(body.args):
            s = self.slot(a)
            if i < len(rng):
                self.init[s] = rng[i]
            else:
                raise SimError(f"{self.prog.where}: body argument #{i} has no value "
                               f"(the task's range is {list(rng)})")
        before = len(self.warnings)
        self.prog.code = self.block(body, terminator=None, gate=self.prog.prefetch, early=self.prog.early,
                                    handoff=self.prog.handoff)
        self.prog.init_env = self.init
        self.prog.own_warnings = self.warnings[before:]

    def info(self, op: Operation) -> OpInfo:
        i = OpInfo(op, self.prog.where, self.prog.nodes, self.numbers.get(id(op), 0), self.prog.kernel,
                   self.names_of(op))
        self.prog.ops.append(i)
        return i

    def block(self, block: Block, terminator: str | None, gate: int = 0, early: int = 0,
              handoff: int | None = None) -> list:
        """The code of `block`'s ops; with `gate` = n > 0, a REQ_GATE after its first n
        ops (a task's prefetch: its waits come there), with `early` = m > 0 a REQ_EARLY
        after its first m (before the gate when m = n), with `handoff` = k a REQ_HANDOFF
        after its first k."""
        code: list = []
        for i, op in enumerate(ops_and_end(block)):
            if i == handoff:
                code.append(_HANDOFF)
            if early and i == early:
                code.append(_EARLY)
            if gate and i == gate:
                code.append(_GATE)
            if op is None:
                break
            if terminator is not None and op.name == terminator:
                continue
            code.extend(self.op(op))
        return code

    # -- one op -> zero or one instruction
    def op(self, op: Operation) -> list:
        key = (type(op), op.name)
        handler = _HANDLERS.get(key)
        if handler is None:
            handler = _HANDLERS[key] = _handler(op)
        return handler(self, op)

    def unknown_op(self, op: Operation) -> list:
        raise SimError(f"{self.prog.where}: the simulator does not know op '{op.name}'"
                       + (f" (ONNX node {', '.join(node_names(op))})" if node_names(op) else ""))

    def constant_op(self, op: arith.ConstantOp) -> list:
        """A constant is a value of the initial environment: no instruction."""
        s = self.slot(op.result)
        try:
            self.init[s] = constant_value(op)
        except SimError as e:
            raise SimError(f"{self.prog.where}: {e}") from None
        return []

    def done_op(self, op: DoneOp) -> tuple:
        r = self.slot(op.token)

        def done(env, r=r):
            env[r] = DONE
        return (_SCALAR, done, -1)

    def view_op(self, op: ViewOp) -> tuple:
        src, r = self.use(op.source, op), self.slot(op.result)
        t = op.result.type
        assert isinstance(t, MemRefType)
        shape = tuple(t.get_shape())

        if op.index is None:
            def view(env, src=src, r=r, shape=shape, off=op.byte_offset):
                env[r] = env[src].view(shape, offset=off)
            return (_SCALAR, view, -1)
        i, nbytes, where = self.use(op.index, op), buffer_bytes(t), self.info(op).where

        def block(env, src=src, r=r, shape=shape, off=op.byte_offset, i=i, nbytes=nbytes, where=where):
            buf, k = env[src], env[i]
            at = off + k * nbytes
            if k < 0 or at + nbytes > buf.nbytes:
                raise SimError(f"{where}: block {k} of {nbytes} bytes at byte offset {at} does not lie inside "
                               f"its buffer of {buf.nbytes} bytes")
            env[r] = buf.view(shape, offset=at)
        return (_SCALAR, block, -1)

    def cmpi_op(self, op: arith.CmpiOp) -> tuple:
        a, b = self.use(op.lhs, op), self.use(op.rhs, op)
        r = self.slot(op.result)
        fn = _CMPI[op.predicate.value.data]

        def cmpi(env, a=a, b=b, r=r, fn=fn):
            env[r] = fn(env[a], env[b])
        return (_SCALAR, cmpi, -1)

    def select_op(self, op: arith.SelectOp) -> tuple:
        c, t, f = self.use(op.cond, op), self.use(op.lhs, op), self.use(op.rhs, op)
        r = self.slot(op.result)

        def select(env, c=c, t=t, f=f, r=r):
            env[r] = env[t] if env[c] else env[f]
        return (_SCALAR, select, -1)

    def cast_op(self, op: Operation) -> tuple:
        a, r = self.use(op._operands[0], op), self.slot(op.results[0])  # pyright: ignore[reportPrivateUsage]

        def cast(env, a=a, r=r):
            env[r] = env[a]
        return (_SCALAR, cast, -1)

    def wait_op(self, op: WaitOp) -> tuple:
        t = self.use(op.token, op)

        def wait(env, t=t):
            return (REQ_WAIT, env[t])
        return (_REQ, wait, -1)

    def sram_op(self, op: SramOp) -> list:
        t = op.result.type
        assert isinstance(t, MemRefType)
        shape = tuple(t.get_shape())
        off = op.offset.value.data
        dt = F32 if type(t.element_type) is Float32Type else self.dtype(op.result, op)
        nbytes = prod(shape) * dt.itemsize
        if off + nbytes > self.arch.sram_bytes:
            raise SimError(f"{self.prog.where}: SRAM buffer at offset {off} of {nbytes} bytes exceeds "
                           f"sram_bytes={self.arch.sram_bytes}",
                           f"buffer type {t}; task on core {self.prog.core}")
        if off % dt.itemsize:
            raise SimError(f"{self.prog.where}: SRAM buffer at offset {off} is not a multiple of its "
                           f"{dt.itemsize}-byte elements ({t})")
        if off % self.arch.align and not self.misaligned:
            self.misaligned = True
            self.warnings.append(f"{self.prog.where}: SRAM buffer at offset {off} is not aligned to "
                                 f"align={self.arch.align} bytes")
        s = self.slot(op.result)
        own = self.names_of(op)
        of = f" (ONNX node {', '.join(own)})" if own and own != self.prog.nodes else ""
        self.prog.srams.append((s, off, shape, dt, op.value_id, t, of))
        self.init[s] = Buf(self.sram, off, shape, f"SRAM offset {off} of core {self.prog.core}",
                           sram_value(self.values, self.sram_values, self.prog, op.value_id, t, of), dt,
                           self.timing_only)
        return []

    def dtype(self, v: SSAValue, op: Operation) -> np.dtype:
        """The numpy dtype of a buffer value (a SimError for a type the chip does not hold)."""
        try:
            return buffer_dtype(v.type)
        except VerifyException as e:
            raise SimError(f"{self.info(op).where}: {e}") from None

    def binary(self, op: Operation) -> tuple:
        fn = _BINARY[op.name]
        ops = op._operands  # pyright: ignore[reportPrivateUsage]  # (the tuple `operands` views)
        a, b = self.use(ops[0], op), self.use(ops[1], op)
        r = self.slot(op.results[0])
        if op.name in _DIVIDES:
            where = self.info(op).where

            def div(env, a=a, b=b, r=r, fn=fn, where=where):
                y = env[b]
                if y == 0:
                    raise SimError(f"{where}: division by zero")
                env[r] = fn(env[a], y)
            return (_SCALAR, div, -1)

        def bin_(env, a=a, b=b, r=r, fn=fn):
            env[r] = fn(env[a], env[b])
        return (_SCALAR, bin_, -1)

    def for_op(self, op: scf.ForOp) -> tuple:
        ops = op._operands  # pyright: ignore[reportPrivateUsage]  # (lb, ub, step, iter_args...: one tuple)
        lb, ub, st = self.use(ops[0], op), self.use(ops[1], op), self.use(ops[2], op)
        inits = [self.use(v, op) for v in ops[3:]]
        block = op.body.block
        iv = self.slot(block.args[0])
        args = [self.slot(a) for a in block.args[1:]]
        body = self.block(block, "scf.yield")
        term = block.last_op
        ys = [self.use(v, term) for v in term.operands] if term is not None and term.name == "scf.yield" else []
        res = [self.slot(r) for r in op.results]
        where = self.info(op).where

        if not inits and not res:
            return (_REGION, _plain_for(lb, ub, st, iv, body, where), -1)

        def for_(env, hook, lb=lb, ub=ub, st=st, inits=inits, iv=iv, args=args, body=body, ys=ys, res=res):
            lo, hi, step = env[lb], env[ub], env[st]
            vals = [env[s] for s in inits]
            if lo < hi and step <= 0:
                raise SimError(f"{where}: loop step must be positive, got {step}")
            i = lo
            while i < hi:
                env[iv] = i
                for s, v in zip(args, vals):
                    env[s] = v
                for tag, fn, slot in body:  # (exec_block inline: no generator per iteration)
                    if tag == _SCALAR:
                        fn(env)
                    elif tag == _REQ:
                        got = hook[0](req := fn(env))
                        if got is PASS or got is STOP:
                            got = yield req if got is PASS else NONE
                        if slot >= 0:
                            env[slot] = got
                    else:
                        yield from fn(env, hook)
                vals = [env[s] for s in ys]
                i += step
            for s, v in zip(res, vals):
                env[s] = v
        return (_REGION, for_, -1)

    def if_op(self, op: scf.IfOp) -> tuple:
        c = self.use(op.cond, op)
        res = [self.slot(r) for r in op.results]
        branches = []
        for region in (op.true_region, op.false_region):
            if not region.blocks:
                branches.append(([], []))
                continue
            block = region.block
            code = self.block(block, "scf.yield")
            term = block.last_op
            ys = [self.use(v, term) for v in term.operands] if term is not None and term.name == "scf.yield" else []
            branches.append((code, ys))
        (tcode, tys), (fcode, fys) = branches

        def if_(env, hook, c=c, res=res, tcode=tcode, tys=tys, fcode=fcode, fys=fys):
            code, ys = (tcode, tys) if env[c] else (fcode, fys)
            for tag, fn, slot in code:  # (exec_block inline)
                if tag == _SCALAR:
                    fn(env)
                elif tag == _REQ:
                    got = hook[0](req := fn(env))
                    if got is PASS or got is STOP:
                        got = yield req if got is PASS else NONE
                    if slot >= 0:
                        env[slot] = got
                else:
                    yield from fn(env, hook)
            vals = [env[s] for s in ys]
            for s, v in zip(res, vals):
                env[s] = v
        return (_REGION, if_, -1)

    def copy_op(self, op: CopyOp) -> tuple:
        info = self.info(op)
        src_v, dst_v, src_offsets, dst_offsets = op.segments()  # (each accessor decodes the segments)
        src, dst = self.use(src_v, op), self.use(dst_v, op)
        soffs = [self.use(v, op) for v in src_offsets]
        doffs = [self.use(v, op) for v in dst_offsets]
        sizes = op.window
        pad = op.pad_value.value.data if op.pad_value is not None else None
        clip = op.clip is not None
        check = self.check_bounds
        if op.src_clip is not None:
            pad = SRC_CLIP
        tok = self.slot(op.results[0])  # (its token)
        src_t, dst_t = src_v.type, dst_v.type
        assert isinstance(src_t, MemRefType) and isinstance(dst_t, MemRefType)
        if len(sizes) != src_t.get_num_dims() or len(sizes) != dst_t.get_num_dims():
            raise SimError(f"{info.where}: window rank {len(sizes)} does not match the buffers")
        f32s = type(src_t.element_type) is Float32Type and type(dst_t.element_type) is Float32Type
        if not f32s and self.dtype(src_v, op) != self.dtype(dst_v, op):
            raise SimError(f"{info.where}: copies {src_t.element_type} into {dst_t.element_type} (a copy "
                           "converts nothing)")

        # (a run that moves no data resolves no slices, when the offsets match the window's rank)
        lite = self.timing_only and len(soffs) == len(doffs) == len(sizes)
        planner = timing_planner(sizes, tuple(src_t.get_shape()), tuple(dst_t.get_shape())) if lite else plan_copy

        def copy(env, info=info, src=src, dst=dst, so_of=_getter(soffs), do_of=_getter(doffs), sizes=sizes,
                 pad=pad, clip=clip, check=check, planner=planner):
            so = so_of(env)
            do = do_of(env)
            plan = planner(info, env[src], env[dst], so, do, sizes, pad, clip, check)
            if isinstance(plan, str):
                raise SimError(f"{info.where}: {plan}",
                               f"source offsets {list(so)}, destination offsets {list(do)}, "
                               f"sizes {list(sizes)}")
            return (REQ_DMA, plan)
        return (_REQ, copy, tok)

    def fence_op(self, op: FenceOp) -> list:
        """`(REQ_FENCE, src, dst, bufs)`; nothing on an arch whose units run one op at a time."""
        if self.arch.units != "concurrent":
            return []
        bufs = [self.use(v, op) for v in op.buffers]

        def fence(env, src=str(op.src.data), dst=str(op.dst.data), bufs=bufs):
            return (REQ_FENCE, src, dst, [env[s] for s in bufs])
        return [(_REQ, fence, -1)]

    def compute_op(self, op: ComputeOp) -> tuple:
        info = self.info(op)
        # (unit and cycles are the op's definition on the arch: class, properties, attributes
        # and operand types; a module repeats a few of them - ResNet-50: 78 for 948 ops)
        key = (type(op), tuple(op.properties.items()), tuple(op.attributes.items()),
               tuple(v.type for v in op._operands))  # pyright: ignore[reportPrivateUsage]
        timing = self.costs.get(key)
        if timing is None:
            try:
                timing = self.costs[key] = (op.unit(self.arch), int(op.cycles(self.arch)))
            except Exception as e:  # a malformed op the verifier let through
                raise SimError(f"{info.where}: cannot compute its cycles: {e}") from None
        info.unit, info.cycles = timing
        info.execute = _no_execute if self.timing_only else special_executor(op, self.arch)
        if isinstance(op, EltwiseOp):
            info.label = f"eltwise {op.fn.data}"
        bufs = [self.use(v, op) for v in op._operands]  # pyright: ignore[reportPrivateUsage]

        def compute(env, info=info, bufs=bufs):
            return (REQ_COMPUTE, info, [env[s] for s in bufs])
        return (_REQ, compute, -1)


def _handler(op: Operation) -> Callable[[_TaskCompiler, Any], list]:
    """The `_TaskCompiler` method compiling `op` (the same for every op of its class and
    name: `_TaskCompiler.op` keeps it), as a list of zero or one instruction."""
    tc = _TaskCompiler
    for cls, many in ((SramOp, tc.sram_op), (arith.ConstantOp, tc.constant_op), (FenceOp, tc.fence_op)):
        if isinstance(op, cls):
            return many
    one: Callable[[_TaskCompiler, Any], tuple] | None = None
    if isinstance(op, ViewOp):  # (scalar ops: views, integer arith, compares, selects, casts)
        one = tc.view_op
    elif op.name in _BINARY:
        one = tc.binary
    elif isinstance(op, arith.CmpiOp):
        one = tc.cmpi_op
    elif isinstance(op, arith.SelectOp):
        one = tc.select_op
    elif op.name in _CASTS:
        one = tc.cast_op
    elif isinstance(op, DoneOp):
        one = tc.done_op
    elif isinstance(op, scf.ForOp):
        one = tc.for_op
    elif isinstance(op, scf.IfOp):
        one = tc.if_op
    elif isinstance(op, CopyOp):
        one = tc.copy_op
    elif isinstance(op, WaitOp):
        one = tc.wait_op
    elif isinstance(op, ComputeOp):
        one = tc.compute_op
    if one is None:
        return tc.unknown_op
    return lambda self, op, one=one: [one(self, op)]


_HANDLERS: dict[tuple[type, str], Callable[[_TaskCompiler, Any], list]] = {}
"""`_handler` by op class and name."""


def _plain_for(lb: int, ub: int, st: int, iv: int, body: list,
               where: str) -> Callable[[list, list], Iterator[tuple]]:
    """The code of an `scf.for` without iteration arguments or results (`for_op`)."""

    def for_(env, hook):
        lo, hi, step = env[lb], env[ub], env[st]
        if lo < hi and step <= 0:
            raise SimError(f"{where}: loop step must be positive, got {step}")
        i = lo
        while i < hi:
            env[iv] = i
            for tag, fn, slot in body:  # (exec_block inline: no generator per iteration)
                if tag == _SCALAR:
                    fn(env)
                elif tag == _REQ:
                    got = hook[0](req := fn(env))
                    if got is PASS or got is STOP:
                        got = yield req if got is PASS else NONE
                    if slot >= 0:
                        env[slot] = got
                else:
                    yield from fn(env, hook)
            i += step
    return for_


def _getter(slots: list[int]) -> Callable[[list], tuple]:
    """`env -> tuple(env[s] for s in slots)`, without a generator per call."""
    if not slots:
        return lambda env: ()
    if len(slots) == 1:
        s = slots[0]
        return lambda env: (env[s],)
    return itemgetter(*slots)


def _no_execute(arrays: list) -> None:
    """A compute op's numerics in a run that computes nothing (never called)."""


def sram_value(values: Values, ids: dict[int, int], prog: TaskProgram, n: int | None, t: Any, of: str) -> int:
    """The value an `npu_task.sram` buffer of task `prog` holds: one per `value` attribute
    `n` in the task (`ids`: those numbered so far; buffers naming the same one are views
    of it), else its own (`t`: its type, `of`: its ONNX-node suffix, for the description)."""
    task = f"task '{prog.kernel}' #{prog.index}"
    if n is None:
        return values.new(lambda: f"SRAM buffer {t}{of} of {task}")
    if n not in ids:
        ids[n] = values.new(f"SRAM value #{n}{of} of {task}")
    return ids[n]


def same_body(a: TaskOp, b: TaskOp) -> bool:
    """Task `b` compiles to the code of task `a` (`reuse_task`): the same prefetch,
    early and handoff counts, and bodies equal op for op (names, attributes,
    properties, locations, result and argument types, regions) whose operands are
    the same top-level values or correspond inside the bodies. Their ranges (the
    body arguments' values), cores, events and the task's own attributes may differ."""
    if (a.prefetch_ops, a.early_ops, a.handoff_ops) != (b.prefetch_ops, b.early_ops, b.handoff_ops):
        return False
    return _same_block(a.body.block, b.body.block, {})


def _same_block(x: Block, y: Block, ctx: dict[int, SSAValue]) -> bool:
    """`ctx`: by the `id` of a value of `a`'s body (kept alive by it), the value of `b`'s
    it corresponds to (an SSA value's own hash is a Python call)."""
    if len(x.args) != len(y.args):
        return False
    for p, q in zip(x.args, y.args):
        if p.type is not q.type and p.type != q.type:
            return False
        ctx[id(p)] = q
    # (op for op: `len(block.ops)` walks the list too; the links read directly, not
    # through their properties: this walks every op of every task body of a module)
    p, q = x._first_op, y._first_op  # pyright: ignore[reportPrivateUsage]
    while p is not None and q is not None:
        if not _same_op(p, q, ctx):
            return False
        p, q = p._next_op, q._next_op  # pyright: ignore[reportPrivateUsage]
    return p is None and q is None


def _same_op(p: Operation, q: Operation, ctx: dict[int, SSAValue]) -> bool:
    # (`_operands`: the operand tuple, which `operands` wraps in a view indexed per item)
    # (attributes are compared as `is not` first: a decoded module shares equal ones)
    po, qo = p._operands, q._operands  # pyright: ignore[reportPrivateUsage]
    if (p.name != q.name or len(po) != len(qo) or len(p.results) != len(q.results)
            or len(p.regions) != len(q.regions) or p.properties != q.properties
            or p.attributes != q.attributes or (p.location is not q.location and p.location != q.location)):
        return False
    get = ctx.get
    for u, v in zip(po, qo):
        if get(id(u), u) is not v:
            return False
    for u, v in zip(p.results, q.results):
        if u.type is not v.type and u.type != v.type:
            return False
        ctx[id(u)] = v
    for r, s in zip(p.regions, q.regions):
        x, y = r._first_block, s._first_block  # pyright: ignore[reportPrivateUsage]
        while x is not None and y is not None:
            if not _same_block(x, y, ctx):
                return False
            x, y = x._next_block, y._next_block  # pyright: ignore[reportPrivateUsage]
        if x is not None or y is not None:
            return False
    return True


def reuse_task(prog: TaskProgram, tmpl: TaskProgram, sram: Region, warnings: list[str], values: Values) -> None:
    """Give task `prog` the compiled body of `tmpl` (`same_body(tmpl.op, prog.op)`, the
    same `where`): the same code and op facts; its own environment: its range bound to
    the body arguments, its SRAM buffers on its core's `sram` as values of its own
    (numbered in `values` in the order compiling it would), the warnings compiling it
    would give. (Its range must have a value for every body argument.)"""
    prog.code, prog.ops, prog.srams, prog.timing_only = tmpl.code, tmpl.ops, tmpl.srams, tmpl.timing_only
    prog.touches, prog.uses = set(tmpl.touches), set(tmpl.uses)
    env = list(tmpl.init_env)
    for i in range(len(tmpl.op.body.block.args)):
        env[i] = prog.range[i]
    ids: dict[int, int] = {}
    for slot, off, shape, dt, n, t, of in tmpl.srams:
        env[slot] = Buf(sram, off, shape, f"SRAM offset {off} of core {prog.core}",
                        sram_value(values, ids, prog, n, t, of), dt, tmpl.timing_only)
    prog.init_env = env
    prog.own_warnings = list(tmpl.own_warnings)
    warnings.extend(prog.own_warnings)


def special_executor(op: ComputeOp, arch: Arch):
    """`op.executor()`, evaluating special functions as `arch` says (`npu_dialects.special`:
    the method for the widest type the op touches) when it approximates any."""
    run = op.executor()
    ev = arch.special_evaluator(widest_type(op.operands))
    if ev is None:
        return run

    def execute(arrays, run=run, ev=ev):
        with special.evaluating(ev):
            run(arrays)
    return execute


def compile_task(prog: TaskProgram, globals_: dict[SSAValue, Any], sram: Region, arch: Arch,
                 check_bounds: bool, warnings: list[str] | None = None, values: Values | None = None,
                 timing_only: bool = False, cache: CompileCache | None = None,
                 ops: list[Operation] | None = None) -> None:
    """Fill `prog.code`/`prog.init_env` from the task's body (raises SimError;
    appends alignment warnings to `warnings`; numbers SRAM values in `values`).
    `timing_only`: code for an engine that moves and computes no data (its DMA plans
    resolve no slices until asked, its compute ops carry no numerics). `cache`: shared
    by the module's tasks; `ops`: its body's ops (`preorder`), when the caller has them."""
    _TaskCompiler(prog, globals_, sram, arch, check_bounds, [] if warnings is None else warnings,
                  values or Values(), timing_only, cache, ops).compile()


__all__ = ["PASS", "REQ_COMPUTE", "REQ_DMA", "REQ_EARLY", "REQ_FENCE", "REQ_GATE", "REQ_HANDOFF", "REQ_NONE",
           "REQ_WAIT", "STOP", "CompileCache", "passes", "OpInfo", "TaskProgram", "compile_task",
           "constant_value", "exec_block", "preorder", "reuse_task", "same_body", "task_nodes", "task_where"]

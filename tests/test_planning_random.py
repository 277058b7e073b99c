"""Randomised task graphs: event allocation and memory planning are checked
against an independent overlap checker, and the simulator's race detector
agrees (silent on the plan, firing when the plan is broken on purpose).

Each program copies the model input through a random DAG of DRAM buffers:
every task reads one or two earlier buffers and writes a new one, on a random
core; the last task writes the output. Whatever the schedule, the output must
equal the input."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.parser import Parser

from lowering.task.events import Events
from lowering.task.memplan import MemPlan
from lowering.task.taskgraph import event_edges, queue_predecessor, tasks_of
from npu_dialects import make_context
from npu_dialects.arch import parse_arch_spec, set_arch
from npu_dialects.task import AllocOp, TaskOp
from runtime.run import run
from sim import SimError

N = 64  # floats per buffer
T = f'memref<{N}xf32, "dram">'


def task_text(name: str, core: int, copies: list[tuple[str, str]], loc: str | None = None) -> str:
    """An `npu_task.task` that copies whole buffers, (source, destination) in order."""
    body = "\n".join(
        f"      %t{k} = npu_dma.copy %{s}[%c0] -> %{d}[%c0] {{sizes = array<i64: {N}>}} : {T} -> {T}\n"
        f"      npu_dma.wait %t{k}" for k, (s, d) in enumerate(copies))
    return (f'    npu_task.task "{name}" attributes {{core = {core} : i64, range = array<i64: 0, 1>}} {{\n'
            f"    ^bb0(%lo: index, %hi: index):\n      %c0 = arith.constant 0 : index\n{body}\n    }}"
            + (f' loc("{loc}")' if loc else ""))


def module_text(lines: list[str]) -> str:
    """`@main(%x, %y)` holding the given allocs and tasks."""
    return (f'builtin.module {{\n  func.func @main(%x: {T}, %y: {T}) attributes '
            f'{{npu.inputs = ["x"], npu.outputs = ["y"]}} {{\n' + "\n".join(lines)
            + "\n    func.return\n  }\n}\n")


def random_program(rng: np.random.Generator, n_tasks: int, cores: int) -> str:
    """Tasks copying earlier buffers into their own. About half the buffers are marked
    in-place candidates of the task's first source (the task reads it before writing)."""
    allocs = []
    tasks = []
    for t in range(n_tasks):
        srcs = ["x"] if t == 0 else [f"b{int(j)}" for j in rng.choice(t, size=min(t, int(rng.integers(1, 3))),
                                                                        replace=False)]
        dst = "y" if t == n_tasks - 1 else f"b{t}"
        if dst != "y":
            reuse = f"reuse(%{srcs[0]} : {T}) " if srcs[0] != "x" and rng.random() < 0.5 else ""
            allocs.append(f"    %b{t} = npu_task.alloc {reuse}: {T}")
        tasks.append(task_text(f"k{t}", int(rng.integers(0, cores)), [(src, dst) for src in srcs]))
    return module_text(allocs + tasks)


def compile_plan(text: str, arch):
    module = Parser(make_context(), text).parse_module()
    set_arch(module, arch)
    ctx = make_context()
    Events().apply(ctx, module)
    MemPlan().apply(ctx, module)
    module.verify()
    return module


def reachability(module) -> list[set[int]]:
    """Independent check: depth-first search over queue and event edges (not the
    planner's bitsets). before[t] = tasks that complete before t starts."""
    tasks = tasks_of(next(iter(module.ops)))
    preds: dict[int, set[int]] = {t.index: set() for t in tasks}
    for t, q in zip(tasks, queue_predecessor(tasks)):
        if q is not None:
            preds[t.index].add(q)
    for s, w, _ in event_edges(tasks):
        preds[w].add(s)
    before: list[set[int]] = []
    for t in tasks:
        seen: set[int] = set()
        stack = list(preds[t.index])
        while stack:
            p = stack.pop()
            if p not in seen:
                seen.add(p)
                stack.extend(preds[p])
        before.append(seen)
    return before


def overlapping_pairs(module):
    """(alloc a, alloc b, tasks of a, tasks of b) for allocs sharing bytes (in place or not)."""
    fn = next(iter(module.ops))
    tasks = tasks_of(fn)
    users: dict = {}
    for t in tasks:
        for b in t.touches:
            users.setdefault(b, set()).add(t.index)
    allocs = [op for op in fn.body.block.ops if isinstance(op, AllocOp)]
    out = []
    for i, a in enumerate(allocs):
        for b in allocs[i + 1:]:
            oa, ob = a.offset.value.data, b.offset.value.data
            if oa < ob + N * 4 and ob < oa + N * 4:
                out.append((a, b, users.get(a.result, set()), users.get(b.result, set())))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_random_plans_are_race_free(seed):
    rng = np.random.default_rng(seed)
    arch = parse_arch_spec(f"default,cores={int(rng.integers(1, 5))},event_slots={int(rng.integers(1, 65))}")
    module = compile_plan(random_program(rng, int(rng.integers(3, 25)), arch.cores), arch)
    before = reachability(module)
    shared = overlapping_pairs(module)
    for a, b, ta, tb in shared:
        # a task touching both works in place; every other task of one buffer must
        # complete before any task of the other starts
        ordered = all(x in before[y] for x in ta - tb for y in tb) or \
            all(y in before[x] for x in ta for y in tb - ta)
        assert ordered, f"buffers at offsets {a.offset.value.data} and {b.offset.value.data} share bytes " \
                        f"but their tasks {sorted(ta)} and {sorted(tb)} may run concurrently"
    x = np.random.default_rng(seed).standard_normal(N).astype(np.float32)
    res = run(module, {}, {"x": x}, arch)  # the race detector is on
    np.testing.assert_array_equal(res.outputs["y"], x)
    assert res.report["memory"]["dram_arena_bytes"] >= res.report["memory"]["dram_lower_bound_bytes"]


def test_breaking_a_plan_on_purpose_is_caught_by_the_race_detector():
    """Two buffers used by tasks on different cores with no ordering: give them the
    same bytes and the simulator must name both tasks."""
    text = module_text([f"    %a = npu_task.alloc : {T}", f"    %b = npu_task.alloc : {T}",
                        task_text("left", 0, [("x", "a")], "convL"), task_text("right", 1, [("x", "b")], "convR"),
                        task_text("join", 0, [("a", "y"), ("b", "y")])])
    arch = parse_arch_spec("default,cores=2")
    module = compile_plan(text, arch)
    a, b = [op for op in next(iter(module.ops)).body.block.ops if isinstance(op, AllocOp)]
    assert a.offset.value.data != b.offset.value.data  # the planner keeps them apart
    x = np.ones(N, np.float32)
    run(module, {}, {"x": x}, arch)  # silent
    b.attributes["offset"] = IntegerAttr(a.offset.value.data, i64)  # break it
    with pytest.raises(SimError) as e:
        run(module, {}, {"x": x}, arch)
    msg = str(e.value) + (e.value.details or "")
    assert "race" in msg.lower() and "left" in msg and "right" in msg


@pytest.mark.parametrize("slots", [1, 2, 4, 12])
@pytest.mark.parametrize("seed", range(4))
def test_events_stay_within_the_slot_budget(seed, slots):
    """30 tasks with random cross-core dependencies on 4 cores never use more than
    `event_slots` slots: tasks move onto a producer's core, or cores are folded
    together, when slots run out. 12 slots need no folding."""
    rng = np.random.default_rng(seed)
    arch = parse_arch_spec(f"default,cores=4,event_slots={slots}")
    program = random_program(rng, 30, 4)
    module = compile_plan(program, arch)
    used = {s for op in module.walk() if isinstance(op, TaskOp) for s in op.wait_slots + op.signal_slots}
    assert max(used, default=-1) < slots
    cores = {op.core_id for op in module.walk() if isinstance(op, TaskOp)}
    if slots == 12:
        assert len(cores) == len({int(c) for c in re.findall(r"core = (\d+)", program)})
    x = np.arange(N, dtype=np.float32)
    np.testing.assert_array_equal(run(module, {}, {"x": x}, arch).outputs["y"], x)

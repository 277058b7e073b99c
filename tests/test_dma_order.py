"""npu-dma-order: the block timing it judges a new load order by is the simulator's,
and the reordered programs compute what they did before."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from xdsl.parser import Parser

from lowering.task.dma_order import DmaOrder, Facts, block_cycles
from npu_dialects import make_context
from npu_dialects.arch import arch_of
from npu_dialects.canonicalize import effects, is_load, may_alias
from npu_dialects.dma import CopyOp
from npu_dialects.task import TaskOp
from sim import simulate

ORDER = Path(__file__).parent / "filecheck" / "npu-dma-order" / "order.mlir"


def _module():
    ctx = make_context()
    return ctx, Parser(ctx, ORDER.read_text()).parse_module()


def _task(module) -> TaskOp:
    return next(t for t in module.walk() if isinstance(t, TaskOp))


def test_block_cycles_is_the_simulators_span_before_and_after_the_pass():
    ctx, module = _module()
    rng = np.random.default_rng(0)
    inputs = {"x": rng.standard_normal((16, 128), dtype=np.float32),
              "w": rng.standard_normal((96, 128), dtype=np.float32),
              "v": rng.standard_normal((96, 96), dtype=np.float32)}
    serial = replace(arch_of(module), units="serial")  # (block_cycles models one compute op at a time)
    before = simulate(module, {}, inputs, serial)
    assert block_cycles(list(_task(module).body.block.ops), arch_of(module), 1) == before.cycles == 1436
    DmaOrder().apply(ctx, module)
    after = simulate(module, {}, inputs, serial)
    assert block_cycles(list(_task(module).body.block.ops), arch_of(module), 1) == after.cycles == 1220
    assert after.outputs["y"].tobytes() == before.outputs["y"].tobytes()


def test_the_pass_is_idempotent():
    ctx, module = _module()
    DmaOrder().apply(ctx, module)
    once = str(module)
    DmaOrder().apply(ctx, module)
    assert str(module) == once


def test_facts_read_buffers_as_npu_dialects_does():
    """The pass's remembered facts answer as `npu_dialects.canonicalize`: aliasing (from
    each buffer's place) as `may_alias`, a copy's buffers and loads as `effects` and `is_load`."""
    paths = [*ORDER.parent.glob("*.mlir"), *(ORDER.parent.parent / "npu-memplan").glob("*.mlir")]
    for path in sorted(paths):
        try:
            module = Parser(make_context(), path.read_text()).parse_module()
        except Exception:  # (a file of several inputs or of errors)
            continue
        values = [v for op in module.walk() for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args))]
        facts = Facts()
        for a in values:
            for b in values:
                assert facts.alias(a, b) == may_alias(a, b), (path.name, a, b)
        for op in module.walk():  # (what it reads off copies, as npu_dialects does)
            if isinstance(op, CopyOp):
                eff = effects(op)
                assert eff is not None and facts.buffers(op) == eff[0] + eff[1]
                assert facts.is_load(op) == is_load(op) and facts.ends(op) == (op.src, op.dst)

"""The cost of an attention tile (`AttentionOp.tile_cycles`, the cost model's and the
simulator's): where its scores' row sums and its mask are computed (`on_cube`), the
cycles that follow and the SRAM the extra products need (`tile_scratch_bytes`); the
online state's merges (`combine`: unnormalised until the `finish` merge) and what
each costs."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import FloatAttr, UnitAttr, f32

from npu_dialects.arch import parse_arch_spec
from npu_dialects.graph import AttentionOp

ARCH = parse_arch_spec("default")
HEADS, S, D, T = 2, 256, 64, 128
Q, KT, V = (1, HEADS, S, D), (1, HEADS, D, T), (1, HEADS, T, D)
OUT = (1, HEADS, S, D)
SCORES = HEADS * S * T


def test_bert_tile_sums_and_adds_its_mask_on_the_cube() -> None:
    """A padding mask (a row per key) and the row sums each cost a product of one
    cube block instead of a vector pass over the scores: 2 passes (max, exp) remain."""
    shapes = [Q, KT, V, (1, 1, 1, T)]
    assert AttentionOp.on_cube(ARCH, shapes) == (True, True)
    cube = 2 * ARCH.cube_cycles(S, D, T, batch=HEADS)
    extra = ARCH.cube_cycles(S, T, 1, batch=HEADS) + ARCH.cube_cycles(S, 1, T, batch=HEADS)
    want = cube + extra + ARCH.vector_cycles(SCORES, 2) + ARCH.vector_cycles(HEADS * S * D)
    assert AttentionOp.tile_cycles(ARCH, shapes, OUT, scaled=False) == want
    assert extra < ARCH.vector_cycles(SCORES, 2)  # (what the two passes cost)
    # the scores and two columns of ones, one per key (the sums), one per query row (the mask)
    assert AttentionOp.tile_scratch_bytes(ARCH, shapes, OUT) == 4 * (SCORES + T + S)


@pytest.mark.parametrize("mask", [(1, 1, S, T), (1, HEADS, S, T)])
def test_a_mask_with_a_row_per_query_stays_a_vector_pass(mask: tuple[int, ...]) -> None:
    shapes = [Q, KT, V, mask]
    assert AttentionOp.on_cube(ARCH, shapes) == (True, False)
    want = 2 * ARCH.cube_cycles(S, D, T, batch=HEADS) + ARCH.cube_cycles(S, T, 1, batch=HEADS) + \
        ARCH.vector_cycles(SCORES, 3) + ARCH.vector_cycles(HEADS * S * D)
    assert AttentionOp.tile_cycles(ARCH, shapes, OUT, scaled=False) == want


def test_a_causal_masks_compare_and_select_stay_on_the_vector_unit() -> None:
    shapes = [Q, KT, V, (1, 1, S, 1), (1, 1, 1, T)]  # (qlim, kpos)
    assert AttentionOp.on_cube(ARCH, shapes) == (True, False)


def test_a_decode_step_keeps_its_sums_on_the_vector_unit() -> None:
    """One query row a head: a product pads it to a block of 16 rows, 4x the pass."""
    shapes = [(1, 12, 1, D), (1, 12, D, 2048), (1, 12, 2048, D), (1, 1, 1, 2048)]
    assert AttentionOp.on_cube(ARCH, shapes) == (False, False)
    want = 2 * ARCH.cube_cycles(1, D, 2048, batch=12) + ARCH.vector_cycles(12 * 2048, 4) + \
        ARCH.vector_cycles(12 * D)
    assert AttentionOp.tile_cycles(ARCH, shapes, (1, 12, 1, D), scaled=False) == want
    assert AttentionOp.tile_scratch_bytes(ARCH, shapes, (1, 12, 1, D)) == 12 * 2048 * 4


def test_online_blocks_merge_to_the_attention() -> None:
    """Key blocks' states merged in turn, the last with `finish`, give softmax(q kt +
    mask) v - with a block whose keys are all masked for a row, and a row that sees
    no key at all (0 from the blocks, as before; NaN from the unblocked op)."""
    rng = np.random.default_rng(0)
    q, kt, v = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 8, 12)), rng.normal(size=(2, 12, 6))
    mask = np.where(rng.random((2, 5, 12)) < 0.3, -np.inf, 0.0)
    mask[:, 1, 4:8] = -np.inf
    mask[0, 3, :] = -np.inf
    q, kt, v, mask = (x.astype(np.float32) for x in (q, kt, v, mask))
    attrs = {"scale": FloatAttr(0.5, f32)}
    online = {**attrs, "online": UnitAttr()}
    with np.errstate(invalid="ignore"):
        whole = AttentionOp.compute(attrs, q, kt, v, mask)
    blocks = [slice(0, 4), slice(4, 8), slice(8, 12)]
    state = AttentionOp.compute(online, q, kt[..., blocks[0]], v[:, blocks[0]], mask[..., blocks[0]])
    for i, b in enumerate(blocks[1:], 1):
        part = AttentionOp.compute(online, q, kt[..., b], v[:, b], mask[..., b])
        state = AttentionOp.combine({**online, **({"finish": UnitAttr()} if i == 2 else {})}, state, part)
    np.testing.assert_allclose(state[..., :6], np.nan_to_num(whole), rtol=1e-5, atol=1e-6)
    assert not state[0, 3, :6].any()


def test_a_merge_costs_one_pass_over_the_output_and_finish_one_more() -> None:
    """FlashAttention-2's merge: per row one side's factor is 1, so the outputs merge
    in one multiply-add; the last block's merge also normalises (a reciprocal a row,
    a multiply over the output)."""
    shapes = [Q, KT, V, (1, 1, 1, T)]
    state = (*OUT[:-1], D + AttentionOp.STATE_COLUMNS)
    rows = HEADS * S
    merge = AttentionOp.tile_cycles(ARCH, shapes, state, scaled=False)
    plain = AttentionOp.tile_cycles(ARCH, shapes, OUT, scaled=False)
    assert merge - plain == ARCH.vector_cycles(rows, AttentionOp.ONLINE_ROW_PASSES)
    finish = AttentionOp.tile_cycles(ARCH, shapes, state, scaled=False, finish=True)
    assert finish - merge == AttentionOp.finish_cycles(ARCH, rows, D) == ARCH.vector_cycles(rows) + \
        ARCH.vector_cycles(rows * D)

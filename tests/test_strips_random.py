"""Randomised strip groups: small random graphs of the ops strip groups take (convs
with and without padding or stride, max-pools, average pools (2x2/2, and 3x3 with
padding out of or in the divisor), relu, residual adds, channel concats, LRN) compiled for SRAMs small enough that their tensors do not fit whole,
so npu-layer-group cuts them into strip groups (branches, values with several
readers, concats computed in place, masks, the input re-loaded for a residual).
Every result must match onnxruntime; across the seeds strip groups must form."""

from __future__ import annotations

import numpy as np
import pytest

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.arch import parse_arch_spec
from npu_dialects.task import TaskOp
from tools.testkit.e2e import grouped_kernels, line_buffered_kernels, max_abs_error
from tools.testkit.models import Graph

SEEDS = range(24)
ARCHS = ("default,sram_bytes=24576", "default,sram_bytes=49152,cores=3")


def random_graph(seed: int, read_after: bool = False):
    """x[1, 8, H, W] through 4-8 random ops, a 3x3 conv first; each reads one of the
    three latest values (one for a conv,
    pool, relu or LRN; two of one shape for an add; two of one H, W for a concat);
    the output joins every value nothing else reads (concats of equal H, W, else adds).
    `read_after`: one value another op reads is a graph output too (read after any group
    holding it: a strip group must store it as well)."""
    rng = np.random.default_rng(seed)
    g = Graph(seed=100 + seed)
    h, w = int(rng.integers(20, 41)), int(rng.integers(16, 33))
    vals: list[tuple[str, tuple[int, int, int]]] = [("x", (8, h, w))]
    read: set[str] = set()
    for i in range(int(rng.integers(4, 9))):
        kind = "conv3" if i == 0 else rng.choice(
            ["conv1", "conv3", "conv3s2", "pool", "pools2", "avg2", "avg3", "relu", "add", "concat", "lrn"],
            p=[.12, .3, .05, .1, .03, .04, .03, .12, .08, .1, .03])
        name = f"v{i}"
        src, (c, hh, ww) = vals[max(0, len(vals) - 1 - int(rng.integers(3)))]  # (mostly recent values)
        if kind.startswith("conv"):
            k = 1 if kind == "conv1" else 3
            s = 2 if kind == "conv3s2" else 1
            pad = int(k == 3 and (s == 2 or rng.random() < .8))
            co = int(rng.choice([4, 8, 12]))
            ins = [src, g.weight(f"{name}.w", (co, c, k, k))] + ([g.weight(f"{name}.b", (co,), .1)]
                                                                  if rng.random() < .5 else [])
            oh, ow = (hh + 2 * pad - k) // s + 1, (ww + 2 * pad - k) // s + 1
            if oh < 2 or ow < 2:
                continue
            g.node("Conv", ins, name, name=name, kernel_shape=[k, k], pads=[pad] * 4, strides=[s, s])
            shape = (co, oh, ow)
        elif kind.startswith("pool"):
            s = 2 if kind == "pools2" else 1
            oh, ow = (hh + 2 - 3) // s + 1, (ww + 2 - 3) // s + 1
            g.node("MaxPool", [src], name, name=name, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[s, s])
            shape = (c, oh, ow)
        elif kind == "avg2":
            if hh < 4 or ww < 4:
                continue
            g.node("AveragePool", [src], name, name=name, kernel_shape=[2, 2], strides=[2, 2])
            shape = (c, hh // 2, ww // 2)
        elif kind == "avg3":  # padding left out of the divisor, or counted as zeros
            g.node("AveragePool", [src], name, name=name, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                   count_include_pad=int(rng.random() < .3))
            shape = (c, hh, ww)
        elif kind in ("relu", "lrn"):
            if kind == "relu":
                g.node("Relu", [src], name, name=name)
            else:
                g.node("LRN", [src], name, name=name, size=3, alpha=1e-4, beta=0.75, bias=1.0)
            shape = (c, hh, ww)
        else:
            same = [v for v, sh in vals if (sh == (c, hh, ww) if kind == "add" else sh[1:] == (hh, ww))]
            other = same[int(rng.integers(len(same)))]
            if kind == "add":
                g.node("Add", [src, other], name, name=name)
                shape = (c, hh, ww)
            else:
                if other == src:
                    continue
                g.node("Concat", [src, other], name, name=name, axis=1)
                shape = (c + dict(vals)[other][0], hh, ww)
                read.add(other)
        read.add(src)
        vals.append((name, shape))
    # every value nothing reads joins the output (so none is dead)
    loose = [(v, sh) for v, sh in vals[1:] if v not in read] or [vals[-1]]
    out, shape = loose[0]
    for k, (v, sh) in enumerate(loose[1:]):
        if sh[1:] != shape[1:]:
            continue  # (a value of other H, W stays an output of its own below)
        j = f"join{k}"
        g.node("Concat", [out, v], j, name=j, axis=1)
        out, shape = j, (shape[0] + sh[0], *shape[1:])
    outputs = {out: [1, *shape]}
    outputs.update({v: [1, *sh] for v, sh in loose[1:] if sh[1:] != shape[1:]})
    inner = [(v, sh) for v, sh in vals[1:] if v in read and v not in outputs]
    if read_after and inner:
        v, sh = inner[int(np.random.default_rng(1000 + seed).integers(len(inner)))]
        outputs[v] = [1, *sh]
    return g.model(f"strips_random_{seed}", {"x": [1, 8, h, w]}, outputs, 13)


def strip_groups(model, spec: str) -> int:
    """How many strip-group tasks the compiled model has (counted before npu-dma-order,
    which inlines a strip loop that runs once for its core)."""
    arch = parse_arch_spec(spec)
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights, disable=("npu-dma-order",))
    return sum(1 for t in module.walk() if isinstance(t, TaskOp) and ".." in t.kernel.data
               and "scf.for" in str(t))


@pytest.mark.parametrize("spec", ARCHS)
@pytest.mark.parametrize("seed", SEEDS)
def test_random_strip_graphs_match_onnxruntime(seed, spec):
    assert max_abs_error(random_graph(seed), spec) <= 1e-4


@pytest.mark.parametrize("spec", ARCHS)
@pytest.mark.parametrize("seed", SEEDS)
def test_random_line_buffered_strip_graphs_match_onnxruntime(seed, spec):
    """The same graphs with line buffers wherever a strip group can take them."""
    assert max_abs_error(random_graph(seed), spec, line_buffers="always") <= 1e-4


@pytest.mark.parametrize("spec", ARCHS)
@pytest.mark.parametrize("seed", SEEDS)
def test_random_strip_graphs_storing_an_inner_value_match_onnxruntime(seed, spec):
    """The graphs with one inner value also a graph output: strip groups store it too."""
    assert max_abs_error(random_graph(seed, read_after=True), spec) <= 1e-4


@pytest.mark.parametrize("seed", SEEDS)
def test_random_line_buffered_strip_graphs_storing_an_inner_value_match_onnxruntime(seed):
    """The same with line buffers wherever they fit (a stored value itself is never one)."""
    assert max_abs_error(random_graph(seed, read_after=True), ARCHS[0], line_buffers="always") <= 1e-4


def test_random_graphs_do_form_strip_groups_storing_inner_values():
    """A third of the seeds get a strip group with more than one result (so the numerics
    above test the extra stores)."""
    stores = sum(any(k.loop_names == ["h"] and len(k.outs) > 1
                     for k in grouped_kernels(random_graph(s, read_after=True), ARCHS[0])) for s in SEEDS)
    assert stores >= len(SEEDS) // 3, stores


def test_random_graphs_do_form_line_buffered_groups():
    """With line-buffers=always, a quarter of the seeds get line-buffered strip groups."""
    with_lines = sum(bool(line_buffered_kernels(random_graph(s), ARCHS[0], line_buffers="always")) for s in SEEDS)
    assert with_lines >= len(SEEDS) // 4, with_lines


def test_random_graphs_do_form_strip_groups():
    """The random graphs exercise strip groups: a third of the seeds get some (the
    numerics above would otherwise test plain kernels only)."""
    with_groups = sum(strip_groups(random_graph(s), ARCHS[0]) > 0 for s in SEEDS)
    assert with_groups >= len(SEEDS) // 3, with_groups


def test_a_group_with_packed_weights_plans_the_same_after_unpacking():
    """Found by the random graphs: a whole-tensor group fitted 24 KiB when npu-layer-group
    planned it, but npu-bufferize re-planned its body - where slices and reshapes unpack
    the packed weights - to 27 KiB and failed. Views no longer count as ops in the plan."""
    g = Graph(seed=108)
    g.node("Conv", ["x", g.weight("v0.w", (12, 8, 3, 3))], "v0", name="v0", kernel_shape=[3, 3], pads=[1] * 4)
    g.node("Conv", ["v0", g.weight("v1.w", (8, 12, 3, 3)), g.weight("v1.b", (8,), .1)], "v1", name="v1",
           kernel_shape=[3, 3], pads=[1] * 4, strides=[2, 2])
    g.node("Conv", ["v0", g.weight("v2.w", (8, 12, 1, 1)), g.weight("v2.b", (8,), .1)], "v2", name="v2",
           kernel_shape=[1, 1])
    g.node("Conv", ["x", g.weight("v3.w", (4, 8, 3, 3))], "v3", name="v3", kernel_shape=[3, 3], pads=[1] * 4)
    g.node("MaxPool", ["x"], "v4", name="v4", kernel_shape=[3, 3], pads=[1] * 4)
    model = g.model("packed_group", {"x": [1, 8, 18, 10]},
                    {"v1": [1, 8, 9, 5], "v2": [1, 8, 18, 10], "v3": [1, 4, 18, 10], "v4": [1, 8, 18, 10]}, 13)
    assert max_abs_error(model, ARCHS[0]) <= 1e-4


def test_an_average_pool_crops_a_strip_a_wider_reader_holds():
    """A 1x1 conv's result read by a 5x5 conv (2 rows of halo) and by a 3x3 average pool
    (padding counted as zeros, 1 row): the pool reads the middle of the strip (negative
    pads crop it, as for convs and max-pools) and the whole graph is one strip group."""
    g = Graph(seed=12)
    g.node("Conv", ["x", g.weight("c.w", (8, 8, 1, 1))], "c", name="c", kernel_shape=[1, 1])
    g.node("Conv", ["c", g.weight("d.w", (8, 8, 5, 5))], "d", name="d", kernel_shape=[5, 5], pads=[2] * 4)
    g.node("AveragePool", ["c"], "e", name="e", kernel_shape=[3, 3], pads=[1] * 4, count_include_pad=1)
    g.node("Add", ["d", "e"], "y", name="y")
    model = g.model("avg_crop", {"x": [1, 8, 32, 24]}, {"y": [1, 8, 32, 24]}, 13)
    for spec in ARCHS:
        assert strip_groups(model, spec) > 0
        assert max_abs_error(model, spec) <= 1e-4


def test_a_stored_block_output_overwrites_its_residual_and_matches_onnxruntime():
    """Two ResNet-style blocks: o2 = relu(conv3x3(...) + o1) is read by the next block's
    1x1 conv in a strip group and by its residual add after. The group stores o2 over
    o1 (a residual read once, at the rows each strip stores, dead after:
    `stored_in_place`), as the kernel computing o2 alone did, so the DRAM arena does not
    grow by a block's tensor; the outputs match onnxruntime, on one core and on four."""
    from npu_dialects.tile import StripPlanAttr

    g = Graph(seed=7)
    g.node("Conv", ["x", g.weight("s.w", (16, 16, 3, 3))], "s0", name="stem", kernel_shape=[3, 3], pads=[1] * 4)
    g.node("Relu", ["s0"], "o1", name="stem_relu")
    g.node("Conv", ["o1", g.weight("b.w", (8, 16, 1, 1))], "b0", name="b", kernel_shape=[1, 1])
    g.node("Relu", ["b0"], "b1", name="b_relu")
    g.node("Conv", ["b1", g.weight("d.w", (16, 8, 3, 3))], "d0", name="d", kernel_shape=[3, 3], pads=[1] * 4)
    g.node("Add", ["d0", "o1"], "d1", name="res1")
    g.node("Relu", ["d1"], "o2", name="res1_relu")
    g.node("Conv", ["o2", g.weight("f.w", (8, 16, 1, 1))], "f0", name="f", kernel_shape=[1, 1])
    g.node("Relu", ["f0"], "f1", name="f_relu")
    g.node("Conv", ["f1", g.weight("h.w", (16, 8, 3, 3))], "h0", name="h", kernel_shape=[3, 3], pads=[1] * 4)
    g.node("Add", ["h0", "o2"], "e", name="res2")
    model = g.model("stored_in_place", {"x": [1, 16, 32, 32]}, {"e": [1, 16, 32, 32]}, 13)
    for spec in ("default,sram_bytes=32768", "default,cores=1,sram_bytes=32768"):
        plans = [k.plan for k in grouped_kernels(model, spec) if isinstance(k.plan, StripPlanAttr)]
        assert any(p.stored_in_place_operand(0) is not None for p in plans), plans
        assert max_abs_error(model, spec) <= 1e-4

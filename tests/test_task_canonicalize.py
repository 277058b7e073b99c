"""npu-task-canonicalize on whole models: the same outputs bit for bit (the same
arithmetic runs, only loads are dropped or moved), with the memory sanitizer on,
and never more simulated cycles or DRAM traffic than without it."""

from __future__ import annotations

import numpy as np
import pytest

from tools.testkit import models
from tools.testkit.e2e import compile_and_run

OFF = {"disable": ("npu-task-canonicalize",)}

NETS = {
    "mlp_256_512_10_b4": lambda: models.mlp(batch=4, sizes=(256, 512, 10)),
    "mlp_256_512_512_10_b64": lambda: models.mlp(batch=64, sizes=(256, 512, 512, 10)),
    "lenet_b8": lambda: models.lenet(batch=8),
    "residual_block": models.residual_block,
    "fire_modules": models.fire_modules,
}


def _run(model, arch: str, **options):
    res, _ = compile_and_run(model, arch, **options)
    r = res.report
    return res.outputs, r["cycles"], r["dram_bytes_read"] + r["dram_bytes_written"]


@pytest.mark.parametrize("arch", ["default", "default,cores=1", "default,cores=1,dram_bw=1024"])
@pytest.mark.parametrize("net", sorted(NETS))
def test_same_outputs_never_slower(net, arch):
    model = NETS[net]()
    on, cycles, dram = _run(model, arch)
    off, cycles_off, dram_off = _run(model, arch, **OFF)
    for k in off:
        assert np.array_equal(on[k], off[k]), k
    assert cycles <= cycles_off and dram <= dram_off


def test_invariant_activation_loads_once():
    """One core: every kernel of the MLP moves each of its bytes once (the first gemm's
    4x256 activation is not re-read per weight tile), with or without
    npu-task-canonicalize: npu-bufferize already loads a window that stays put once
    (the peephole used to drop the re-reads: 4 KB each)."""
    model = NETS["mlp_256_512_10_b4"]()
    for double_buffer in (True, False):
        for options in ({}, OFF):
            res, _ = compile_and_run(model, "default,cores=1", double_buffer=double_buffer, **options)
            kernels = res.report["kernels"]
            assert kernels and all(k["dram_vs_min"] == 1.0 for k in kernels), kernels

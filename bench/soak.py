"""Soak: one executable run many times, and two executables interleaved on two streams
in full-async, through `runtime.device.Runtime` - device memory must return to its
baseline (the loaded weights) after every run, and every output must equal the first.

    python bench/soak.py [--runs N] [--models a.onnx,b.onnx] [--out bench/results/soak.md]

Each model is compiled once into an `.npuexe` (`tools.api.compile`) that the runtime
loads. Default: 10,000 runs of tests/models/lenet.onnx in graph-async, then N/2
rounds of lenet and mlp on two streams in full-async (a request on each per round, waited in
submission order). Reports runs, wall time and runs per second, the device and
end-to-end cycles per run, the heap's allocations and frees, peak and baseline
bytes, and the number of runs after which in-use bytes differed from the baseline
(must be 0) or outputs differed from the first run (must be 0).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tempfile  # noqa: E402

from runtime.device import LoadedExecutable, Request, Runtime  # noqa: E402
from runtime.run import random_inputs  # noqa: E402
from sim import signature  # noqa: E402
from tools.api import compile as compile_model  # noqa: E402

TMP = tempfile.mkdtemp(prefix="npu-soak-")


def loaded(rt: Runtime, path: str) -> tuple[LoadedExecutable, dict[str, np.ndarray]]:
    """Compile `path` into an .npuexe, load it on `rt`; its seeded random inputs."""
    exe_path = os.path.join(TMP, os.path.basename(path) + ".npuexe")
    compile_model(path).save(exe_path)
    exe = rt.load(exe_path, name=os.path.basename(path))
    return exe, random_inputs(signature(exe.module), 0)


class Soak:
    """Counters of one soak: runs, leaks (in-use bytes off the baseline after a run),
    mismatches (outputs differing from the first run), cycles."""

    def __init__(self, rt: Runtime):
        self.rt, self.runs, self.leaks, self.mismatches = rt, 0, 0, 0
        self.base = rt.stats()["in_use_bytes"]
        self.first: dict[int, dict[str, np.ndarray]] = {}
        self.device = self.e2e = 0

    def check(self, req: Request, key: int) -> None:
        assert req.outputs is not None and req.report is not None
        ref = self.first.setdefault(key, req.outputs)
        if any(not np.array_equal(req.outputs[k], ref[k]) for k in ref):
            self.mismatches += 1
        self.runs += 1
        self.device += req.report["cycles"]
        self.e2e += req.report["host"]["end_to_end_cycles"]

    def settle(self) -> None:
        """After the host waited on everything submitted: in use must be the baseline."""
        if self.rt.stats()["in_use_bytes"] != self.base:
            self.leaks += 1


def soak_one(path: str, runs: int) -> tuple[Soak, float]:
    rt = Runtime()
    exe, ins = loaded(rt, path)
    s = Soak(rt)
    t0 = time.perf_counter()
    for _ in range(runs):
        s.check(rt.run(exe, ins), 0)
        s.settle()
    return s, time.perf_counter() - t0


def soak_two(paths: list[str], rounds: int) -> tuple[Soak, float]:
    rt = Runtime(mode="full-async")
    exes, inputs = zip(*(loaded(rt, p) for p in paths))
    streams = [rt.stream() for _ in paths]
    s = Soak(rt)
    t0 = time.perf_counter()
    for _ in range(rounds):
        reqs = [rt.submit(e, i, stream=st) for e, i, st in zip(exes, inputs, streams)]
        for k, r in enumerate(reqs):
            s.check(r.wait(), k)
        s.settle()
    return s, time.perf_counter() - t0


def row(name: str, s: Soak, wall: float) -> str:
    st = s.rt.stats()
    return (f"| {name} | {s.runs} | {wall:.1f} | {s.runs / wall:.0f} | {s.device // max(s.runs, 1)} | "
            f"{s.e2e // max(s.runs, 1)} | {st['allocations']} | {st['frees']} | {s.base} | {st['peak_bytes']} | "
            f"{st['in_use_bytes']} | {s.leaks} | {s.mismatches} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--models", default="tests/models/lenet.onnx,tests/models/mlp.onnx")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    paths = args.models.split(",")
    lines = ["| soak | runs | wall s | runs/s | device cycles/run | end-to-end cycles/run | allocations | frees | "
             "baseline B | peak B | in use at end B | runs leaking | runs differing |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    s, wall = soak_one(paths[0], args.runs)
    lines.append(row(f"{os.path.basename(paths[0])}, graph-async", s, wall))
    print(lines[-1], flush=True)
    s, wall = soak_two(paths[:2], args.runs // 2)
    lines.append(row(" + ".join(os.path.basename(p) for p in paths[:2]) + ", full-async, 2 streams", s, wall))
    print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(f"`python bench/soak.py --runs {args.runs}` (wall time: a shared 2-core machine)\n\n" + text)


if __name__ == "__main__":
    main()

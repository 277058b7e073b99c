"""Differential fuzzing at scale: random small ONNX graphs (`tools/testkit/fuzz_graphs.py`)
compiled and simulated (sanitizer on) on each arch and compared with onnxruntime.

    python bench/fuzz.py [--graphs 500] [--seed0 0] [--arch SPEC]... [--save-failures DIR]
                         [--out bench/results/fuzz.md]

`--arch` repeats, one spec per flag (specs contain commas): `--arch default --arch
default,cores=1`; default: the three archs of the fuzz test. The table counts the
runs per status (ok, mismatch, sanitizer, refused, crash) and per op type, and lists
every run that is not ok by seed and arch: `--graphs 1 --seed0 SEED --arch ARCH`
reruns one. `--save-failures DIR` writes each graph with a run that is not ok as
DIR/seedN.onnx."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

import onnx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.roofline import write_table  # noqa: E402
from npu_dialects.arch import ArchError, parse_arch_spec  # noqa: E402
from tools.testkit.fuzz_graphs import (  # noqa: E402
    ARCHS,
    STATUSES,
    Outcome,
    check_model,
    random_model,
)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--graphs", type=int, default=500, help="how many graphs (default 500)")
    ap.add_argument("--seed0", type=int, default=0, help="seed of the first graph (default 0)")
    ap.add_argument("--arch", action="append", metavar="SPEC",
                    help=f"an arch spec, repeatable (default: {' '.join(ARCHS)})")
    ap.add_argument("--save-failures", metavar="DIR", help="write graphs with a run that is not ok here")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.arch = args.arch or list(ARCHS)
    for spec in args.arch:
        try:
            parse_arch_spec(spec)
        except ArchError as e:
            ap.error(f"bad --arch '{spec}': {e}")
    return args


def _cell(text: str) -> str:
    """The first line of `text`, safe in a markdown table cell."""
    lines = text.strip().splitlines()
    return (lines[0] if lines else "").replace("|", "\\|")


def main() -> int:
    args = parse_args()
    seeds = range(args.seed0, args.seed0 + args.graphs)
    status: Counter[str] = Counter()
    op_nodes: Counter[str] = Counter()
    op_graphs: Counter[str] = Counter()
    op_bad: Counter[str] = Counter()
    multi = 0
    bad: list[tuple[int, str, Outcome, bool]] = []
    warned: list[tuple[int, str, Outcome]] = []
    if args.save_failures:
        os.makedirs(args.save_failures, exist_ok=True)
    t0 = time.time()
    for k, seed in enumerate(seeds):
        model, stats = random_model(seed)
        multi += stats["views_multi_reader"]
        op_nodes.update(stats["op_types"])
        op_graphs.update(stats["op_types"].keys())
        failed = False
        for arch in args.arch:
            o = check_model(model, arch)
            status[o.status] += 1
            if o.status != "ok":
                failed = True
                bad.append((seed, arch, o, stats["views_multi_reader"]))
                print(f"seed {seed} arch {arch}: {o.status}: {_cell(o.message)}", flush=True)
            elif o.warnings:
                warned.append((seed, arch, o))
        if failed:
            op_bad.update(stats["op_types"].keys())
            if args.save_failures:
                onnx.save(model, os.path.join(args.save_failures, f"seed{seed}.onnx"))
        if (k + 1) % 25 == 0 or k + 1 == len(seeds):
            print(f"[{k + 1}/{len(seeds)} graphs, {time.time() - t0:.0f} s] "
                  + ", ".join(f"{s} {status[s]}" for s in STATUSES), flush=True)
    runs = sum(status.values())
    lines = [f"seeds {seeds.start}..{seeds.stop - 1}; archs: {', '.join(f'`{a}`' for a in args.arch)}; "
             f"{time.time() - t0:.0f} s", "",
             "| graphs | graph x arch runs | graphs with multi-reader views | "
             + " | ".join(STATUSES) + " | ok runs with simulator warnings |",
             "|---|---|---|" + "---|" * (len(STATUSES) + 1),
             f"| {len(seeds)} | {runs} | {multi} ({multi / max(len(seeds), 1):.0%}) | "
             + " | ".join(str(status[s]) for s in STATUSES) + f" | {len(warned)} |",
             "", "| op type | nodes | graphs | graphs with a run not ok |", "|---|---|---|---|"]
    lines += [f"| {op} | {n} | {op_graphs[op]} | {op_bad[op]} |" for op, n in sorted(op_nodes.items())]
    lines += ["", f"Runs not ok: {len(bad) or 'none'}."]
    if bad:
        lines += ["", "| seed | arch | status | multi-reader view | message |", "|---|---|---|---|---|"]
        lines += [f"| {seed} | `{arch}` | {o.status} | {'yes' if m else 'no'} | {_cell(o.message)} |"
                  for seed, arch, o, m in bad]
    if warned:
        lines += ["", f"OK runs with simulator warnings ({len(warned)}):", "",
                  "| seed | arch | first warning |", "|---|---|---|"]
        lines += [f"| {seed} | `{arch}` | {_cell(o.warnings[0])} |" for seed, arch, o in warned]
    summary = (f"{len(seeds)} graphs x {len(args.arch)} archs = {runs} runs: "
               + ", ".join(f"{s} {status[s]}" for s in STATUSES)
               + f"; multi-reader views in {multi} graphs; {len(warned)} ok runs with warnings")
    lines += ["", summary]
    print(summary)
    write_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

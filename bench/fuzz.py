"""Differential fuzzing at scale: random ONNX graphs over the importer's supported op
types (`tools/testkit/fuzz_graphs.py`) compiled and simulated (sanitizer on) on each
arch and compared with onnxruntime; every failure shrunk to a minimal reproducer.

    python bench/fuzz.py [--graphs 500] [--seed0 0] [--arch SPEC]... [--jobs N]
                         [--repro-dir DIR] [--shrink-seconds S] [--out bench/results/fuzz.md]

`--arch` repeats, one spec per flag (specs contain commas); default: `default` (4
cores), `default,cores=1`, `default,cores=2`, `default,sram_bytes=65536`. A failing run
(mismatch, sanitizer, crash) is shrunk (`tools/testkit/fuzz_shrink.py`) and written to
`--repro-dir` (default /tmp/npu-fuzz-repros) with its reproduce command. The summary
gives runs per arch and status, distinct failure signatures, refusal reasons with
their judgement (`REFUSALS`), op types and producer -> consumer pairs covered, and
the wall time, graphs by kind (f32, qdq, f16, cast); `--graphs 1 --seed0 SEED --arch ARCH` reruns one graph.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("NPU_COMPILE_JOBS", "1")
os.environ.setdefault("NPU_NO_CACHE", "1")

from bench.roofline import write_table  # noqa: E402
from lowering.importer.onnx_import import supported_op_types  # noqa: E402
from npu_dialects.arch import ArchError, parse_arch_spec  # noqa: E402
from tools.testkit.fuzz_graphs import BENCH_ARCHS, KINDS, STATUSES, Outcome, check_model, random_model  # noqa: E402
from tools.testkit.fuzz_ops import EXCLUDED  # noqa: E402
from tools.testkit.fuzz_shrink import same_failure, shrink, signature, write_repro  # noqa: E402
from tools.testkit.ort_exact import install as exact_onnxruntime  # noqa: E402

# onnxruntime as the reference in its exact integer mode, as the test suite has it: its
# default u8 x s8 kernels saturate on CPUs without VNNI (a QDQ graph many steps off)
exact_onnxruntime()

REFUSALS: tuple[tuple[str, str], ...] = (
    (r"no tile fits sram_bytes", "real limit: the smallest tile of the kernel needs more SRAM than the arch has"),
    (r"only 1-D and 2-D convolutions", "real limit: a 3-D Conv is not converted (the fuzzer writes ranks 1-4)"),
    (r"empty tensors are not supported", "real limit: the compiler keeps no empty tensor"),
    (r"new shapes: 'npu_graph\.(mul|add)': operand #N is fN but operand #N is fN",
     "compiler bug (issue 44): a float16 Gemm with alpha or beta != 1 is scaled by float32 constants "
     "(npu-canonicalize's GemmScalingToEpilogue)"),
)
"""Refusal reason pattern -> its judgement (is the diagnostic a real limit?)."""


@dataclass
class GraphResult:
    """One graph's runs: its stats and each arch's outcome."""

    seed: int
    stats: dict
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Failure:
    """A failing run, shrunk: its signature (the shrunk graph's op types for a mismatch),
    the reproducer and its command."""

    seed: int
    arch: str
    outcome: Outcome
    signature: str
    nodes: int = 0
    repro: str = ""
    command: str = ""


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--graphs", type=int, default=500, help="how many graphs (default 500)")
    ap.add_argument("--seed0", type=int, default=0, help="seed of the first graph (default 0)")
    ap.add_argument("--arch", action="append", metavar="SPEC",
                    help=f"an arch spec, repeatable (default: {' '.join(BENCH_ARCHS)})")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--repro-dir", default="/tmp/npu-fuzz-repros", help="where shrunk reproducers go")
    ap.add_argument("--shrink-seconds", type=float, default=240.0, help="time limit per shrink (default 240)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.arch = args.arch or list(BENCH_ARCHS)
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


def run_graph(seed: int, archs: list[str]) -> GraphResult:
    t0 = time.time()
    model, stats = random_model(seed)
    res = GraphResult(seed, stats)
    for arch in archs:
        res.outcomes[arch] = check_model(model, arch)
    res.seconds = time.time() - t0
    return res


def shrink_failure(job: tuple[int, str, Outcome, str, float]) -> Failure:
    """Shrink one failing run and write its reproducer."""
    seed, arch, outcome, repro_dir, seconds = job
    model, _ = random_model(seed)
    small = shrink(model, same_failure(arch, outcome), seconds)
    ops = [n.op_type for n in small.graph.node]
    sig = signature(outcome)
    if outcome.status == "mismatch":
        sig = "mismatch: " + " -> ".join(dict.fromkeys(ops))
    path, cmd = write_repro(small, repro_dir, f"{outcome.status}-{'-'.join(dict.fromkeys(ops))[:60]}-seed{seed}-{arch}",
                            arch)
    return Failure(seed, arch, outcome, sig, len(ops), path, cmd)


def refusal_reason(message: str) -> str:
    """A refusal's first line with the node, numbers and shapes masked."""
    line = _cell(message)
    line = re.sub(r"node '[^']*' \((\w+), opset \d+\)", r"\1", line)
    return re.sub(r"\[[^\]]*\]|-?\d+(\.\d+)?", "N", line)[:200]


def judgement(reason: str) -> str:
    return next((j for pattern, j in REFUSALS if re.search(pattern, reason)), "not judged")


def _pool_map(fn, items: list, jobs: int) -> list:
    if jobs <= 1:
        return [fn(x) for x in items]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.map(fn, items, chunksize=1)


def _run_all(args: argparse.Namespace, seeds: range) -> list[GraphResult]:
    results: list[GraphResult] = []
    status: Counter[str] = Counter()
    t0 = time.time()
    step = 25
    for start in range(0, len(seeds), step):
        chunk = list(seeds[start:start + step])
        for res in _pool_map(_RunGraph(args.arch), chunk, args.jobs):
            results.append(res)
            for arch, o in res.outcomes.items():
                status[o.status] += 1
                if o.failed:
                    print(f"seed {res.seed} arch {arch}: {o.status}: {_cell(o.message)}", flush=True)
        print(f"[{len(results)}/{len(seeds)} graphs, {time.time() - t0:.0f} s] "
              + ", ".join(f"{s} {status[s]}" for s in STATUSES), flush=True)
    return results


class _RunGraph:
    """`run_graph` with the archs bound (picklable for the pool)."""

    def __init__(self, archs: list[str]):
        self.archs = archs

    def __call__(self, seed: int) -> GraphResult:
        return run_graph(seed, self.archs)


def _failures(args: argparse.Namespace, results: list[GraphResult]) -> list[Failure]:
    """Each graph's first failing run, shrunk."""
    jobs = []
    for res in results:
        bad = [(a, o) for a, o in res.outcomes.items() if o.failed]
        if bad:
            jobs.append((res.seed, bad[0][0], bad[0][1], args.repro_dir, args.shrink_seconds))
    failures = _pool_map(shrink_failure, jobs, args.jobs)
    for f in failures:
        print(f"seed {f.seed} {f.arch}: {f.signature} ({f.nodes} nodes): {f.command}", flush=True)
    return failures


def _status_table(args: argparse.Namespace, results: list[GraphResult]) -> list[str]:
    lines = ["| arch | runs | " + " | ".join(STATUSES) + " |", "|---|---|" + "---|" * len(STATUSES)]
    total: Counter[str] = Counter()
    for arch in args.arch:
        c = Counter(r.outcomes[arch].status for r in results)
        total.update(c)
        lines.append(f"| `{arch}` | {sum(c.values())} | " + " | ".join(str(c[s]) for s in STATUSES) + " |")
    lines.append(f"| all | {sum(total.values())} | " + " | ".join(str(total[s]) for s in STATUSES) + " |")
    return lines


def _failure_lines(failures: list[Failure]) -> list[str]:
    if not failures:
        return ["Failures: none."]
    by_sig: dict[str, list[Failure]] = {}
    for f in failures:
        by_sig.setdefault(f.signature, []).append(f)
    lines = [f"Failures: {len(failures)} graphs, {len(by_sig)} distinct signatures.", "",
             "| signature | graphs | shrunk to | reproduce |", "|---|---|---|---|"]
    for sig, fs in sorted(by_sig.items(), key=lambda kv: -len(kv[1])):
        f = min(fs, key=lambda x: x.nodes)
        lines.append(f"| {_cell(sig)} | {len(fs)} (seeds {', '.join(str(x.seed) for x in fs[:8])}) | "
                     f"{f.nodes} nodes | `{f.command}` |")
    return lines


def _refusal_lines(results: list[GraphResult]) -> list[str]:
    reasons: Counter[str] = Counter()
    example: dict[str, tuple[int, str]] = {}
    for r in results:
        for arch, o in r.outcomes.items():
            if o.status == "refused":
                k = refusal_reason(o.message)
                reasons[k] += 1
                example.setdefault(k, (r.seed, arch))
    if not reasons:
        return ["Refusals: none."]
    lines = ["Refusals, by reason (node names, numbers and shapes masked):", "",
             "| reason | runs | example | judgement |", "|---|---|---|---|"]
    lines += [f"| {k} | {n} | seed {example[k][0]} `{example[k][1]}` | {judgement(k)} |"
              for k, n in reasons.most_common()]
    return lines


def _coverage_lines(results: list[GraphResult]) -> list[str]:
    nodes: Counter[str] = Counter()
    graphs: Counter[str] = Counter()
    bad: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    for r in results:
        nodes.update(r.stats["op_types"])
        graphs.update(r.stats["op_types"].keys())
        pairs.update({tuple(k): v for k, v in r.stats["op_pairs"].items()})
        if any(o.status != "ok" for o in r.outcomes.values()):
            bad.update(r.stats["op_types"].keys())
    supported = supported_op_types(functions_too=True)
    missing = [op for op in supported if op not in nodes and op not in EXCLUDED]
    lines = [f"Op types: {sum(op in nodes for op in supported)} of the {len(supported)} supported "
             f"({', '.join(f'{op}: {why}' for op, why in sorted(EXCLUDED.items())) or 'none excluded'}); "
             f"never drawn: {', '.join(missing) or 'none'}. Producer -> consumer pairs: {len(pairs)} distinct.", "",
             "| op type | nodes | graphs | graphs with a run not ok | consumers (distinct) | producers (distinct) |",
             "|---|---|---|---|---|---|"]
    for op in sorted(nodes):
        cons = len({c for p, c in pairs if p == op})
        prods = len({p for p, c in pairs if c == op})
        lines.append(f"| {op} | {nodes[op]} | {graphs[op]} | {bad[op]} | {cons} | {prods} |")
    lines += ["", "<details><summary>Every producer -> consumer pair (edges)</summary>", ""]
    by_prod: dict[str, list[str]] = {}
    for (p, c), n in sorted(pairs.items()):
        by_prod.setdefault(p, []).append(f"{c} {n}")
    lines += [f"- {p} -> {', '.join(cs)}" for p, cs in sorted(by_prod.items())]
    return lines + ["", "</details>"]


def main() -> int:
    args = parse_args()
    seeds = range(args.seed0, args.seed0 + args.graphs)
    t0 = time.time()
    results = _run_all(args, seeds)
    t_runs = time.time() - t0
    failures = _failures(args, results)
    wall = time.time() - t0
    runs = Counter(o.status for r in results for o in r.outcomes.values())
    opsets = Counter(r.stats["opset"] for r in results)
    kinds = Counter(r.stats.get("kind", "f32") for r in results)
    kind_bad = Counter(r.stats.get("kind", "f32") for r in results if any(o.failed for o in r.outcomes.values()))
    summary = (f"{len(seeds)} graphs x {len(args.arch)} archs = {sum(runs.values())} runs: "
               + ", ".join(f"{s} {runs[s]}" for s in STATUSES))
    lines = [f"`python bench/fuzz.py --graphs {args.graphs} --seed0 {args.seed0} --jobs {args.jobs}` "
             f"(seeds {seeds.start}..{seeds.stop - 1}; archs: {', '.join(f'`{a}`' for a in args.arch)}; "
             f"NPU_SANITIZE=1); wall time {wall:.0f} s ({t_runs:.0f} s running, {wall - t_runs:.0f} s shrinking), "
             f"{sum(r.seconds for r in results) / max(len(results), 1):.2f} s per graph (all archs, one process).", "",
             f"**{summary}.**", "",
             "Graphs by opset: " + ", ".join(f"{k}: {v}" for k, v in sorted(opsets.items()))
             + f"; nodes per graph {sum(r.stats['n_nodes'] for r in results) / max(len(results), 1):.1f} on "
             f"average; graphs with a multi-reader view: {sum(r.stats['views_multi_reader'] for r in results)}; "
             f"with integer inputs (token ids, masks): {sum(r.stats.get('int_inputs', 0) > 0 for r in results)}.", "",
             "Graphs by kind (`KINDS` in tools/testkit/fuzz_graphs.py; qdq: QDQ segments, outputs judged in "
             "quantization steps - 99% within one, none beyond three; f16: whole float16 graphs; cast: float32 "
             "graphs with Cast segments to float16/bfloat16; 16-bit outputs by the type's tolerance): "
             + ", ".join(f"{k}: {kinds[k]} ({kind_bad[k]} failing)" for k, _ in KINDS) + ".", ""]
    lines += _status_table(args, results) + [""] + _failure_lines(failures) + [""]
    lines += _refusal_lines(results) + [""] + _coverage_lines(results)
    print(summary)
    write_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

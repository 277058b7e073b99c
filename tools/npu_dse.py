"""`npu-dse SPEC.toml` | `npu-dse --fusion-depth 1..N MODEL...` | `npu-dse --sram-sizes
64K..4M MODEL...`: design-space exploration with the compiler in the loop.

SPEC.toml (`tools/dse/spec.py`) names models and a space of arch parameters; every
point is compiled and simulated (timing-only unless `numerics = true`), exhaustively
when the space has at most `budget` points, else by a guided search (optuna). Writes
results.csv/.json and pareto.svg/.png (cycles against the area proxy) to `--out`.
`--fusion-depth` and `--sram-sizes` sweep one parameter of MODEL on `--arch`. Points
run on `--jobs` local processes, or on a Ray/Dask cluster (`--cluster`); every result
is cached per (model, arch, options, compiler), so an interrupted sweep resumes.
A point that fails (does not fit, ...) is a row with its diagnostic, not an error.
Exit codes: 0 success, 1 a bad spec or model, or no point ran; 2 bad usage.

Algorithm
---------
`tools/dse/`: spec.py (the file, the area proxy), evaluate.py (one point), executors.py
(local, Ray, Dask), sweep.py (cache, grid, guided search), report.py (tables, Pareto),
curves.py (fusion-depth and SRAM sweeps).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from tools.cli import EXIT_OK, EXIT_USER, UsageError, UserError, cli_main, console


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="npu-dse", description="Design-space exploration: sweep arch parameters "
                                "over models with the compiler and the simulator in the loop.")
    p.add_argument("inputs", nargs="+", metavar="SPEC.toml | MODEL",
                   help="a sweep spec, or with --fusion-depth/--sram-sizes the models (.onnx, zoo or built-in names)")
    p.add_argument("--fusion-depth", metavar="1..N",
                   help="sweep the fusion depth (most kernels per layer group; 1: none) of the models")
    p.add_argument("--sram-sizes", metavar="64K..4M",
                   help="sweep sram_bytes of the models: a doubling range or a list (256K,384K,512K)")
    p.add_argument("--dram-target", type=float, default=1.6, metavar="X",
                   help="SRAM sweep: report the smallest SRAM whose DRAM traffic is <= X times the minimum "
                        "(default 1.6)")
    p.add_argument("--arch", default="default", metavar="SPEC", help="the arch the one-parameter sweeps vary")
    p.add_argument("--out", metavar="DIR", help="where results go (default: the spec's `out`, or dse-results)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="local worker processes (default: one per core)")
    p.add_argument("--cluster", metavar="URL",
                   help="run on an existing cluster: ray (local), ray://HOST:PORT, dask://HOST:PORT")
    p.add_argument("--budget", type=int, metavar="N", help="points the guided search evaluates (overrides the spec)")
    p.add_argument("--search", choices=("auto", "grid", "optuna"), help="override the spec's search")
    p.add_argument("--numerics", action="store_true", help="functional simulation instead of timing-only")
    p.add_argument("-p", "--pass-pipeline", dest="pipeline", metavar="PIPELINE",
                   help="one-parameter sweeps: compile with this pipeline (e.g. plugin passes before npu-default); "
                        "a spec's is its `pipeline` key")
    p.add_argument("--cache-dir", metavar="DIR", help="results cache (default: the compile cache's directory)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write cached results")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    return p


def _run(args: argparse.Namespace) -> int:
    from tools.dse.spec import DseSpec, SpecError, load_spec
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    if args.budget is not None and args.budget < 1:
        raise UsageError(f"--budget must be at least 1, got {args.budget}")
    if args.fusion_depth and args.sram_sizes:
        raise UsageError("--fusion-depth and --sram-sizes are two sweeps: give one")
    if args.fusion_depth or args.sram_sizes:
        return _curve(args)
    if len(args.inputs) != 1 or not args.inputs[0].endswith(".toml"):
        raise UsageError("expected one SPEC.toml (or --fusion-depth / --sram-sizes with models)")
    try:
        spec: DseSpec = load_spec(args.inputs[0])
    except SpecError as e:
        raise UserError(str(e)) from None
    if args.budget is not None:
        spec.budget = args.budget
    if args.search:
        spec.search = args.search
    spec.numerics = spec.numerics or args.numerics
    return _sweep(args, spec)


def _models(names: list[str], base_dir: Path | None) -> dict[str, bytes]:
    """Display name (a path's stem, else the name) -> the serialized model."""
    from tools.dse.models import ModelError, display_name, load
    out: dict[str, bytes] = {}
    for n in names:
        short = display_name(n)
        if short in out:
            raise UserError(f"model '{n}': a second model named '{short}' (rename one of the files)")
        try:
            out[short] = load(n, base_dir)
        except ModelError as e:
            raise UserError(str(e)) from None
    return out


def _runner(args: argparse.Namespace, models: dict[str, bytes]):
    from tools.compile_cache import cache_dir
    from tools.dse.executors import ClusterError, make_executor
    from tools.dse.sweep import Runner
    try:
        executor = make_executor(args.cluster, args.jobs)
    except ClusterError as e:
        raise UserError(str(e)) from None
    return Runner(executor, cache_dir(args.cache_dir, args.no_cache), models)


def _sweep(args: argparse.Namespace, spec) -> int:
    from tools.dse.report import fronts, plot_pareto, table, write_results
    from tools.dse.sweep import Progress, run_grid, run_guided
    models = _models(spec.models, Path(spec.source).parent)
    spec.models = list(models)
    runner = _runner(args, models)
    grid = spec.uses_grid()
    total = spec.size() if grid else spec.budget
    progress = Progress(total, enabled=not args.quiet)
    try:
        points = run_grid(spec, runner, progress) if grid else run_guided(spec, runner, progress)
    except RuntimeError as e:
        raise UserError(str(e)) from None
    finally:
        runner.executor.close()
    out = Path(args.out or spec.out)
    meta = {"search_used": "grid" if grid else "optuna", "cached_rows": runner.hits,
            "engine": args.cluster or f"local x {args.jobs}"}
    write_results(out, spec, points, meta)
    pictures = plot_pareto(out, spec, points)
    print(table(spec, points, fronts(points, spec.models)["geomean"]))
    wrote = ", ".join(str(p) for p in [out / "results.csv", out / "results.json", *pictures])
    print(f"\nwrote {wrote}" + ("" if pictures else " (no picture: matplotlib is not installed)"))
    return EXIT_OK if any(r["status"] == "ok" for p in points for r in p.rows.values()) else EXIT_USER


def _curve(args: argparse.Namespace) -> int:
    from npu_dialects.arch import ArchError, parse_arch_spec
    from tools.dse.curves import (
        depth_options,
        format_curve,
        parse_size,
        parse_values,
        sram_arch,
        summarize_depth,
        summarize_sram,
        write_curve,
    )
    try:
        parse_arch_spec(args.arch)
    except ArchError as e:
        raise UsageError(f"bad --arch '{args.arch}': {e}") from None
    depth = args.fusion_depth is not None
    try:
        values = parse_values(args.fusion_depth, int) if depth else parse_values(args.sram_sizes, parse_size)
        archs = {v: (args.arch if depth else sram_arch(args.arch, v)) for v in values}
    except (ValueError, ArchError) as e:
        flag = "--fusion-depth" if depth else "--sram-sizes"
        raise UsageError(f"bad {flag}: {e}") from None
    what = "fusion_depth" if depth else "sram_bytes"
    models = _models(args.inputs, None)
    runner = _runner(args, models)
    progress_total = len(values) * len(models)
    from tools.dse.sweep import Progress
    progress = Progress(progress_total, enabled=not args.quiet)
    value_of: dict[int, int] = {}  # id(job) -> its swept value
    jobs = []
    for m in models:
        for v in values:
            jobs.append(runner.job(m, archs[v], depth_options(v, {}) if depth else {}, args.numerics, args.pipeline))
            value_of[id(jobs[-1])] = v
    by_model: dict[str, list[dict[str, Any]]] = {m: [] for m in models}
    def done(j, row: dict[str, Any]) -> None:
        by_model[j.name].append({**row, "value": value_of[id(j)]})
        progress.update(f"{j.name} {what}={value_of[id(j)]}")
    try:
        runner.run(jobs, done)
    finally:
        runner.executor.close()
    summaries = {}
    for m, rows in by_model.items():
        rows.sort(key=lambda r: r["value"])
        summaries[m] = summarize_depth(rows) if depth else summarize_sram(rows, args.dram_target)
        print(format_curve(what, m, rows, summaries[m]) + "\n")
    out = Path(args.out or "dse-results")
    write_curve(out, what, what, by_model, summaries)
    print(f"wrote {out / (what + '.csv')}, {out / (what + '.json')} and the picture {out / (what + '.svg')}",
          file=sys.stdout)
    return EXIT_OK if any(s.get("best") is not None for s in summaries.values()) else EXIT_USER


def main(argv: list[str] | None = None) -> int:
    """Entry point of `npu-dse`; returns the exit code."""
    return cli_main(build_parser, _run, argv)


console_main = console(main)
"""The `npu-dse` console script (`tools.cli.console`)."""

if __name__ == "__main__":
    console_main()

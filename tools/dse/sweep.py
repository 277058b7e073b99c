"""Running a sweep: jobs through an executor with a results cache and a progress
line, the exhaustive grid, and the guided search (optuna) for spaces larger than the
point budget.

The cache holds one JSON row per (model digest, arch, compile options, numerics,
compiler fingerprint: `tools.compile_cache.key`), so an interrupted sweep resumes
where it stopped and a repeated one costs nothing; a new compiler misses every row.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tools.dse.evaluate import Job, job_dict, model_digest
from tools.dse.executors import Executor
from tools.dse.spec import DseSpec, arch_of_point, area, point_label, point_options

GUIDED_BATCH = 4
"""Points the guided search asks for at a time: fixed, so its choices do not depend on
how many workers run them (the same seed gives the same points on any engine)."""


@dataclass
class Point:
    """One arch of a sweep and its rows (one per model)."""

    params: dict[str, Any]
    arch: str  # (its label: the arch spec, then the options it sets, `spec.point_label`)
    area: float
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)  # npu-default's, the spec's and the point's own
    spec: str = ""  # the arch spec alone (`--arch`)

    def ok(self) -> bool:
        return bool(self.rows) and all(r["status"] == "ok" for r in self.rows.values())

    def geomean_cycles(self) -> float | None:
        if not self.ok():
            return None
        return math.exp(sum(math.log(max(r["cycles"], 1)) for r in self.rows.values()) / len(self.rows))


class Progress:
    """A progress line on stderr: points done of the total, elapsed time, the best so far."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.last_pct = -1

    def update(self, best: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        pct = 100 * self.done // max(self.total, 1)
        bar = "#" * (pct // 5) + "." * (20 - pct // 5)
        line = f"[{bar}] {self.done}/{self.total} {time.perf_counter() - self.t0:5.0f} s  best: {best}"
        if self.tty:
            print("\r" + line[:160], end="" if self.done < self.total else "\n", file=self.stream, flush=True)
        elif pct // 10 != self.last_pct // 10 or self.done == self.total:
            print(line, file=self.stream, flush=True)
        self.last_pct = pct


class Runner:
    """Runs jobs on an executor through the results cache (`cache`: a directory or None)."""

    def __init__(self, executor: Executor, cache: Path | None, models: dict[str, bytes]):
        self.executor = executor
        self.cache = cache
        self.digests = {name: model_digest(data) for name, data in models.items()}
        self.refs = executor.share({self.digests[n]: d for n, d in models.items()})
        self.hits = 0

    def job(self, name: str, arch: str, options: dict[str, Any], numerics: bool, pipeline: str | None = None) -> Job:
        d = self.digests[name]
        return Job(model=self.refs[d], digest=d, name=name, arch=arch, options=options, numerics=numerics,
                   pipeline=pipeline)

    def _path(self, job: Job) -> Path | None:
        if self.cache is None:
            return None
        from tools.compile_cache import key
        k = key("npu-dse", job_dict(job))
        return self.cache / "dse" / k[:2] / f"{k}.json"

    def run(self, jobs: list[Job], done: Callable[[Job, dict[str, Any]], None]) -> list[dict[str, Any]]:
        """Each job's row, in order; `done(job, row)` as each arrives (cache hits first)."""
        rows: list[dict[str, Any] | None] = [None] * len(jobs)
        todo: list[Job] = []
        index = {id(j): i for i, j in enumerate(jobs)}
        for i, j in enumerate(jobs):
            p = self._path(j)
            if p is not None and p.exists():
                try:
                    rows[i] = json.loads(p.read_text())
                except (OSError, ValueError):
                    rows[i] = None
            if rows[i] is None:
                todo.append(j)
            else:
                self.hits += 1
                done(j, rows[i])  # type: ignore[arg-type]
        for j, row in self.executor.run(todo):
            rows[index[id(j)]] = row
            p = self._path(j)
            if p is not None:
                p.parent.mkdir(parents=True, exist_ok=True)
                tmp = p.with_suffix(".tmp")
                tmp.write_text(json.dumps(row))
                tmp.replace(p)
            done(j, row)
        return [r for r in rows if r is not None]


def _best_text(points: list[Point]) -> str:
    ok = [p for p in points if p.ok()]
    if not ok:
        return "-"
    b = min(ok, key=lambda p: (p.geomean_cycles() or 0, p.area))
    return f"{b.geomean_cycles():,.0f} cycles (geomean) at {b.arch}"


def evaluate_points(spec: DseSpec, runner: Runner, params: list[dict[str, Any]], progress: Progress,
                    points: list[Point]) -> list[Point]:
    """Every model at each arch of `params`; appends the new Points to `points`."""
    new = []
    for p in params:
        arch = arch_of_point(spec.base, p)
        new.append(Point(dict(p), point_label(spec.base, p), area(arch, spec.area),
                         options={**spec.options, **point_options(p)}, spec=arch.spec()))
    jobs = [runner.job(m, pt.spec, pt.options, spec.numerics, spec.pipeline) for pt in new for m in spec.models]
    of_job = {id(j): pt for j, pt in zip(jobs, (pt for pt in new for _ in spec.models))}

    def done(job: Job, row: dict[str, Any]) -> None:
        pt = of_job[id(job)]
        pt.rows[job.name] = row
        if len(pt.rows) == len(spec.models):
            points.append(pt)
            progress.update(_best_text(points))
    runner.run(jobs, done)
    return new


def run_grid(spec: DseSpec, runner: Runner, progress: Progress) -> list[Point]:
    """Every point of the space, in grid order."""
    return evaluate_points(spec, runner, spec.grid(), progress, [])


def run_guided(spec: DseSpec, runner: Runner, progress: Progress) -> list[Point]:
    """Multi-objective TPE (optuna) over the space: minimise the geometric-mean cycles over
    the models and the area proxy, `spec.budget` distinct points, GUIDED_BATCH at a time."""
    try:
        import optuna
    except ImportError:
        raise RuntimeError("the space has more points than the budget and the guided search needs optuna "
                           "(pip install 'npu-compiler[dse]'), or set search = \"grid\"") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=spec.seed, n_startup_trials=min(10, spec.budget))
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    points: list[Point] = []
    seen: dict[str, Point] = {}
    tries = 0
    while len(seen) < spec.budget and tries < 20 * spec.budget:
        trials = [study.ask() for _ in range(min(GUIDED_BATCH, spec.budget - len(seen)))]
        params = [{a.name: t.suggest_categorical(a.name, list(a.values)) for a in spec.axes} for t in trials]
        tries += len(trials)
        fresh = [p for p in params if point_label(spec.base, p) not in seen]
        unique = list({point_label(spec.base, p): p for p in fresh}.values())
        for pt in evaluate_points(spec, runner, unique, progress, points):
            seen[pt.arch] = pt
        for t, p in zip(trials, params):
            pt = seen[point_label(spec.base, p)]
            g = pt.geomean_cycles()
            if g is None:
                study.tell(t, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(t, [g, pt.area])
    return list(seen.values())

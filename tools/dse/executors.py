"""Where the points run: local worker processes (the default), or an existing Ray or
Dask cluster the user points at (`--cluster ray://HOST:PORT`, `ray` for a local Ray,
`dask://HOST:PORT` / `tcp://HOST:PORT` for a Dask scheduler). Each engine ships every
model to its workers once (Ray's object store, Dask's scatter; forked local workers
inherit it) and runs `evaluate.evaluate` on each job; nothing here distributes work by
hand. Results are the same whichever engine ran them (the figures are deterministic).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import replace
from typing import Any

from tools.dse.evaluate import Job, evaluate, forget_models


class ClusterError(Exception):
    """The cluster engine is missing or cannot be reached (one-line message)."""


class Executor:
    """Runs jobs; `run(jobs)` yields (job, row) as they complete."""

    def share(self, models: dict[str, bytes]) -> dict[str, Any]:
        """Make the models (digest -> bytes) available to the workers; returns digest -> what a
        Job carries as its `model`."""
        raise NotImplementedError

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, dict[str, Any]]]:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _evaluate_local(job: Job) -> dict[str, Any]:
    """A local worker: the job names its model by digest (inherited by fork, or sent once
    per worker by the pool's initializer)."""
    return evaluate(replace(job, model=_SHARED[job.digest]))


_SHARED: dict[str, bytes] = {}


def _init_worker(models: dict[str, bytes]) -> None:
    _SHARED.update(models)
    os.environ.setdefault("NPU_COMPILE_JOBS", "1")  # (each worker compiles on one core: the pool is the parallelism)


class LocalExecutor(Executor):
    """A pool of `jobs` worker processes on this machine."""

    def __init__(self, jobs: int):
        self.jobs = max(1, jobs)
        self.pool: ProcessPoolExecutor | None = None

    def share(self, models: dict[str, bytes]) -> dict[str, Any]:
        _SHARED.update(models)
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        ctx = multiprocessing.get_context(method)
        init_args = ({},) if method == "fork" else (dict(models),)
        self.pool = ProcessPoolExecutor(self.jobs, mp_context=ctx, initializer=_init_worker, initargs=init_args)
        return {d: d for d in models}

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, dict[str, Any]]]:
        if self.jobs == 1 or len(jobs) == 1:
            for job in jobs:  # (in this process: _SHARED holds the models)
                yield job, _evaluate_local(job)
            return
        assert self.pool is not None, "share() before run()"
        pending = {self.pool.submit(_evaluate_local, j): j for j in jobs}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                yield pending.pop(f), f.result()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
        forget_models()


class DaskExecutor(Executor):
    """Jobs on a running Dask scheduler (`distributed.Client(address)`)."""

    def __init__(self, address: str):
        try:
            from distributed import Client
        except ImportError:
            raise ClusterError("--cluster dask://...: the 'distributed' package is not installed "
                               "(pip install 'npu-compiler[dse]')") from None
        try:
            self.client = Client(address, timeout=20)
        except (OSError, TimeoutError) as e:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: {e}") from None

    def share(self, models: dict[str, bytes]) -> dict[str, Any]:
        return {d: self.client.scatter(data, broadcast=True, hash=False) for d, data in models.items()}

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, dict[str, Any]]]:
        from distributed import as_completed
        futures = {self.client.submit(_evaluate_shared, j.model, replace(j, model=None), pure=False): j for j in jobs}
        for f in as_completed(list(futures)):
            yield futures[f], f.result()

    def close(self) -> None:
        self.client.close()


def _evaluate_shared(model: bytes, job: Job) -> dict[str, Any]:
    """A cluster worker: the engine resolved the model reference to its bytes."""
    return evaluate(replace(job, model=model))


class RayExecutor(Executor):
    """Jobs on a Ray cluster (`ray.init(address)`; `ray` alone starts a local one)."""

    def __init__(self, address: str | None):
        try:
            import ray  # pyright: ignore[reportMissingImports]  # (optional: not among the dependencies)
        except ImportError:
            raise ClusterError("--cluster ray://...: the 'ray' package is not installed (pip install ray)") from None
        self.ray = ray
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                     include_dashboard=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ClusterError(f"cannot reach the Ray cluster at {address}: {e}") from None
        self.remote = ray.remote(_evaluate_shared)

    def share(self, models: dict[str, bytes]) -> dict[str, Any]:
        return {d: self.ray.put(data) for d, data in models.items()}

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, dict[str, Any]]]:
        refs = {self.remote.remote(j.model, replace(j, model=None)): j for j in jobs}
        pending = list(refs)
        while pending:
            done, pending = self.ray.wait(pending, num_returns=1)
            for r in done:
                yield refs[r], self.ray.get(r)

    def close(self) -> None:
        self.ray.shutdown()


def make_executor(cluster: str | None, jobs: int) -> Executor:
    """The executor `--cluster` names (None: local processes, `jobs` of them)."""
    if cluster is None:
        return LocalExecutor(jobs)
    if cluster == "ray" or cluster.startswith("ray://"):
        return RayExecutor(None if cluster == "ray" else cluster)
    if cluster.startswith("dask://"):
        return DaskExecutor("tcp://" + cluster[len("dask://"):])
    if cluster.startswith("tcp://"):
        return DaskExecutor(cluster)
    raise ClusterError(f"unknown cluster '{cluster}' (expected ray, ray://HOST:PORT, dask://HOST:PORT or "
                       "tcp://HOST:PORT)")

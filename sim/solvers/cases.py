"""Run many independent cases: a local process pool by default, a Dask cluster on request.

A case is ``fn(*args)`` with a module-level (picklable) ``fn``; a case that raises is
recorded with its one-line error and does not stop the others.  Results come back in case
order whatever the executor, so a sweep gives identical numbers locally and on a cluster.

References
----------
Dask.distributed, ``Client.map`` / ``Client.gather``: https://distributed.dask.org
"""
import ctypes
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from threadpoolctl import threadpool_limits

from sim.errors import SimError, one_line


@dataclass(frozen=True)
class CaseResult:
    """Outcome of one case: ``value`` when it ran, else ``error`` (one line)."""

    index: int
    value: object = None
    error: str | None = None

    @property
    def ok(self):
        return self.error is None


def _guarded(fn, index, args):
    # Single-threaded BLAS in every worker, whoever started it: threaded reductions round
    # differently, and a sweep must give the same numbers on any executor.
    with threadpool_limits(limits=1):
        try:
            return CaseResult(index, fn(*args))
        except Exception as exc:  # a failed case is data, not a crash of the sweep
            return CaseResult(index, error=f"{type(exc).__name__}: {one_line(exc)}")


def run_cases(fn, cases, scheduler=None, workers=None, progress=None):
    """Evaluate ``fn(*case)`` for every case.

    Parameters
    ----------
    fn : callable
        Module-level function (it is pickled to the workers).
    cases : sequence of tuple
        Arguments of each case.
    scheduler : str or distributed.Client or None
        ``None``: local process pool; ``"serial"``: in this process; otherwise a Dask
        scheduler address (``"tcp://host:8786"``) or a ``distributed.Client``.
    workers : int, optional
        Local pool size (default: the machine's cores).
    progress : tqdm-like, optional
        ``update(1)`` is called as cases finish.

    Returns
    -------
    list of CaseResult, in case order.
    """
    cases = [tuple(c) for c in cases]
    if scheduler == "serial" or len(cases) <= 1:
        out = []
        for i, c in enumerate(cases):
            out.append(_guarded(fn, i, c))
            if progress is not None:
                progress.update(1)
        return out
    if scheduler is None:
        return _local(fn, cases, workers, progress)
    return _dask(fn, cases, scheduler, progress)


def _worker_init():
    """In each pool worker: the stop signals are the parent's to handle (it ends the workers),
    and on Linux the worker dies with its parent, even one killed with SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() == 1:     # the parent died before prctl: nobody will collect the results
        os._exit(1)


def _stop(pool):
    """End a pool now: pending cases cancelled, workers killed (none outlives the run)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join(timeout=5)


def _local(fn, cases, workers, progress):
    """The cases on a local process pool.  A worker that dies (killed, or crashing in native
    code) breaks the pool: the unfinished cases run again once in a fresh pool, and those that
    break it again are recorded as failed."""
    workers = workers or os.cpu_count() or 1
    results = [None] * len(cases)
    todo = list(range(len(cases)))
    for attempt in range(2):
        todo = _pool_round(fn, cases, todo, workers, results, progress)
        if not todo:
            return results
    for i in todo:
        results[i] = CaseResult(i, error="the worker process running this case died (killed, or crashed)")
        if progress is not None:
            progress.update(1)
    return results


def _pool_round(fn, cases, todo, workers, results, progress):
    """The cases ``todo`` on a fresh pool, results into ``results``; returns those left
    unfinished by a broken pool."""
    pool = ProcessPoolExecutor(max_workers=min(workers, len(todo)), initializer=_worker_init)
    broken = []
    try:
        futures = {i: pool.submit(_guarded, fn, i, cases[i]) for i in todo}
        for i, f in futures.items():
            try:
                r = f.result()
            except BrokenProcessPool:
                broken.append(i)
                continue
            results[r.index] = r
            if progress is not None:
                progress.update(1)
    finally:
        _stop(pool)
    return broken


CONNECT_TIMEOUT = 10.0    # s: a scheduler that does not answer within this is unreachable


def _dask(fn, cases, scheduler, progress):
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise SimError("a Dask scheduler was given but dask.distributed is not installed "
                       "(pip install 'dask[distributed]')") from None
    own = not isinstance(scheduler, Client)
    try:
        client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT}s") if own else scheduler
    except (OSError, TimeoutError, ValueError) as exc:
        raise SimError(f"cannot reach the Dask scheduler {scheduler!r}: {one_line(exc)}") from None
    try:
        futures = client.map(_guarded, [fn] * len(cases), range(len(cases)), cases, pure=False)
        results = [None] * len(cases)
        for f in as_completed(futures):
            r = f.result()
            results[r.index] = r
            if progress is not None:
                progress.update(1)
        return results
    finally:
        if own:
            client.close()


def modes_case(model_file, parameters, pose=None, count=6):
    """One sweep case: lowest ``count`` elastic frequencies [Hz] of a model file at a pose.

    The model is built in the worker (models are cheap to build and this keeps cases
    independent of any state of the caller).
    """
    from sim.model.assembly import solve_pose
    from sim.model.loader import load_model
    from sim.solvers.modal import modes

    model = load_model(model_file, parameters)
    q = model.q_home if pose is None else solve_pose(model, pose)
    return modes(model, q, count=count).frequencies_hz

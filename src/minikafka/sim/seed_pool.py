"""Running seeds, in this process or in a pool of worker processes (`--jobs`), and ending them on SIGTERM or SIGINT:
the run stops where it is, no process prints a traceback and no seed's scratch directory is left behind.

Every seed of a run makes its scratch directory inside one directory of the run, which the parent removes last,
whatever the workers managed. On the signal the parent ends the pool (each worker gets SIGTERM); a worker running a
seed unwinds it from a callback of the seed's loop (a handler raising at an arbitrary point could raise inside a
finalizer or weakref callback, where Python prints the exception and goes on), and an idle one exits at once."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import multiprocessing
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType

from minikafka.sim.world import SimulationResult, SimulationSettings, simulate_seed

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(SystemExit):
    """SIGTERM or SIGINT: the run ends where it is. A SystemExit: no `except Exception` on the way keeps the seed
    going, and the simulation's loop lets it through (another BaseException would only end one task)."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def _stop_in_loop(signum: int) -> bool:
    """Stopped raised by the running seed's loop, if one runs; in a context of its own (the interrupted code's may
    be a paused node's, whose callbacks the loop holds)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)  # the first signal ends the run; more would interrupt its cleanup
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    loop.call_soon(_raise, Stopped(signum), context=contextvars.Context())
    return True


def _raise(stopped: Stopped) -> None:
    raise stopped


def _stop(signum: int, _frame: FrameType | None) -> None:
    if not _stop_in_loop(signum):
        raise Stopped(signum)


def _worker_stop(signum: int, _frame: FrameType | None) -> None:
    if not _stop_in_loop(signum):
        os._exit(128 + signum)  # idle, or between a seed's loop and its cleanup: the parent removes what is left


def _worker_started() -> None:
    """A pool worker leaves SIGINT (a terminal's Ctrl-C reaches every process of the group) to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_stop)


def _run_in_worker(settings: SimulationSettings) -> SimulationResult:
    try:
        return simulate_seed(settings)
    except Stopped as stopped:
        os._exit(128 + stopped.signum)  # the seed unwound (its scratch removed); the pool is being ended


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """SIGTERM and SIGINT raise Stopped in this process while the block runs."""
    previous = {sig: signal.signal(sig, _stop) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def results(settings: SimulationSettings, seeds: Sequence[int], jobs: int) -> Iterator[SimulationResult]:
    """Each seed's result in seed order, from `jobs` processes; the run's scratch directory removed at the end."""
    shm = Path("/dev/shm")
    parent = settings.scratch if settings.scratch is not None else (str(shm) if shm.is_dir() else None)
    run_dir = tempfile.mkdtemp(prefix="minikafka-sim-run-", dir=parent)
    every = [replace(settings, seed=seed, scratch=run_dir) for seed in seeds]
    try:
        if jobs == 1:
            yield from map(simulate_seed, every)
            return
        with multiprocessing.get_context("spawn").Pool(jobs, initializer=_worker_started) as pool:
            yield from pool.imap(_run_in_worker, every)  # in seed order; leaving the block ends the workers
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)

"""Spark jobs run two at a time from driver threads: the analysis is many small jobs, each mostly waiting on its
stages' scheduling, and two in flight keep both cores of a small machine busy (about twice as fast here)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pyspark.sql import DataFrame

CONCURRENT_JOBS = 2

Item = TypeVar("Item")
Out = TypeVar("Out")


def run_jobs(job: Callable[[Item], Out], items: Iterable[Item]) -> list[Out]:
    """`job` of each item, in the items' order; an exception in one is raised here."""
    with ThreadPoolExecutor(max_workers=CONCURRENT_JOBS) as pool:
        return list(pool.map(job, items))


def rows_of(frame: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in frame.collect()]


def collect_all(frames: dict[str, DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """Each frame's rows, by name, the frames collected concurrently."""
    return dict(zip(frames, run_jobs(rows_of, frames.values()), strict=True))

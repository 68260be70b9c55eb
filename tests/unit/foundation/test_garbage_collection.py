"""Every process's event loop runs with the collector set for a server (common.garbage_collection)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from minikafka.common.cli_support import run_event_loop
from minikafka.common.garbage_collection import YOUNG_GENERATION_THRESHOLD


@pytest.fixture
def restored_collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("restored_collector")
def test_a_commands_loop_runs_with_startup_frozen_and_rarer_young_collections() -> None:
    default_middle, default_old = gc.get_threshold()[1:]

    async def observe() -> tuple[tuple[int, int, int], int]:
        return gc.get_threshold(), gc.get_freeze_count()

    thresholds, frozen = run_event_loop(observe())

    assert thresholds == (YOUNG_GENERATION_THRESHOLD, default_middle, default_old)
    assert frozen > 0  # what startup imported is out of every collection's reach
    # A second command in the same process (run_all, demo) leaves the older generations as they were.
    assert run_event_loop(observe())[0] == thresholds

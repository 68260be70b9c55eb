"""Purgatory: every parked wait is answered by `wake_all` (True) or by its own timeout (False), and a wait that
ends either way, or is cancelled, leaves nothing parked behind."""

from __future__ import annotations

import asyncio

from minikafka.common.purgatory import Purgatory


async def _parked(purgatory: Purgatory, count: int) -> None:
    """Until `count` waits are parked (each parks in its task's first step)."""
    while len(purgatory._parked) < count:
        await asyncio.sleep(0)


async def test_wake_all_answers_every_parked_wait_with_true() -> None:
    purgatory = Purgatory()
    waits = [asyncio.create_task(purgatory.wait(60)) for _ in range(5)]
    await _parked(purgatory, 5)
    purgatory.wake_all()
    assert await asyncio.gather(*waits) == [True] * 5
    assert not purgatory


async def test_a_wait_that_times_out_answers_false_and_leaves_the_others_parked() -> None:
    purgatory = Purgatory()
    long_wait = asyncio.create_task(purgatory.wait(60))
    assert await purgatory.wait(0.01) is False
    await _parked(purgatory, 1)
    assert purgatory  # the long wait is still parked
    purgatory.wake_all()
    assert await long_wait is True


async def test_a_wait_without_a_timeout_parks_until_woken() -> None:
    purgatory = Purgatory()
    wait = asyncio.create_task(purgatory.wait(None))
    await _parked(purgatory, 1)
    assert not wait.done()
    purgatory.wake_all()
    assert await wait is True


async def test_a_cancelled_wait_is_no_longer_parked() -> None:
    purgatory = Purgatory()
    wait = asyncio.create_task(purgatory.wait(60))
    await _parked(purgatory, 1)
    wait.cancel()
    await asyncio.gather(wait, return_exceptions=True)
    assert not purgatory
    purgatory.wake_all()  # nothing left to answer


async def test_a_wake_before_the_wait_is_not_remembered() -> None:
    """Callers check their condition before parking (a long poll re-reads first): a wake-up is not a latch."""
    purgatory = Purgatory()
    purgatory.wake_all()
    assert await purgatory.wait(0.01) is False

"""InFlight: acquire waits while `limit` tracked futures are pending; drain waits for all of them."""

from __future__ import annotations

import asyncio

from minikafka.client.in_flight import InFlight


async def test_acquire_waits_for_a_slot_and_drain_for_every_future() -> None:
    in_flight = InFlight(2)
    loop = asyncio.get_running_loop()
    first, second = loop.create_future(), loop.create_future()
    for future in (first, second):
        await in_flight.acquire()
        in_flight.track(future)
    third = asyncio.ensure_future(in_flight.acquire())
    await asyncio.sleep(0)
    assert not third.done()  # both slots held
    second.set_result(None)
    await asyncio.wait_for(third, 1)  # a slot came back when `second` finished
    in_flight.track(loop.create_future())
    draining = asyncio.ensure_future(in_flight.drain())
    first.set_exception(RuntimeError("a failed delivery is done too"))
    await asyncio.sleep(0)
    assert not draining.done()  # the third future is still pending
    for future in list(in_flight._pending):
        future.set_result(None)
    await asyncio.wait_for(draining, 1)


async def test_on_done_runs_before_the_slot_is_released() -> None:
    in_flight = InFlight(1)
    future = asyncio.get_running_loop().create_future()
    seen: list[tuple[object, bool]] = []
    await in_flight.acquire()
    # The slot is still held when on_done runs: a tool's accounting is in before the next send may start.
    in_flight.track(future, lambda done: seen.append((done.result(), in_flight.full())))
    future.set_result("acked")
    await asyncio.wait_for(in_flight.acquire(), 1)
    assert seen == [("acked", True)]
    assert not in_flight._pending

"""The virtual-time loop: timers fire in order on a clock that jumps, thread-pool work runs inline, the clock seam
reads it, and a run that can never move on says so."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading

import pytest
from virtual_loop import WALL_START_S, Deadlock, run_virtual

from minikafka.common.clock import monotonic_ms, new_random, wall_ms
from minikafka.common.node_environment import SimulatedNode, enter_simulated_node
from minikafka.sim.disk import SimDisk
from minikafka.sim.virtual_loop import VirtualTimeLoop


def test_timers_fire_in_order_on_the_virtual_clock() -> None:
    fired: list[tuple[str, int]] = []

    async def main() -> int:
        loop = asyncio.get_running_loop()
        loop.call_later(3600, lambda: fired.append(("hour", monotonic_ms())))
        loop.call_later(0.25, lambda: fired.append(("quarter", monotonic_ms())))
        await asyncio.sleep(7200)
        return wall_ms()

    assert run_virtual(main()) == int((WALL_START_S + 7200) * 1000)
    assert fired == [("quarter", 250), ("hour", 3_600_000)]


def test_timeouts_run_on_the_virtual_clock() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), 30)
        return loop.time()

    assert run_virtual(main(), start_s=5.0) == 35.0


def test_thread_pool_work_runs_inline_with_its_errors() -> None:
    async def main() -> tuple[int, float]:
        result = await asyncio.to_thread(lambda: 6 * 7)
        with pytest.raises(ZeroDivisionError):
            await asyncio.get_running_loop().run_in_executor(None, lambda: 1 / 0)
        return result, asyncio.get_running_loop().time()

    assert run_virtual(main()) == (42, 0.0)


def test_the_shells_randomness_follows_the_seed() -> None:
    async def draws() -> list[int]:
        return [new_random().randint(1, 1 << 30) for _ in range(3)]

    assert run_virtual(draws(), seed=7) == run_virtual(draws(), seed=7)
    assert run_virtual(draws(), seed=7) != run_virtual(draws(), seed=8)


def test_waiting_on_what_nothing_can_set_is_a_deadlock() -> None:
    with pytest.raises(Deadlock):
        run_virtual(asyncio.Event().wait())


def test_a_wait_until_a_moment_within_the_clock_resolution_reaches_it() -> None:
    """asyncio fires a timer less than its clock resolution ahead without waiting: the virtual clock must then
    stand at the timer's time, or a loop waiting until that moment spins forever at the same instant."""
    start = 40.685501062025594
    ready_at = 40.68550106202561  # two float steps later

    async def main() -> int:
        loop = asyncio.get_running_loop()
        rounds = 0
        while loop.time() < ready_at and rounds < 1000:
            rounds += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.Event().wait(), ready_at - loop.time())
        return rounds

    assert run_virtual(main(), start_s=start) == 1


def test_a_paused_node_runs_nothing_until_it_resumes_while_the_others_go_on() -> None:
    ticks: dict[int, list[float]] = {1: [], 2: []}

    async def ticking(node_id: int) -> None:
        while True:
            await asyncio.sleep(1)
            ticks[node_id].append(asyncio.get_running_loop().time())

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualTimeLoop)
        for node_id in ticks:
            context = contextvars.Context()
            context.run(enter_simulated_node, SimulatedNode(node_id, None, SimDisk()))  # type: ignore[arg-type]
            loop.create_task(ticking(node_id), context=context)
        await asyncio.sleep(2.5)
        loop.pause(1)
        await asyncio.sleep(5)
        loop.resume(1)
        await asyncio.sleep(1)

    loop = VirtualTimeLoop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert ticks[2] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    # the tick due at 3 s ran on resuming at 7.5 s, like a stopped process's overdue timer
    assert ticks[1] == [1.0, 2.0, 7.5, 8.5]


def _firing_order(loop: asyncio.AbstractEventLoop) -> list[int]:
    """Timers at few distinct moments (many at the same one), some cancelled, all due in one turn: the order the
    loop's heap gives them."""
    fired: list[int] = []
    base = loop.time()
    timers = [loop.call_at(base - 1 + (n * 7919 % 13) / 100, fired.append, n) for n in range(300)]
    for timer in timers[::3]:
        timer.cancel()
    loop.call_later(0, loop.stop)
    loop.run_forever()
    return fired


def test_timers_due_at_the_same_moment_fire_in_asyncio_s_own_order() -> None:
    """The virtual loop keeps its timers as (when, handle) pairs: the order must stay asyncio's, replays depend on
    it."""
    virtual, real = VirtualTimeLoop(), asyncio.SelectorEventLoop()
    try:
        assert _firing_order(virtual) == _firing_order(real)
    finally:
        virtual.close()
        real.close()


def test_a_failing_callback_goes_to_the_exception_handler_and_the_loop_goes_on() -> None:
    seen: list[BaseException] = []
    loop = VirtualTimeLoop()
    loop.set_exception_handler(lambda _loop, context: seen.append(context["exception"]))

    def fail() -> None:
        raise ValueError("boom")

    async def main() -> float:
        loop.call_soon(fail)
        await asyncio.sleep(1)
        return loop.time()

    try:
        assert loop.run_until_complete(main()) == 1.0
    finally:
        loop.close()
    assert [repr(error) for error in seen] == [repr(ValueError("boom"))]


def _handle_fields(handle: asyncio.Handle) -> dict[str, object]:
    slots = [
        *asyncio.Handle.__slots__,
        *(asyncio.TimerHandle.__slots__ if isinstance(handle, asyncio.TimerHandle) else []),
    ]
    return {name: getattr(handle, name) for name in slots if name != "__weakref__"}


def test_the_loop_s_handles_carry_what_asyncio_s_constructors_set() -> None:
    """The loop builds its handles without asyncio's constructors: every field must still be theirs."""
    loop = VirtualTimeLoop()
    context = contextvars.copy_context()
    try:
        soon, later = loop.call_soon(print, 1, context=context), loop.call_later(2.5, print, 2, context=context)
        assert _handle_fields(soon) == _handle_fields(asyncio.Handle(print, (1,), loop, context))
        expected = asyncio.TimerHandle(2.5, print, (2,), loop, context)
        expected._scheduled = True  # type: ignore[attr-defined]
        assert _handle_fields(later) == _handle_fields(expected)
        assert loop.call_soon(print)._context is not None  # type: ignore[attr-defined]  # the caller's, copied
    finally:
        loop.close()


def _cancelling(loop: asyncio.AbstractEventLoop) -> list[int]:
    """Timers cancelled before and after they fire: what is left in the heap after each turn (asyncio drops the
    cancelled ones at its head, and all of them once they are most of many)."""
    left: list[int] = []
    # An hour ahead: on a busy machine the real loop's clock could reach timers a few milliseconds away between its
    # turns and fire some, which the virtual loop, whose clock stands while callbacks are ready, never does.
    base = loop.time() + 3600
    timers = [loop.call_at(base + n / 1000, lambda: None) for n in range(400)]
    for timer in timers[:10] + timers[150:380]:
        timer.cancel()
    for _ in range(3):
        loop.call_soon(loop.stop)
        loop.run_forever()
        left.append(len(loop._scheduled))  # type: ignore[attr-defined]
    for timer in timers:
        timer.cancel()  # fired ones too, as asyncio.sleep does
    loop.call_soon(loop.stop)
    loop.run_forever()
    left.append(len(loop._scheduled))  # type: ignore[attr-defined]
    return left


def test_cancelled_timers_leave_the_heap_as_asyncio_s_do() -> None:
    virtual, real = VirtualTimeLoop(), asyncio.SelectorEventLoop()
    try:
        assert _cancelling(virtual) == _cancelling(real)
    finally:
        virtual.close()
        real.close()


def test_the_running_loop_is_the_virtual_one_in_its_thread_only_and_only_while_it_runs() -> None:
    """The loop answers asyncio's running-loop lookups itself while it runs: other threads must still get theirs."""
    originals = asyncio.get_running_loop, asyncio._get_running_loop, asyncio.events.get_running_loop
    elsewhere: list[object] = []

    def in_a_thread() -> None:
        elsewhere.append(asyncio._get_running_loop())

        async def own() -> asyncio.AbstractEventLoop:
            return asyncio.get_running_loop()

        elsewhere.append(asyncio.run(own()))

    async def main() -> bool:
        thread = threading.Thread(target=in_a_thread)
        thread.start()
        thread.join()
        loop = asyncio.get_running_loop()
        return loop is asyncio._get_running_loop() is asyncio.events.get_running_loop()

    assert run_virtual(main())
    assert elsewhere[0] is None
    assert isinstance(elsewhere[1], asyncio.AbstractEventLoop) and not isinstance(elsewhere[1], VirtualTimeLoop)
    assert (asyncio.get_running_loop, asyncio._get_running_loop, asyncio.events.get_running_loop) == originals
    assert asyncio._get_running_loop() is None

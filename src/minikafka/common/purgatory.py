"""Parked waits (Kafka's purgatory, much reduced): each waits on its own future with a timer, and `wake_all` answers
every one at once. `asyncio.wait_for(shield(...))` would cost two loop turns between the wake-up and the waiter, and
these waits sit on the hot paths (a long-polled Fetch, the controller's append linger)."""

from __future__ import annotations

import asyncio


class Purgatory:
    def __init__(self) -> None:
        # In arrival order (a dict, not a set, whose order follows memory addresses): woken first-come first-served,
        # the same way in every run, so a simulated run replays.
        self._parked: dict[asyncio.Future[bool], None] = {}

    def __bool__(self) -> bool:
        return bool(self._parked)

    def wake_all(self) -> None:
        parked, self._parked = self._parked, {}
        for waiter in parked:
            _answer(waiter, True)

    async def wait(self, timeout_s: float | None) -> bool:
        """Park until `wake_all` (True) or until `timeout_s` passes (False); None waits without a timeout."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._parked[waiter] = None
        timer = None if timeout_s is None else loop.call_later(timeout_s, _answer, waiter, False)
        try:
            return await waiter
        finally:
            if timer is not None:
                timer.cancel()
            self._parked.pop(waiter, None)


def _answer(waiter: asyncio.Future[bool], woken: bool) -> None:
    if not waiter.done():
        waiter.set_result(woken)

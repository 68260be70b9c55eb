"""A bound on deliveries awaiting their acknowledgement, for the tools that send as fast as they can.

O(1) per record: waiting with `asyncio.wait(outstanding, FIRST_COMPLETED)` instead costs O(outstanding) per record
(it hooks a callback on every pending future each time), which made `perf produce` spend 80% of its CPU there. A
count, not an `asyncio.Semaphore`: Python 3.11's `Semaphore.acquire` asks `locked()`, which builds a generator
over its waiters on every call (6% of `perf produce`'s samples).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class InFlight:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._taken = 0  # slots acquired and not yet released
        self._freed: asyncio.Future[None] | None = None  # set when a slot comes back, while someone waits
        self._pending: set[asyncio.Future[object]] = set()

    def full(self) -> bool:
        return self._taken >= self._limit

    async def acquire(self) -> None:
        """Wait until fewer than `limit` tracked futures are pending."""
        while self._taken >= self._limit:
            if self._freed is None or self._freed.done():
                self._freed = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._freed)  # a cancelled waiter leaves the shared future to the others
        self._taken += 1

    def track(
        self,
        future: asyncio.Future,
        on_done: Callable[[asyncio.Future], None] | None = None,
    ) -> None:
        """Hold the slot taken by `acquire` until `future` is done, running `on_done(future)` first if given.

        One done callback for both: a callback is a loop turn's handle, and the tools track every record."""
        self._pending.add(future)
        if on_done is None:
            future.add_done_callback(self._release)
            return

        def done(finished: asyncio.Future) -> None:
            on_done(finished)
            self._release(finished)

        future.add_done_callback(done)

    def _release(self, future: asyncio.Future) -> None:
        self._pending.discard(future)
        self._taken -= 1
        if self._freed is not None and not self._freed.done():
            self._freed.set_result(None)

    async def drain(self) -> None:
        """Until every tracked future is done (their own done callbacks registered earlier have run)."""
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)

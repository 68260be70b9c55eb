"""A check a coordinator runs every so often from its tick (offset expiry, transactional id expiry)."""

from __future__ import annotations


class IntervalCheck:
    """Due once every `interval_ms`, the first time one interval after the first tick (Kafka's schedulers start
    their periodic cleanups with an initial delay of one period)."""

    def __init__(self, interval_ms: int) -> None:
        self.interval_ms = interval_ms
        self._next_ms: int | None = None

    def due(self, now_ms: int) -> bool:
        if self._next_ms is None:
            self._next_ms = now_ms + self.interval_ms
        if now_ms < self._next_ms:
            return False
        self._next_ms = now_ms + self.interval_ms
        return True

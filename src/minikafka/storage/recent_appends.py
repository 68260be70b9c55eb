"""The newest appends to the active segment, kept in memory as they were written.

Followers fetch what the leader appended a moment ago. Answering them from these bytes skips the file read, the
walk over batch headers and the CRC check of bytes that never left memory. Consumers read below the high watermark
from the file, where the CRC check on read finds bytes changed on disk (`fault corrupt` flips one in a running
broker's segment). Only appends of one batch held as bytes are kept (a producer's, as the leader stamped it), at most
KEPT_BYTES per segment: a follower's appends are views of the answer it fetched, and keeping one would mean copying
it and holding on to the whole answer.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from minikafka.common.record_batch import LOG_OVERHEAD

# About what one partition takes in while a follower's fetch is under way at 100 MB/s, so a follower a fetch or
# two behind is still answered from memory.
KEPT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Append:
    first_offset: int
    position: int  # in the segment file
    data: bytes | None  # None when not kept


class RecentAppends:
    def __init__(self, limit: int = KEPT_BYTES) -> None:
        self._limit = limit
        self._kept: deque[Append] = deque()  # contiguous, ending at the segment's end
        self._bytes = 0
        self.last: Append | None = None  # the newest append, kept or not

    def add(self, first_offset: int, position: int, data: bytes | memoryview) -> None:
        kept = data if isinstance(data, bytes) and len(data) <= self._limit and _one_batch(data) else None
        self.last = Append(first_offset, position, kept)
        if kept is None:
            self._drop_kept()  # what is kept must reach the end of the segment
            return
        self._kept.append(self.last)
        self._bytes += len(kept)
        while self._bytes > self._limit:
            self._bytes -= len(self._kept.popleft().data or b"")

    def clear(self) -> None:
        self._drop_kept()
        self.last = None

    def _drop_kept(self) -> None:
        self._kept.clear()
        self._bytes = 0

    def read(self, offset: int, max_bytes: int, first_whole: bool = True) -> bytes | None:
        """What the file read answers, when `offset` starts a kept batch: the batches from there on, at most
        `max_bytes` (the first whole even past it when `first_whole`). Otherwise None.

        Searched from the newest end, where followers read: the cost is the batches from `offset` on, which the
        answer holds anyway (thousands of small batches may be kept)."""
        kept = self._kept
        if not kept or not kept[0].first_offset <= offset <= kept[-1].first_offset:
            return None
        newest_first: list[bytes] = []
        for append in reversed(kept):
            assert append.data is not None
            newest_first.append(append.data)
            if append.first_offset <= offset:
                break
        if append.first_offset != offset:
            return None  # `offset` falls inside a batch: the file read finds the batch holding it
        parts: list[bytes] = []
        total = 0
        for data in reversed(newest_first):
            if (parts or not first_whole) and total + len(data) > max_bytes:
                break
            parts.append(data)
            total += len(data)
        if not parts:
            return b""
        return b"".join(parts) if len(parts) > 1 else parts[0]


def _one_batch(data: bytes) -> bool:
    """Whether the first batch's length (after its base offset) covers all of `data`."""
    if len(data) < LOG_OVERHEAD:
        return False
    return int.from_bytes(data[LOG_OVERHEAD - 4 : LOG_OVERHEAD], "big") + LOG_OVERHEAD == len(data)

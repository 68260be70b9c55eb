"""Whether a compacted topic's reader may have missed a tombstone: Kafka's `delete.retention.ms` promise to readers.

A cleaner removes a tombstone that is its key's latest record only once `delete.retention.ms` has passed since a
cleaning first kept it, so no sooner than that long after it was sent. A reader that went past the tombstone's
offset before then must have read it. One that went past later may have found it gone, as may any reader once a
later record of the key was sent (it may have replaced the tombstone and been removed in turn).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KeySent:
    """When a key was last sent, and how many sends were at that time (two at once: their order is unknown)."""

    at_s: float
    count: int


@dataclass
class ReaderProgress:
    """One reader's reads of one partition, in the increasing offset order a plain consumer reads in."""

    offsets: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    def passed(self, offset: int) -> float | None:
        """When the reader first read past `offset`, or None if it never did."""
        index = bisect.bisect_right(self.offsets, offset)
        return self.times[index] if index < len(self.times) else None


@dataclass
class TombstoneReads:
    delete_retention_s: float = math.inf
    key_sent: dict[bytes, KeySent] = field(default_factory=dict)
    sent_at: dict[tuple[int, int], float] = field(default_factory=dict)  # (partition, offset) -> its tombstone's send
    progress: dict[tuple[str, int], ReaderProgress] = field(default_factory=dict)  # (reader, partition)

    def sending(self, key: bytes, at_s: float) -> None:
        last = self.key_sent.get(key)
        count = last.count + 1 if last is not None and last.at_s == at_s else 1
        self.key_sent[key] = KeySent(at_s, count)

    def acknowledged(self, partition: int, offset: int, sent_at: float) -> None:
        self.sent_at[(partition, offset)] = sent_at

    def read(self, reader: str, partition: int, offset: int, at_s: float) -> None:
        progress = self.progress.setdefault((reader, partition), ReaderProgress())
        if not progress.offsets or offset > progress.offsets[-1]:
            progress.offsets.append(offset)
            progress.times.append(at_s)

    def may_have_missed(self, reader: str, key: bytes, partition: int, offset: int) -> bool:
        """Whether a reader that did not read the tombstone of `key` at the offset, which the partition's leader no
        longer holds, may have found it removed."""
        sent_at = self.sent_at.get((partition, offset))
        last = self.key_sent.get(key)
        if sent_at is None or last is None or last.at_s > sent_at or last.count > 1:
            return True  # unknown, or a later record of the key may have replaced it
        progress = self.progress.get((reader, partition))
        passed = None if progress is None else progress.passed(offset)
        return passed is None or passed >= sent_at + self.delete_retention_s

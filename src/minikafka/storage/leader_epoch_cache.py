"""The leader-epoch cache: (epoch, start offset) pairs, persisted as `leader-epoch-checkpoint`.

It answers OffsetsForLeaderEpoch (and the Fetch `diverging_epoch` check): the end offset of an epoch is the start
offset of the next larger epoch, or the log end offset for the latest one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from minikafka.storage.checkpoint import CheckpointError, read_entries, write_entries

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    def __init__(self, path: Path | None, entries: list[EpochEntry] | None = None) -> None:
        self.path = path
        self.entries: list[EpochEntry] = list(entries or [])
        self.unsynced = False  # written by `assign` and not yet fsynced: the log's next flush does it

    @classmethod
    def load(cls, path: Path) -> LeaderEpochCache:
        rows = read_entries(path, 2)
        entries = []
        for epoch, offset in rows or []:
            try:
                entries.append(EpochEntry(int(epoch), int(offset)))
            except ValueError:
                raise CheckpointError(path, f"bad entry '{epoch} {offset}'") from None
        return cls(path, entries)

    def flush(self, sync: bool = True) -> None:
        if self.path is not None:
            write_entries(self.path, [(str(e.epoch), str(e.start_offset)) for e in self.entries], sync)
            self.unsynced = not sync

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else UNDEFINED_EPOCH

    def epoch_for_offset(self, offset: int) -> int:
        epoch = UNDEFINED_EPOCH
        for entry in self.entries:
            if entry.start_offset > offset:
                break
            epoch = entry.epoch
        return epoch

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; True if the cache changed.

        Kafka's rule: a no-op when `epoch` is the latest and starts no earlier; otherwise entries with an epoch or
        start offset at or past the new one are replaced, keeping epochs and offsets monotonic.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"cannot assign epoch {epoch} at offset {start_offset}")
        if self.entries and epoch == self.entries[-1].epoch and start_offset >= self.entries[-1].start_offset:
            return False
        while self.entries and (self.entries[-1].epoch >= epoch or self.entries[-1].start_offset >= start_offset):
            self.entries.pop()
        self.entries.append(EpochEntry(epoch, start_offset))
        # Written now, made durable by the log's next flush, before any batch of this epoch: a leadership change
        # of thousands of partitions costs no fsync each.
        self.flush(sync=False)
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= `epoch`, its end offset), as Kafka's LeaderEpochFileCache.endOffsetFor answers.

        The latest epoch ends at the log end offset; an epoch older than every entry ends where the first known
        epoch starts; an epoch newer than the latest, or an empty cache, is unknown: (-1, -1).
        """
        if epoch == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self.entries[-1].epoch:
            return epoch, log_end_offset
        higher = next((e for e in self.entries if e.epoch > epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        floor = None
        for entry in self.entries:
            if entry.epoch > epoch:
                break
            floor = entry
        return (floor.epoch if floor is not None else epoch), higher.start_offset

    def truncate_from_end(self, end_offset: int, sync: bool = True) -> None:
        """Drop entries starting at or after `end_offset` (the log was truncated there). `sync` False: the log's
        next flush makes it durable (a log's open, which would cut them again after a crash)."""
        kept = [e for e in self.entries if e.start_offset < end_offset]
        if kept != self.entries:
            self.entries = kept
            self.flush(sync)

    def truncate_from_start(self, start_offset: int, sync: bool = True) -> None:
        """The log now starts at `start_offset`: the entry covering it moves up to it, older ones go (`sync` as
        for `truncate_from_end`)."""
        kept: list[EpochEntry] = []
        for index, entry in enumerate(self.entries):
            following = self.entries[index + 1] if index + 1 < len(self.entries) else None
            if following is not None and following.start_offset <= start_offset:
                continue
            kept.append(EpochEntry(entry.epoch, max(entry.start_offset, start_offset)))
        if kept != self.entries:
            self.entries = kept
            self.flush(sync)

    def clear(self) -> None:
        self.entries = []
        self.flush()

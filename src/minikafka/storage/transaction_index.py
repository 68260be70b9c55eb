"""A partition's aborted transactions: Kafka's TransactionIndex, one `<base offset>.txnindex` file per segment
beside its `.log`, holding an entry for each ABORT marker written in that segment.

An entry is Kafka's 34 bytes: version (int16, 0), producer id (int64), first offset (int64), last offset (int64:
the marker's) and the last stable offset once the transaction ended (int64). A read_committed Fetch answers the
entries that overlap the records it returns, so the consumer can drop the aborted producers' records.

The files are a cache of the log: the producer-state rebuild after a crash or a truncation cuts them to what it
has not replayed and writes again the entries of every marker it replays. A torn last entry is dropped on load.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int  # the partition's LSO once it ended

    def encode(self) -> bytes:
        return _ENTRY.pack(
            ENTRY_VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


def txn_index_path(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}{TXN_INDEX_SUFFIX}"


def read_entries(path: Path) -> list[AbortedTxn]:
    """The whole entries of one file, in order; a missing file holds none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    entries = []
    for position in range(0, len(data) - _ENTRY.size + 1, _ENTRY.size):
        version, producer_id, first, last, stable = _ENTRY.unpack_from(data, position)
        if version != ENTRY_VERSION:
            break  # not an entry this version wrote: what follows cannot be trusted either
        entries.append(AbortedTxn(producer_id, first, last, stable))
    return entries


class AbortedTxnIndex:
    """Every segment's aborted transactions, in memory in marker order, and their `.txnindex` files."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._entries: list[AbortedTxn] = []
        self._last_offsets: list[int] = []  # per entry, its marker's offset (searched by fetches)
        self._segment_of: list[int] = []  # per entry, the base offset of the segment holding its marker

    def _keep(self, start: int, end: int) -> None:
        self._entries = self._entries[start:end]
        self._last_offsets = self._last_offsets[start:end]
        self._segment_of = self._segment_of[start:end]

    def load(self, segment_bases: list[int]) -> None:
        """Read the files of `segment_bases`; files of segments that no longer exist are deleted."""
        self._keep(0, 0)
        live = set(segment_bases)
        for path in self.directory.glob("*" + TXN_INDEX_SUFFIX):
            try:
                base = int(path.name[: -len(TXN_INDEX_SUFFIX)])
            except ValueError:
                continue
            if base not in live:
                path.unlink(missing_ok=True)
        for base in sorted(live):
            path = txn_index_path(self.directory, base)
            entries = read_entries(path)
            if path.exists() and path.stat().st_size != len(entries) * _ENTRY.size:
                path.write_bytes(b"".join(entry.encode() for entry in entries))  # a torn tail goes
            self._entries.extend(entries)
            self._last_offsets.extend(entry.last_offset for entry in entries)
            self._segment_of.extend([base] * len(entries))

    @property
    def entries(self) -> list[AbortedTxn]:
        return list(self._entries)

    def append(self, segment_base: int, entry: AbortedTxn) -> None:
        with txn_index_path(self.directory, segment_base).open("ab") as file:
            file.write(entry.encode())
        self._entries.append(entry)
        self._last_offsets.append(entry.last_offset)
        self._segment_of.append(segment_base)

    def truncate_from(self, offset: int) -> None:
        """Forget the entries whose marker is at or past `offset` (their batches are cut, or will be replayed)."""
        keep = bisect.bisect_left(self._last_offsets, offset)
        if keep == len(self._entries):
            return
        dropped_segments = set(self._segment_of[keep:])
        self._keep(0, keep)
        for base in dropped_segments:
            kept = [entry for entry, at in zip(self._entries, self._segment_of, strict=True) if at == base]
            path = txn_index_path(self.directory, base)
            if kept:
                path.write_bytes(b"".join(entry.encode() for entry in kept))
            else:
                path.unlink(missing_ok=True)

    def drop_segments_below(self, base_offset: int) -> None:
        """The segments below `base_offset` were deleted (retention): their entries go with them."""
        self._keep(bisect.bisect_left(self._segment_of, base_offset), len(self._entries))

    def merge_segments(self, bases: set[int], into: int, entries: Sequence[AbortedTxn]) -> None:
        """Cleaning replaced the consecutive segments `bases` by one at `into`, whose entries are `entries` (in
        marker order): one file written aside and renamed over (the old segments' files are already gone)."""
        replaced = [position for position, base in enumerate(self._segment_of) if base in bases]
        at = replaced[0] if replaced else bisect.bisect_left(self._segment_of, into)
        end = replaced[-1] + 1 if replaced else at
        self._entries[at:end] = entries
        self._last_offsets[at:end] = [entry.last_offset for entry in entries]
        self._segment_of[at:end] = [into] * len(entries)
        kept = list(entries)
        path = txn_index_path(self.directory, into)
        if not kept:
            path.unlink(missing_ok=True)
            return
        aside = path.with_name(path.name + ".tmp")
        aside.write_bytes(b"".join(entry.encode() for entry in kept))
        aside.replace(path)

    def delete_file(self, segment_base: int) -> None:
        txn_index_path(self.directory, segment_base).unlink(missing_ok=True)

    def collect(self, start_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Kafka's collectAbortedTransactions: the transactions aborted at or after `start_offset` whose records
        begin below `upper_offset` (the end of what a fetch returns)."""
        first = bisect.bisect_left(self._last_offsets, start_offset)
        return [entry for entry in self._entries[first:] if entry.first_offset < upper_offset]

"""The sparse offset index of a segment: (relative offset, file position) every `log.index.interval.bytes`.

Stored as `<base offset>.index`, 8 bytes an entry (int32 relative offset, int32 position), like Kafka's. It is
derived data: recovery rebuilds it from the segment whenever it is missing or disagrees with the log.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

from minikafka.storage.file_handle_cache import FileHandleCache
from minikafka.storage.synced_file import SyncedFile

_ENTRY = struct.Struct(">ii")
ENTRY_SIZE = _ENTRY.size
INT32_MAX = 2**31 - 1


class OffsetIndex(SyncedFile):
    def __init__(self, path: Path, base_offset: int, files: FileHandleCache, create: bool = True) -> None:
        # Dirty from the start: written to rarely (an entry every log.index.interval.bytes), fsynced with the log.
        super().__init__(path, dirty=True, files=files, create=create)
        self.base_offset = base_offset
        self.offsets: list[int] = []
        self.positions: list[int] = []

    @classmethod
    def load(cls, path: Path, base_offset: int, segment_size: int, files: FileHandleCache) -> tuple[OffsetIndex, bool]:
        """Load an index (created empty when missing); the flag says whether it was consistent (monotonic and
        inside the segment)."""
        existed = path.exists()
        index = cls(path, base_offset, files, create=not existed)
        data = path.read_bytes() if existed else b""
        consistent = len(data) % ENTRY_SIZE == 0
        previous = (-1, -1)
        for relative, position in _ENTRY.iter_unpack(data[: len(data) - len(data) % ENTRY_SIZE]):
            if relative <= previous[0] or position <= previous[1] or position >= segment_size:
                consistent = False
                break
            index.offsets.append(base_offset + relative)
            index.positions.append(position)
            previous = (relative, position)
        return index, consistent

    def __len__(self) -> int:
        return len(self.offsets)

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def append(self, offset: int, position: int) -> None:
        if self.offsets and (offset <= self.offsets[-1] or position <= self.positions[-1]):
            raise ValueError(
                f"index entries must increase: ({offset}, {position}) after ({self.offsets[-1]}, {self.positions[-1]})"
            )
        if not self.can_append_offset(offset) or not 0 <= position <= INT32_MAX:
            # The log rolls before either happens; never let struct.error escape half-way through an append.
            raise ValueError(f"index entry ({offset}, {position}) does not fit 32 bits above base {self.base_offset}")
        os.pwrite(self._fd(), _ENTRY.pack(offset - self.base_offset, position), len(self.offsets) * ENTRY_SIZE)
        self._dirty = True
        self.offsets.append(offset)
        self.positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last entry at or before `offset` (base offset and position 0 when none)."""
        slot = bisect.bisect_right(self.offsets, offset) - 1
        if slot < 0:
            return self.base_offset, 0
        return self.offsets[slot], self.positions[slot]

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or past `position` (the segment was cut there)."""
        keep = bisect.bisect_left(self.positions, position)
        del self.offsets[keep:]
        del self.positions[keep:]
        os.ftruncate(self._fd(), keep * ENTRY_SIZE)
        self._dirty = True
        self.truncated(keep * ENTRY_SIZE)

    def reset(self) -> None:
        self.truncate_to_position(0)

    def flush(self) -> None:
        self.fsync()

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self.offsets, self.positions, strict=True))


def read_index_file(path: Path, base_offset: int) -> list[tuple[int, int]]:
    """Every (offset, position) entry of an index file, for dump-log."""
    data = path.read_bytes()
    usable = len(data) - len(data) % ENTRY_SIZE
    return [(base_offset + relative, position) for relative, position in _ENTRY.iter_unpack(data[:usable])]

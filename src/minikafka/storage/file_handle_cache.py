"""A bounded cache of open segment files (`.log` and `.index`), shared by the partition logs of one log directory.

A segment file is opened when it is first read or written and closed, least recently used first, once more than
`max_open` are open, so a broker holds O(`max_open`) descriptors however many partitions it hosts (Kafka keeps
every segment's files open and asks for a file limit above them; RocksDB's `max_open_files` bounds its table files
the same way). Closing a file loses nothing: written bytes are in the kernel's page cache, and an fsync through a
later descriptor of the same file makes them durable, so a segment's dirty flag, not its descriptor, says what is
still to be flushed.

Used from the thread that owns the logs only: a descriptor it hands out is valid until the next file is opened
through it. A worker thread gets a duplicate (`SyncedFile.duplicate_fd`) instead.
"""

from __future__ import annotations

import errno
import os
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

OUT_OF_FILES = (errno.EMFILE, errno.ENFILE)


class CachedFile(Protocol):
    @property
    def path(self) -> Path: ...


class FileHandleCache:
    def __init__(self, max_open: int | None = None) -> None:
        """`max_open` None: no bound (each file stays open from first use until it is closed)."""
        if max_open is not None and max_open < 1:
            raise ValueError(f"max_open must be at least 1, got {max_open}")
        self.max_open = max_open
        self._open: OrderedDict[CachedFile, int] = OrderedDict()  # least recently used first
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._open)

    def is_open(self, file: CachedFile) -> bool:
        return file in self._open

    def descriptor(self, file: CachedFile, create: bool = False) -> int:
        """`file`'s descriptor, opened (read-write; created when `create`) if it is not open."""
        fd = self._open.get(file)
        if fd is not None:
            self._open.move_to_end(file)
            return fd
        if self.max_open is not None:
            while len(self._open) >= self.max_open:
                self._evict_oldest()
        fd = self._open_evicting(file.path, os.O_RDWR | (os.O_CREAT if create else 0))
        self._open[file] = fd
        return fd

    def _open_evicting(self, path: Path, flags: int) -> int:
        """Open `path`; out of descriptors (the process limit is lower than the bound allows for), give back the
        older half of this cache's and try again, and fail only when none is left to give."""
        while True:
            try:
                return os.open(path, flags, 0o644)
            except OSError as error:
                if error.errno not in OUT_OF_FILES or not self._open:
                    raise
                for _ in range(max(1, len(self._open) // 2)):
                    self._evict_oldest()

    def _evict_oldest(self) -> None:
        _file, fd = self._open.popitem(last=False)
        self.evictions += 1
        os.close(fd)

    def close(self, file: CachedFile) -> None:
        fd = self._open.pop(file, None)
        if fd is not None:
            os.close(fd)

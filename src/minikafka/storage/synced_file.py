"""A file that knows whether it was written since its last fsync: a segment's log file and its index.

Its descriptor comes from the log directory's FileHandleCache: opened on first use, possibly closed between uses.
It also tracks how much of it was fsynced, which is all a simulated node's power loss keeps (storage.durability).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from minikafka.storage.durability import opened, sync_fd
from minikafka.storage.file_handle_cache import FileHandleCache


class UnflushedTail(NamedTuple):
    """What a power loss did to a file: its bytes past the fsynced size, and how many of them it kept."""

    name: str
    unflushed: int
    kept: int

    @property
    def torn(self) -> bool:
        return 0 < self.kept < self.unflushed


class SyncedFile:
    def __init__(self, path: Path, dirty: bool, files: FileHandleCache, create: bool) -> None:
        """`create`: the file is created now (a new segment); otherwise it exists and is opened when first used."""
        self._path = path
        self._files = files
        self._dirty = dirty  # written since the last fsync
        self._closed = False
        if create:
            files.descriptor(self, create=True)
        self.durable_size = os.stat(path).st_size  # what was fsynced: all a power loss keeps
        self.cuts = 0  # truncations so far
        opened(self)

    @property
    def path(self) -> Path:
        return self._path

    def _fd(self) -> int:
        """The descriptor for one system call: the next file opened through the cache may close it."""
        if self._closed:  # never reopened behind a close (a closed segment is being deleted or abandoned)
            raise OSError(errno.EBADF, f"{self._path} is closed")
        return self._files.descriptor(self)

    @property
    def dirty(self) -> bool:
        return self._dirty

    def fsync(self) -> None:
        if self._dirty:
            fd = self._fd()
            sync_fd(fd)
            self._dirty = False
            self.durable_size = os.fstat(fd).st_size

    def duplicate_fd(self) -> int:
        """For an fsync in another thread that a concurrent `close` or eviction cannot pull the descriptor from."""
        return os.dup(self._fd())

    def mark_clean(self) -> None:
        """An fsync elsewhere (on a duplicate descriptor) covered every write so far."""
        self._dirty = False

    def synced_up_to(self, size: int, cuts: int) -> None:
        """An fsync on a duplicate descriptor made the file durable up to `size`, its size when that fsync began
        after `cuts` truncations (a file cut since then keeps the smaller durable size its cut gave it)."""
        if cuts == self.cuts:
            self.durable_size = max(self.durable_size, size)

    def truncated(self, size: int) -> None:
        """The file was cut to `size`: no more of it than that can survive a power loss."""
        self.cuts += 1
        self.durable_size = min(self.durable_size, size)

    def lose_unflushed(self, torn: Callable[[int], int] | None = None) -> UnflushedTail:
        """A simulated power loss: the file is cut back to what was fsynced, and closed. `torn(unflushed)`: how many
        of the unflushed bytes the disk had written anyway (a torn write: a prefix of them reached it, which may
        end inside a record batch or an index entry)."""
        if self._closed:
            return UnflushedTail(self._path.name, 0, 0)
        try:
            fd = self._fd()
        except FileNotFoundError:  # deleted meanwhile: nothing of it is kept either way
            self.close()
            return UnflushedTail(self._path.name, 0, 0)
        unflushed = max(os.fstat(fd).st_size - self.durable_size, 0)
        kept = 0 if torn is None or not unflushed else min(max(torn(unflushed), 0), unflushed)
        if unflushed:
            os.ftruncate(fd, self.durable_size + kept)
        self.close()
        return UnflushedTail(self._path.name, unflushed, kept)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._files.close(self)

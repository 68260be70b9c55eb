"""A file descriptor that knows whether it was written since its last fsync: a segment's log file and its index."""

from __future__ import annotations

import os
from pathlib import Path

from minikafka.storage.durability import opened, sync_fd


class SyncedFile:
    def __init__(self, path: Path, dirty: bool) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._dirty = dirty  # written since the last fsync
        self.durable_size = os.fstat(self._fd).st_size  # what was fsynced: all a power loss keeps
        self.cuts = 0  # truncations so far
        opened(self)

    @property
    def dirty(self) -> bool:
        return self._dirty

    def fsync(self) -> None:
        if self._dirty:
            sync_fd(self._fd)
            self._dirty = False
            self.durable_size = os.fstat(self._fd).st_size

    def duplicate_fd(self) -> int:
        """For an fsync in another thread that a concurrent `close` cannot pull the descriptor from under."""
        return os.dup(self._fd)

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

    def lose_unflushed(self) -> None:
        """A simulated power loss: the file is cut back to what was fsynced, and closed."""
        if self._fd >= 0:
            if os.fstat(self._fd).st_size > self.durable_size:
                os.ftruncate(self._fd, self.durable_size)
            self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

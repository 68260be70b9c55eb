"""A file descriptor that knows whether it was written since its last fsync: a segment's log file and its index."""

from __future__ import annotations

import os
from pathlib import Path


class SyncedFile:
    def __init__(self, path: Path, dirty: bool) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._dirty = dirty  # written since the last fsync

    @property
    def dirty(self) -> bool:
        return self._dirty

    def fsync(self) -> None:
        if self._dirty:
            os.fsync(self._fd)
            self._dirty = False

    def duplicate_fd(self) -> int:
        """For an fsync in another thread that a concurrent `close` cannot pull the descriptor from under."""
        return os.dup(self._fd)

    def mark_clean(self) -> None:
        """An fsync elsewhere (on a duplicate descriptor) covered every write so far."""
        self._dirty = False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

"""A file that knows whether it was written since its last fsync: a segment's log file and its index.

Its descriptor comes from the log directory's FileHandleCache: opened on first use, possibly closed between uses.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from minikafka.storage.file_handle_cache import FileHandleCache


class SyncedFile:
    def __init__(self, path: Path, dirty: bool, files: FileHandleCache, create: bool) -> None:
        """`create`: the file is created now (a new segment); otherwise it exists and is opened when first used."""
        self._path = path
        self._files = files
        self._dirty = dirty  # written since the last fsync
        self._closed = False
        if create:
            files.descriptor(self, create=True)

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
            os.fsync(self._fd())
            self._dirty = False

    def duplicate_fd(self) -> int:
        """For an fsync in another thread that a concurrent `close` or eviction cannot pull the descriptor from."""
        return os.dup(self._fd())

    def mark_clean(self) -> None:
        """An fsync elsewhere (on a duplicate descriptor) covered every write so far."""
        self._dirty = False

    def close(self) -> None:
        self._closed = True
        self._files.close(self)

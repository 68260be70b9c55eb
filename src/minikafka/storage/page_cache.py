"""A segment file's bytes, with an optional simulated page cache (`log.simulate.page.cache`).

Simulated, appended bytes stay in this process's memory until `flush`, which writes and fsyncs them: a SIGKILL
loses exactly the unflushed suffix, as a power cut loses the OS page cache. Not simulated, appends go straight to
the file (the real page cache) and `flush` fsyncs. Reads see unflushed bytes either way while the process lives.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from minikafka.storage.file_handle_cache import FileHandleCache
from minikafka.storage.synced_file import SyncedFile


class SegmentFile(SyncedFile):
    def __init__(self, path: Path, simulate_page_cache: bool, files: FileHandleCache, create: bool) -> None:
        super().__init__(path, dirty=False, files=files, create=create)
        self.simulate_page_cache = simulate_page_cache
        self._file_size = os.stat(path).st_size  # no descriptor needed: an existing segment opens when first used
        self._pending = bytearray()

    @property
    def size(self) -> int:
        return self._file_size + len(self._pending)

    @property
    def unflushed_bytes(self) -> int:
        return len(self._pending)

    def mark_clean(self) -> None:
        if not self._pending:  # simulated unflushed bytes never reached the file that was fsynced
            super().mark_clean()

    def append(self, data: bytes | memoryview) -> None:
        if self.simulate_page_cache:
            self._pending += data
        else:
            self._write_at_end(data)
        self._dirty = True

    def _write_at_end(self, data: bytes | bytearray | memoryview) -> None:
        """All of `data` at the file's end, or an OSError: a short write (pwrite's count at ENOSPC) is cut back off
        and never counted, so the size never covers bytes that are not in the file."""
        fd = self._fd()
        written = os.pwrite(fd, data, self._file_size)
        if written != len(data):
            try:
                os.ftruncate(fd, self._file_size)
            finally:
                self._dirty = True
            raise OSError(errno.ENOSPC, f"short write: {written} of {len(data)} bytes to {self.path}")
        self._file_size += written

    def flush(self) -> None:
        if self._pending:
            self._write_at_end(self._pending)
            self._pending = bytearray()
        self.fsync()

    def read(self, position: int, size: int) -> bytes:
        """Up to `size` bytes at `position`, from the file and then the unflushed tail."""
        end = min(position + size, self.size)
        if position >= end:
            return b""
        parts = []
        if position < self._file_size:
            parts.append(os.pread(self._fd(), min(end, self._file_size) - position, position))
        if end > self._file_size:
            start = max(position, self._file_size) - self._file_size
            parts.append(bytes(self._pending[start : end - self._file_size]))
        return b"".join(parts) if len(parts) > 1 else parts[0]

    def truncate(self, size: int) -> None:
        if size >= self._file_size:
            del self._pending[size - self._file_size :]
            return
        self._pending = bytearray()
        os.ftruncate(self._fd(), size)
        self._file_size = size
        self._dirty = True
        self.truncated(size)

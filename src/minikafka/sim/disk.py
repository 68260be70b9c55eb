"""A simulated node's disk: the node's segment and index files live in a scratch directory (tmpfs when there is
one); a crash fails every later fsync of the node's dead incarnation and, as a power loss, cuts each file back to
what was fsynced. Checkpoints (written to a temporary file, fsynced, renamed) survive once written."""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SimDisk:
    files: list[Any] = field(default_factory=list)  # SyncedFile, opened by this incarnation
    failed: str | None = None  # why fsyncs fail: a crashed incarnation, a failed disk

    def opened(self, file: Any) -> None:
        self.files.append(file)

    def check_sync(self) -> None:
        if self.failed is not None:
            raise OSError(errno.EIO, f"simulated disk: {self.failed}")

    def fail(self, why: str) -> None:
        self.failed = why

    def lose_power(self) -> None:
        """Every file this incarnation opened loses what it had not fsynced, and is closed."""
        for file in self.files:
            file.lose_unflushed()
        self.files.clear()

    def close_all(self) -> None:
        """Close what a stopped incarnation left open (a crash keeping the page cache: nothing is lost)."""
        for file in self.files:
            file.close()
        self.files.clear()

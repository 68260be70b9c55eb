"""Log directories that failed (Kafka's LogDirFailureChannel): the first I/O error on any log in a directory takes
the whole directory offline; whoever owns the logs is told once per directory and stops using it.

Written to from the event loop and from worker threads (checkpoints, background flushes): the listener is called
on the thread that saw the error, so it must only hand the news over (e.g. `call_soon_threadsafe`).
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path

import structlog

from minikafka.common.errors import ErrorCode, KafkaError


class LogDirFailureChannel:
    def __init__(self, on_offline: Callable[[Path, str], None] = lambda _dir, _reason: None) -> None:
        self._on_offline = on_offline
        self._offline: dict[Path, str] = {}  # directory -> the first error seen in it
        self._lock = threading.Lock()
        self._injected: str | None = None  # `fault disk-full` / `fault disk-error`: see `inject`

    def is_offline(self, directory: Path) -> bool:
        with self._lock:
            return directory in self._offline

    @property
    def healthy(self) -> bool:
        """No directory offline and no fault injected. Asked before every log operation, so without the lock:
        offline directories are only ever added."""
        return not self._offline and self._injected is None

    @property
    def offline_dirs(self) -> tuple[Path, ...]:
        with self._lock:
            return tuple(self._offline)

    def inject(self, kind: str) -> None:
        """A fault injected into this process's storage layer: from now on every write fails as on a full disk
        (`disk-full`: ENOSPC) or every read and write fails as on a failing disk (`disk-error`: EIO)."""
        if kind not in INJECTABLE_FAULTS:
            raise ValueError(f"unknown disk fault {kind!r} (expected one of {', '.join(INJECTABLE_FAULTS)})")
        self._injected = kind

    def check_injected(self, directory: Path, writes: bool) -> None:
        """Raise the injected fault's OSError for an operation on `directory` (that writes, or only reads)."""
        kind = self._injected
        if kind == "disk-error" or (kind == "disk-full" and writes):
            code = errno.EIO if kind == "disk-error" else errno.ENOSPC
            raise OSError(code, f"{os.strerror(code)} (injected {kind})", str(directory))

    def mark_offline(self, directory: Path, reason: str) -> None:
        """The first call for a directory logs `log_dir_offline` and tells the listener; later ones do nothing."""
        with self._lock:
            if directory in self._offline:
                return
            self._offline[directory] = reason
        structlog.get_logger().error("log_dir_offline", log_dir=str(directory), reason=reason)
        self._on_offline(directory, reason)


INJECTABLE_FAULTS = ("disk-full", "disk-error")


def storage_error(directory: Path, reason: str) -> KafkaError:
    return KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"log dir {directory} is offline: {reason}")

"""A simulated node's disk: the node's segment and index files live in a scratch directory (tmpfs when there is
one); a crash fails every later fsync of the node's dead incarnation and, as a power loss, cuts each file back to
what was fsynced, or with torn writes to what was fsynced and a seeded prefix of what was not (the sectors the
disk had written when the power went). Checkpoints (written to a temporary file, fsynced, renamed) survive once
written. A degraded disk (`SlowSyncs`) makes a node's fsyncs take seconds, whichever incarnation issues them."""

from __future__ import annotations

import errno
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from minikafka.storage.synced_file import UnflushedTail


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

    def lose_power(self, torn: random.Random | None = None) -> list[UnflushedTail]:
        """Every file this incarnation opened loses what it had not fsynced, and is closed. With `torn`, each keeps
        a prefix of its unflushed bytes drawn from it: none, all, or any byte count between (a write torn inside a
        record batch, an index entry). Returns what each file with unflushed bytes lost."""
        tails = [file.lose_unflushed(None if torn is None else _torn_prefix(torn)) for file in self.files]
        self.files.clear()
        return [tail for tail in tails if tail.unflushed]

    def close_all(self) -> None:
        """Close what a stopped incarnation left open (a crash keeping the page cache: nothing is lost)."""
        for file in self.files:
            file.close()
        self.files.clear()


@dataclass(frozen=True)
class SlowSyncs:
    """A node's degraded disk until `until_s` (loop time): each fsync handed to a worker thread completes a seeded
    `delay_s` later, but by `until_s` (the fault heals and what is pending completes). Writes are not delayed: they
    reach the page cache; a power loss meanwhile takes what the slow fsyncs had not made durable."""

    until_s: float
    rng: random.Random
    delay_s: tuple[float, float]

    def extra_s(self, now_s: float) -> float:
        return max(0.0, min(self.rng.uniform(*self.delay_s), self.until_s - now_s))


def _torn_prefix(rng: random.Random) -> Callable[[int], int]:
    def kept(unflushed: int) -> int:
        # Nothing reached the disk (a quarter), all of it did (a quarter), or a prefix cut at any byte.
        shape = rng.randrange(4)
        return 0 if shape == 0 else unflushed if shape == 1 else rng.randrange(unflushed + 1)

    return kept

"""Swapping cleaned segments in for the ones they replace, crash-safely, as Kafka's LocalLog.replaceSegments and
LogLoader do it.

The log cleaner writes a group's cleaned segment aside as `<base>.log.cleaned` (+ `.index.cleaned`), fsynced. The
swap then renames it `<base>.log.swap`, deletes the segments it replaces, and renames it `<base>.log`. A crash at
any point leaves files from which opening the log finishes or forgets the swap:
- a `.cleaned` file was never promised to anyone: deleted (the segments it was made from are all still there);
- a `.swap` file holds everything of the segments in [its base, its end): those left are deleted and the swap
  file renamed into place (its index is rebuilt by the segment scan).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from minikafka.common.record_batch import HEADER_SIZE, CorruptRecordError, read_header
from minikafka.storage.checkpoint import fsync_directory

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"


@dataclass(frozen=True)
class SwapRecovery:
    """What opening a log found of interrupted cleanings."""

    cleaned_deleted: tuple[str, ...]  # `.cleaned` files of a cleaning that never swapped
    swapped_in: tuple[int, ...]  # base offsets of `.swap` segments renamed into place
    replaced_deleted: tuple[str, ...]  # old segment files a swap had not deleted yet


def base_offset_of(path: Path) -> int | None:
    """The base offset a segment file's name starts with (`00000000000000000042.log.swap` -> 42)."""
    digits = path.name.split(".", 1)[0]
    return int(digits) if digits.isdigit() else None


def next_offset_of(path: Path) -> int:
    """The offset after the last whole batch of a segment file (its base offset when it holds none)."""
    base = base_offset_of(path) or 0
    data = path.read_bytes()
    position, next_offset = 0, base
    while position + HEADER_SIZE <= len(data):
        try:
            batch = read_header(data, position)
        except CorruptRecordError:
            break
        next_offset = batch.last_offset + 1
        position += batch.size
    return next_offset


def complete_swaps(directory: Path) -> SwapRecovery:
    """Kafka's LogLoader passes before loading segments: forget unfinished cleanings, finish begun swaps."""
    cleaned = sorted(p for p in directory.iterdir() if p.name.endswith((CLEANED_SUFFIX, DELETED_SUFFIX)))
    for path in cleaned:
        path.unlink(missing_ok=True)
    swaps = sorted(p for p in directory.iterdir() if p.name.endswith(LOG_SUFFIX + SWAP_SUFFIX))
    if not swaps:
        if cleaned:
            fsync_directory(directory)
        return SwapRecovery(tuple(p.name for p in cleaned), (), ())
    low = min(base_offset_of(p) or 0 for p in swaps)
    high = max(next_offset_of(p) for p in swaps)
    replaced = []
    for path in sorted(directory.iterdir()):
        base = base_offset_of(path)
        if path.name.endswith((LOG_SUFFIX, INDEX_SUFFIX)) and base is not None and low <= base < high:
            path.unlink()
            replaced.append(path.name)
    for path in sorted(directory.iterdir()):
        if path.name.endswith(INDEX_SUFFIX + SWAP_SUFFIX):
            path.unlink()  # derived data: the scan of the swapped-in segment writes it again
    for path in swaps:
        os.replace(path, path.with_name(path.name[: -len(SWAP_SUFFIX)]))
    fsync_directory(directory)
    return SwapRecovery(tuple(p.name for p in cleaned), tuple(base_offset_of(p) or 0 for p in swaps), tuple(replaced))


def cleaned_paths(directory: Path, base_offset: int) -> tuple[Path, Path]:
    """Where the cleaner writes a group's cleaned segment: its log and its index."""
    name = f"{base_offset:020d}"
    return directory / f"{name}{LOG_SUFFIX}{CLEANED_SUFFIX}", directory / f"{name}{INDEX_SUFFIX}{CLEANED_SUFFIX}"


def rename_suffix(path: Path, old: str, new: str) -> Path:
    target = path.with_name(path.name[: -len(old)] + new if old else path.name + new)
    os.replace(path, target)
    return target

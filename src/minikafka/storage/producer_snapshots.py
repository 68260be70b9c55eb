"""A partition's producer-state snapshots on disk, Kafka's `<offset>.snapshot` files: the producer state as of
that offset (the log end when it was written), taken at each segment roll and at a clean shutdown so that a
restart or a truncation replays only the batches after the newest usable one."""

from __future__ import annotations

from pathlib import Path

import structlog

from minikafka.storage.checkpoint import write_atomically
from minikafka.storage.producer_state import ProducerState

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOTS_KEPT = 2  # the newest snapshots kept at each write (Kafka keeps those of the live segments)


def snapshot_offsets(directory: Path) -> list[int]:
    offsets = []
    for path in directory.glob("*" + SNAPSHOT_SUFFIX):
        try:
            offsets.append(int(path.name[: -len(SNAPSHOT_SUFFIX)]))
        except ValueError:
            continue
    return sorted(offsets)


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def write_snapshot(directory: Path, state: ProducerState) -> None:
    write_atomically(snapshot_path(directory, state.end_offset), state.to_snapshot())
    for old in snapshot_offsets(directory)[:-SNAPSHOTS_KEPT]:
        snapshot_path(directory, old).unlink(missing_ok=True)


def delete_snapshots_outside(directory: Path, low: int, high: int) -> None:
    """Snapshots beyond the log end describe batches that are gone; below the log start, batches deleted."""
    for offset in snapshot_offsets(directory):
        if offset > high or offset < low:
            snapshot_path(directory, offset).unlink(missing_ok=True)


def latest_snapshot(directory: Path, at_most: int) -> ProducerState | None:
    """The newest readable snapshot at or below `at_most`; an unreadable one (unknown version, CRC32C mismatch,
    bad contents) is deleted and logged, as Kafka's loadFromSnapshot does with a corrupt one."""
    for offset in reversed(snapshot_offsets(directory)):
        if offset > at_most:
            continue
        path = snapshot_path(directory, offset)
        try:
            return ProducerState.from_snapshot(path.read_bytes())
        except ValueError as error:
            structlog.get_logger().warning(
                "producer_snapshot_unreadable", partition=directory.name, path=str(path), error=str(error)
            )
            path.unlink(missing_ok=True)
    return None

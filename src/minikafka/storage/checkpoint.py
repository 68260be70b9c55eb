"""Checkpoint files written atomically (temp file, fsync, rename, fsync of the directory).

Formats follow Kafka's text checkpoints: a version line, an entry count line, then one entry per line.
"""

from __future__ import annotations

import os
from pathlib import Path

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.storage.durability import sync_fd

VERSION = 0


class CheckpointError(KafkaError):
    """A checkpoint file exists but cannot be read; names the file rather than silently losing state."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(ErrorCode.KAFKA_STORAGE_ERROR, f"corrupt checkpoint {path}: {reason}")
        self.path = path


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        sync_fd(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, content: str | bytes, sync: bool = True) -> None:
    """Write `path` whole or not at all (a temporary file renamed over it). `sync` False leaves the fsyncs to a
    later `sync_files`: the file is whole if it survives a power loss, but it may not survive one."""
    temporary = path.with_name(path.name + ".tmp")
    data = content.encode("utf-8") if isinstance(content, str) else content
    with temporary.open("wb") as stream:
        stream.write(data)
        stream.flush()
        if sync:
            sync_fd(stream.fileno())
    os.replace(temporary, path)
    if sync:
        fsync_directory(path.parent)


def sync_files(directory: Path, names: list[str]) -> None:
    """fsync the named files of `directory` (those that exist), then the directory once: what `write_atomically`
    with `sync` False left to do, for several files at the price of one directory fsync."""
    for name in names:
        try:
            fd = os.open(directory / name, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            sync_fd(fd)
        finally:
            os.close(fd)
    fsync_directory(directory)


def write_entries(path: Path, entries: list[tuple[str, ...]], sync: bool = True) -> None:
    lines = [str(VERSION), str(len(entries)), *(" ".join(entry) for entry in entries)]
    write_atomically(path, "\n".join(lines) + "\n", sync)


def read_entries(path: Path, width: int) -> list[tuple[str, ...]] | None:
    """The entries of a checkpoint (None when the file does not exist)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return None
    if len(lines) < 2:
        raise CheckpointError(path, "missing version or count line")
    if lines[0].strip() != str(VERSION):
        raise CheckpointError(path, f"unknown version {lines[0].strip()!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(path, f"bad entry count {lines[1]!r}") from None
    entries = [tuple(line.split()) for line in lines[2:] if line.strip()]
    if len(entries) != count:
        raise CheckpointError(path, f"expected {count} entries, found {len(entries)}")
    for entry in entries:
        if len(entry) != width:
            raise CheckpointError(path, f"bad entry {' '.join(entry)!r}")
    return entries


class OffsetCheckpoint:
    """One offset for the partition (recovery point, high watermark), as `<partition-dir-name> <offset>`."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name

    def read(self) -> int | None:
        entries = read_entries(self.path, 2)
        if entries is None:
            return None
        if len(entries) != 1 or entries[0][0] != self.name:
            raise CheckpointError(self.path, f"expected one entry for {self.name}")
        try:
            return int(entries[0][1])
        except ValueError:
            raise CheckpointError(self.path, f"bad offset {entries[0][1]!r}") from None

    def write(self, offset: int) -> None:
        write_entries(self.path, [(self.name, str(offset))])


class PartitionMetadataFile:
    """`partition.metadata`: the topic id this directory belongs to (Kafka's KIP-516 file)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> str | None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:  # unreadable is not absent: the caller must not guess
            raise CheckpointError(self.path, str(error)) from error
        fields = dict(line.split(":", 1) for line in lines if ":" in line)
        if fields.get("version", "").strip() != "0" or "topic_id" not in fields:
            raise CheckpointError(self.path, "expected 'version: 0' and 'topic_id: ...'")
        return fields["topic_id"].strip()

    def write(self, topic_id: str, sync: bool = True) -> None:
        write_atomically(self.path, f"version: 0\ntopic_id: {topic_id}\n", sync)

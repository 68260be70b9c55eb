"""The Raft metadata log on disk: entries in the storage engine's segments, the quorum state, snapshots.

An append writes one record batch per run of entries of the same epoch (a control entry alone), whose partition
leader epoch is the entries' epoch: the segment log's leader-epoch cache is Raft's epoch history. The segment log
cuts whole batches, so a truncation inside a batch writes back the entries below the cut. The quorum state
(epoch, voted for, leader) is a small JSON file written atomically and fsynced before the node answers (persist
before you send).
Voters and observers (brokers keep a local copy) use the same class.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import CONTROL_FLAG, Record, build_batch, iter_batches
from minikafka.kraft_controller.raft.messages import LogEntry, SnapshotId
from minikafka.storage.checkpoint import write_atomically
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

METADATA_PARTITION_DIR = "__cluster_metadata-0"
QUORUM_STATE_FILE = "quorum-state"
SNAPSHOT_SUFFIX = ".checkpoint"
VOTERS_SUFFIX = ".voters.json"  # beside a snapshot: the voter set at its end (KIP-853)
ENDPOINTS_KEY = "endpoints"  # in that file: the voters' endpoints


@dataclass(frozen=True)
class QuorumState:
    epoch: int
    voted_for: int | None
    leader_id: int | None


class RaftFileLog:
    def __init__(self, data_dir: Path, segment_bytes: int, now_ms: int) -> None:
        self.directory = data_dir / METADATA_PARTITION_DIR
        config = LogConfig(segment_bytes=segment_bytes, max_message_bytes=max(segment_bytes, 1 << 20))
        self.log = PartitionLog.open(self.directory, config, now_ms)
        self._writes = 0  # appends and truncations: a finished detached fsync checks none happened since it began
        self._quorum_path = self.directory / QUORUM_STATE_FILE

    # ---- quorum state ----

    def load_quorum_state(self) -> QuorumState | None:
        try:
            data = json.loads(self._quorum_path.read_text())
        except FileNotFoundError:
            return None
        except json.JSONDecodeError as error:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"corrupt {self._quorum_path}: {error}") from None
        return QuorumState(data["leader_epoch"], data.get("voted_id"), data.get("leader_id"))

    def save_quorum_state(self, state: QuorumState) -> None:
        """Atomic and fsynced: a vote is never answered before the vote is durable."""
        document = {"leader_epoch": state.epoch, "voted_id": state.voted_for, "leader_id": state.leader_id}
        write_atomically(self._quorum_path, json.dumps(document) + "\n")

    # ---- entries ----

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    def load_entries(self) -> list[LogEntry]:
        return self.entries_from(self.log.log_start_offset)

    def entries_from(self, start_offset: int, end_offset: int | None = None) -> list[LogEntry]:
        """The entries at `start_offset` and on (below `end_offset` if given)."""
        end = self.log.log_end_offset if end_offset is None else min(end_offset, self.log.log_end_offset)
        entries: list[LogEntry] = []
        offset = start_offset
        while offset < end:
            data = self.log.read(offset, 1 << 20)
            if not data:
                break
            for batch in iter_batches(data):
                for record in batch.records():
                    if offset <= record.offset < end:
                        entries.append(
                            LogEntry(record.offset, batch.partition_leader_epoch, record.value or b"", batch.is_control)
                        )
            offset = entries[-1].offset + 1 if entries else end
        return entries

    def append(self, entries: Sequence[LogEntry], now_ms: int, flush: bool = True) -> None:
        """Append (entries must continue the log exactly) and fsync, unless `flush` is off: then a
        `detached_fsync` makes it durable."""
        if not entries:
            return
        self.log.append_as_follower(b"".join(_batches(entries)), now_ms)
        self._writes += 1
        if flush:
            self.log.flush(now_ms)

    def detached_fsync(self, now_ms: int) -> tuple[Callable[[], None], Callable[[], None]]:
        """(fsync, then): `fsync`, for another thread, makes every append made before this call durable (on
        duplicated descriptors: it touches nothing of the log); `then`, back on the log's thread once it returned,
        records the segments clean and moves the recovery point unless the log was written since."""
        self.log.sync_deferred()  # a new epoch's start, before entries of that epoch are made durable (rare: elections)
        dirty = [segment for segment in self.log.segments if segment.dirty]
        fsyncs = [segment.detached_fsync() for segment in dirty]
        writes, end_offset = self._writes, self.log.log_end_offset

        def fsync() -> None:
            for run in fsyncs:
                run()

        def then() -> None:
            if self._writes == writes:
                for segment in dirty:
                    segment.mark_clean()
                self.log.flushed_elsewhere(end_offset, now_ms)

        return fsync, then

    def truncate(self, end_offset: int, reason: str) -> None:
        """Drop every entry at or after `end_offset` (a diverging follower)."""
        if end_offset >= self.log.log_end_offset:
            return
        # The segment log cuts whole batches: the entries below the cut in the batch it falls in are written back.
        kept: list[LogEntry] = []
        if end_offset > self.start_offset:
            cut_batch = next(iter_batches(self.log.read(end_offset, 1)))
            kept = self.entries_from(cut_batch.base_offset, end_offset)
        self._writes += 1
        self.log.truncate_to(end_offset, reason)
        if kept:
            self.log.append_as_follower(b"".join(_batches(kept)), 0)
        self.log.flush(0)

    def reset_to(self, start_offset: int) -> None:
        """Empty the log so it continues at `start_offset` (after installing a snapshot)."""
        self._writes += 1
        self.log.truncate_fully_and_start_at(start_offset, "snapshot installed")

    # ---- snapshots ----

    def snapshot_path(self, end_offset: int, epoch: int) -> Path:
        return self.directory / f"{end_offset:020d}-{epoch:010d}{SNAPSHOT_SUFFIX}"

    def save_snapshot(
        self,
        snapshot_id: SnapshotId,
        data: bytes,
        voters: Mapping[int, str] | None = None,
        endpoints: Mapping[int, str] | None = None,
    ) -> None:
        path = self.snapshot_path(snapshot_id.end_offset, snapshot_id.epoch)
        voters_path = path.with_name(path.name + VOTERS_SUFFIX)
        if voters is not None:  # first: a snapshot on disk is never without the voter set it needs
            document: dict[str, object] = {str(i): d for i, d in sorted(voters.items())}
            if endpoints:
                document[ENDPOINTS_KEY] = {str(i): e for i, e in sorted(endpoints.items())}
            write_atomically(voters_path, json.dumps(document) + "\n")
        write_atomically(path, data)
        for older in [*self.directory.glob("*" + SNAPSHOT_SUFFIX), *self.directory.glob("*" + VOTERS_SUFFIX)]:
            if older not in (path, voters_path):
                older.unlink()
        # The snapshot holds everything below its end: the segments there go (Kafka's deleteBeforeSnapshot).
        self.log.delete_before(snapshot_id.end_offset, "snapshot")

    def load_snapshot(self) -> tuple[SnapshotId, bytes] | None:
        snapshots = sorted(self.directory.glob("*" + SNAPSHOT_SUFFIX))
        if not snapshots:
            return None
        latest = snapshots[-1]
        end_offset, epoch = (int(part) for part in latest.name[: -len(SNAPSHOT_SUFFIX)].split("-"))
        return SnapshotId(end_offset, epoch), latest.read_bytes()

    def load_snapshot_voters(self) -> dict[int, str] | None:
        """The voter set saved beside the latest snapshot, if any."""
        snapshots = sorted(self.directory.glob("*" + SNAPSHOT_SUFFIX))
        if not snapshots:
            return None
        path = snapshots[-1].with_name(snapshots[-1].name + VOTERS_SUFFIX)
        try:
            document = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        return {int(i): str(d) for i, d in document.items() if i != ENDPOINTS_KEY}

    def load_snapshot_voter_endpoints(self) -> dict[int, str]:
        """The endpoints of that voter set's voters (KIP-853), as far as they were known."""
        snapshots = sorted(self.directory.glob("*" + SNAPSHOT_SUFFIX))
        if not snapshots:
            return {}
        path = snapshots[-1].with_name(snapshots[-1].name + VOTERS_SUFFIX)
        try:
            document = json.loads(path.read_text())
        except FileNotFoundError:
            return {}
        return {int(i): str(e) for i, e in document.get(ENDPOINTS_KEY, {}).items()}

    def close(self) -> None:
        self.log.close()


def _batches(entries: Sequence[LogEntry]) -> Iterator[bytes]:
    """One record batch per run of entries of one epoch; a control entry (a new leader's marker) is its own."""
    run: list[LogEntry] = []
    for entry in entries:
        if run and (entry.control or run[0].control or entry.epoch != run[0].epoch):
            yield _batch(run)
            run = []
        run.append(entry)
    if run:
        yield _batch(run)


def _batch(run: Sequence[LogEntry]) -> bytes:
    first = run[0]
    return build_batch(
        [Record(entry.data) for entry in run],
        base_offset=first.offset,
        partition_leader_epoch=first.epoch,
        attributes=CONTROL_FLAG if first.control else 0,
    )

"""Idempotent producer state (Kafka's ProducerStateManager): the pure rules, then a partition log deduplicating
retries, refusing out-of-order or fenced batches, and rebuilding its state after a restart, a crash or a
truncation, from snapshots and from the log, and on a follower from replicated batches."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import Record, build_batch, iter_batches
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.producer_snapshots import snapshot_offsets, snapshot_path
from minikafka.storage.producer_state import (
    MAX_SEQUENCE,
    Accepted,
    Duplicate,
    ProducerBatch,
    ProducerState,
)

PID = 4000


def idempotent(seq: int, count: int = 2, epoch: int = 0, pid: int = PID) -> bytes:
    records = [Record(b"%d" % (seq + i), timestamp_ms=seq) for i in range(count)]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def meta(seq: int, count: int = 2, epoch: int = 0, pid: int = PID) -> ProducerBatch:
    return ProducerBatch(pid, epoch, seq, count - 1, seq)


def open_log(tmp_path: Path, segment_bytes: int = 1 << 20) -> PartitionLog:
    return PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=segment_bytes), 0)


# ---- the pure rules ----


def test_a_new_producer_is_accepted_at_any_sequence() -> None:
    assert ProducerState().check_client_batch(meta(17)) == Accepted()


def test_the_last_five_batches_are_recognised_as_duplicates_and_older_ones_are_not() -> None:
    state = ProducerState()
    for i in range(6):
        state = state.with_batch(meta(2 * i), 10 * i, 10 * i + 1)
    assert state.check_client_batch(meta(10)) == Duplicate(50, 51)
    assert state.check_client_batch(meta(2)) == Duplicate(10, 11)
    with pytest.raises(KafkaError) as raised:
        state.check_client_batch(meta(0))  # the sixth batch back is forgotten: out of order, as in Kafka
    assert raised.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


@pytest.mark.parametrize(
    ("batch", "error"),
    [
        (meta(5), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # a gap after sequence 1
        (meta(1), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # overlaps, but is not a batch that was written
        (meta(2, epoch=1), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),  # a new epoch starts at 0
    ],
)
def test_sequences_out_of_order_are_refused(batch: ProducerBatch, error: ErrorCode) -> None:
    state = ProducerState().with_batch(meta(0), 0, 1)
    with pytest.raises(KafkaError) as raised:
        state.check_client_batch(batch)
    assert raised.value.code == error


def test_an_older_epoch_is_fenced_and_a_new_epoch_from_zero_is_accepted() -> None:
    state = ProducerState().with_batch(meta(0, epoch=3), 0, 1)
    with pytest.raises(KafkaError) as raised:
        state.check_client_batch(meta(2, epoch=2))
    assert raised.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert state.check_client_batch(meta(0, epoch=4)) == Accepted()
    assert state.check_client_batch(meta(2, epoch=3)) == Accepted()


def test_a_replicated_batch_of_an_older_epoch_is_adopted_with_its_epoch() -> None:
    # Kafka's ProducerStateEntry.addBatch after a REPLICATION-origin epoch check that only warns: the entry takes the
    # batch's epoch and keeps only that batch, so the follower's state matches what its leader wrote.
    state = ProducerState().with_batch(meta(0, epoch=3), 0, 1).with_batch(meta(2, epoch=3), 2, 3)
    state = state.with_batch(meta(4, epoch=2), 4, 5)
    entry = state.entry(PID)
    assert entry is not None and entry.producer_epoch == 2 and state.end_offset == 6
    assert [(b.first_seq, b.first_offset) for b in entry.batches] == [(4, 4)]
    assert state.check_client_batch(meta(4, epoch=2)) == Duplicate(4, 5)


def test_a_follower_adopts_an_older_producer_epoch_its_leader_wrote_and_says_so(tmp_path: Path) -> None:
    follower = open_log(tmp_path)
    record = Record(b"v", timestamp_ms=1)
    batches = [build_batch([record], offset, 0, PID, epoch, 0) for offset, epoch in enumerate((3, 2))]
    with capture_logs() as logs:
        follower.append_as_follower(b"".join(batches), 0)
    entry = follower.producer_state.entry(PID)
    assert entry is not None and entry.producer_epoch == 2
    [warned] = [e for e in logs if e["event"] == "producer_epoch_older_than_last_seen"]
    assert (warned["producer_epoch"], warned["last_epoch"], warned["offset"]) == (2, 3, 1)


def test_sequences_wrap_after_the_largest_int32() -> None:
    state = ProducerState().with_batch(meta(MAX_SEQUENCE - 1), 0, 1)
    assert state.entry(PID).last_seq == MAX_SEQUENCE
    assert state.check_client_batch(meta(0)) == Accepted()


def test_a_snapshot_reads_back_equal() -> None:
    state = ProducerState().with_batch(meta(0), 0, 1).with_batch(meta(0, pid=7), 2, 3)
    assert ProducerState.from_snapshot(state.to_snapshot()) == state
    with pytest.raises(ValueError, match="version 99"):
        ProducerState.from_snapshot(b"\x00\x63" + state.to_snapshot()[2:])
    with pytest.raises(ValueError, match="version-1"):  # written before snapshots had a CRC: rebuilt from the log
        ProducerState.from_snapshot(b'{"version":1,"end_offset":0,"producers":[]}')


def flip_first_offset_bit(snapshot: bytes) -> bytes:
    """One bit flipped in the snapshot's first batch (sequences 0-1 at offsets 0-1): its first offset 0 becomes 1."""
    at = snapshot.index(b"[[0,1,0,1,") + len(b"[[0,1,")
    return snapshot[:at] + bytes([snapshot[at] ^ 1]) + snapshot[at + 1 :]


def test_a_snapshot_with_one_bit_flipped_fails_its_crc() -> None:
    state = ProducerState().with_batch(meta(0), 0, 1).with_batch(meta(2), 2, 3)
    with pytest.raises(ValueError, match="CRC32C"):
        ProducerState.from_snapshot(flip_first_offset_bit(state.to_snapshot()))


# ---- the partition log ----


def test_a_retried_batch_is_answered_with_its_first_offsets_and_not_appended(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append_as_leader(idempotent(0), 1, 0)
    log.append_as_leader(idempotent(2), 1, 0)
    retry = log.append_as_leader(idempotent(0), 1, 0)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset)
    assert log.log_end_offset == 4
    with pytest.raises(KafkaError) as raised:
        log.append_as_leader(idempotent(9), 1, 0)
    assert raised.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 4


def test_the_state_survives_a_clean_restart_and_a_crash(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for seq in range(0, 20, 2):
        log.append_as_leader(idempotent(seq), 1, 0)
    assert len(log.segments) > 1 and snapshot_offsets(log.directory)  # rolls wrote snapshots
    before = log.producer_state
    log.abandon()  # a crash: the newest snapshot is older than the log end, the rest is replayed
    crashed = open_log(tmp_path, segment_bytes=300)
    assert crashed.producer_state == before
    assert crashed.append_as_leader(idempotent(18), 1, 0).duplicate
    crashed.close()
    assert snapshot_offsets(crashed.directory)[-1] == crashed.log_end_offset
    reopened = open_log(tmp_path, segment_bytes=300)
    assert reopened.producer_state == before


def test_a_truncation_forgets_the_batches_it_cut(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for seq in range(0, 20, 2):
        log.append_as_leader(idempotent(seq), 1, 0)
    log.truncate_to(8)  # keeps sequences 0..7
    assert log.producer_state.entry(PID).last_seq == 7
    assert all(offset <= 8 for offset in snapshot_offsets(log.directory))
    assert not log.append_as_leader(idempotent(8), 1, 0).duplicate  # the retry of a cut batch is written again


def test_a_follower_builds_the_same_state_from_replicated_batches(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    for seq in range(0, 14, 2):
        leader.append_as_leader(idempotent(seq), 1, 0)
    follower.append_as_follower(leader.read(0, 1 << 20), 0)
    assert follower.producer_state == leader.producer_state
    # The follower, now leader, answers a retry of the leader's last batch with its offsets.
    retry = follower.append_as_leader(idempotent(12), 2, 0)
    assert retry.duplicate and retry.first_offset == 12
    assert [b.base_offset for b in iter_batches(follower.read(0, 1 << 20))][-1] == 12


def test_a_corrupt_snapshot_is_discarded_and_the_state_rebuilt_from_the_log(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append_as_leader(idempotent(0), 1, 0)
    log.append_as_leader(idempotent(2), 1, 0)
    before = log.producer_state
    log.close()  # a snapshot at the log end: the next open replays nothing
    [offset] = snapshot_offsets(log.directory)
    path = snapshot_path(log.directory, offset)
    path.write_bytes(flip_first_offset_bit(path.read_bytes()))
    with capture_logs() as logs:
        reopened = open_log(tmp_path)
    assert reopened.producer_state == before
    [discarded] = [e for e in logs if e["event"] == "producer_snapshot_unreadable"]
    assert "CRC32C" in discarded["error"] and discarded["partition"] == "t-0"
    retry = reopened.append_as_leader(idempotent(0), 1, 0)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset)

"""A partition log's transactions: open transactions in the producer state, COMMIT/ABORT control batches, the last
stable offset, and the aborted-transaction index (`.txnindex`), through restarts, crashes, truncation,
replication and retention."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.common.control_batch import ControlType, EndTxnMarker, control_type, read_marker
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch, iter_batches
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.transaction_index import AbortedTxn, txn_index_path

A, B = 7000, 7001


def txn_batch(pid: int, seq: int, count: int = 2, epoch: int = 0) -> bytes:
    records = [Record(b"%d-%d" % (pid, seq + i), timestamp_ms=seq) for i in range(count)]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, attributes=TRANSACTIONAL_FLAG)


def plain_batch(value: bytes = b"x") -> bytes:
    return build_batch([Record(value)])


def idempotent(pid: int, seq: int, epoch: int = 0) -> bytes:
    return build_batch([Record(b"i")], producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def marker(pid: int, commit: bool, epoch: int = 0, coordinator_epoch: int = 0) -> EndTxnMarker:
    return EndTxnMarker(pid, epoch, commit, coordinator_epoch)


def open_log(path: Path, segment_bytes: int = 1 << 20) -> PartitionLog:
    return PartitionLog.open(path / "t-0", LogConfig(segment_bytes=segment_bytes), 0)


def caught_up(log: PartitionLog) -> PartitionLog:
    log.high_watermark = log.log_end_offset
    return log


def test_a_marker_batch_is_a_transactional_control_batch_holding_its_type_and_coordinator_epoch(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(A, 0), 3, 0)
    info = log.append_marker_as_leader(marker(A, commit=False, coordinator_epoch=5), 3, 0)
    assert (info.first_offset, info.last_offset) == (2, 2)
    batch = list(iter_batches(log.read(2, 1 << 20)))[0]
    assert batch.is_control and batch.is_transactional and batch.is_valid()
    assert control_type(batch) == ControlType.ABORT
    assert read_marker(batch) == marker(A, commit=False, coordinator_epoch=5)
    assert batch.partition_leader_epoch == 3


def test_the_lso_stops_at_the_first_open_transaction_and_moves_once_its_marker_is_below_the_hwm(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(plain_batch(), 1, 0)  # offset 0
    log.append_as_leader(txn_batch(A, 0), 1, 0)  # 1-2
    log.append_as_leader(txn_batch(B, 0), 1, 0)  # 3-4
    caught_up(log)
    assert log.last_stable_offset == 1
    log.append_marker_as_leader(marker(A, commit=True), 1, 0)  # 5
    assert log.last_stable_offset == 1, "a marker the HWM has not passed decides nothing yet"
    caught_up(log)
    assert log.last_stable_offset == 3  # B's transaction is still open
    log.append_marker_as_leader(marker(B, commit=False), 1, 0)  # 6
    log.high_watermark = 6
    assert log.last_stable_offset == 3
    caught_up(log)
    assert log.last_stable_offset == 7 == log.high_watermark
    assert log.aborted_transactions(0, 7) == [AbortedTxn(B, 3, 6, 7)]


def test_aborted_transactions_are_those_a_fetch_range_overlaps(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(A, 0), 1, 0)  # 0-1
    log.append_marker_as_leader(marker(A, commit=False), 1, 0)  # 2
    log.append_as_leader(txn_batch(B, 0), 1, 0)  # 3-4
    log.append_marker_as_leader(marker(B, commit=False), 1, 0)  # 5
    caught_up(log)
    assert [t.producer_id for t in log.aborted_transactions(0, 6)] == [A, B]
    assert [t.producer_id for t in log.aborted_transactions(3, 6)] == [B]  # A's marker is behind the fetch
    assert [t.producer_id for t in log.aborted_transactions(0, 2)] == [A, B][:1]  # B begins past the fetch


def test_a_producer_with_an_open_transaction_may_not_write_outside_it(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(A, 0), 1, 0)
    with pytest.raises(KafkaError) as raised:
        log.append_as_leader(idempotent(A, 2), 1, 0)
    assert raised.value.code == ErrorCode.INVALID_TXN_STATE
    assert log.log_end_offset == 2  # nothing written
    log.append_marker_as_leader(marker(A, commit=True), 1, 0)
    log.append_as_leader(idempotent(A, 2), 1, 0)  # after the marker it may


def test_a_stale_marker_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(A, 0, epoch=2), 1, 0)
    log.append_marker_as_leader(marker(A, commit=True, epoch=2, coordinator_epoch=4), 1, 0)
    end = log.log_end_offset
    with pytest.raises(KafkaError) as older_producer:
        log.append_marker_as_leader(marker(A, commit=False, epoch=1, coordinator_epoch=4), 1, 0)
    assert older_producer.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(KafkaError) as older_coordinator:
        log.append_marker_as_leader(marker(A, commit=False, epoch=2, coordinator_epoch=3), 1, 0)
    assert older_coordinator.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.log_end_offset == end


def test_at_transaction_version_2_a_late_copy_of_the_last_marker_does_not_end_the_open_transaction(
    tmp_path: Path,
) -> None:
    """Transaction 1's batches at epoch 4, its COMMIT at the bumped epoch 5; transaction 2 then writes at 5. A copy
    of transaction 1's COMMIT arriving now (a replayed request) would commit transaction 2's first batch: refused.
    The same copy with no transaction open is a retry and is taken, as is a version-0 marker at the same epoch."""
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(A, 0, epoch=4), 1, 0)
    commit = EndTxnMarker(A, 5, True, 0, transaction_version=2)
    log.append_marker_as_leader(commit, 1, 0)
    log.append_marker_as_leader(commit, 1, 0)  # a retry: nothing open at epoch 5
    log.append_as_leader(txn_batch(A, 0, epoch=5), 1, 0)
    end = log.log_end_offset
    with pytest.raises(KafkaError) as late:
        log.append_marker_as_leader(commit, 1, 0)
    assert late.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == end and log.producer_state.has_ongoing_transaction(A, 5)
    log.append_marker_as_leader(marker(A, commit=True, epoch=5), 1, 0)  # version 0: Kafka's >= check
    assert not log.producer_state.has_ongoing_transaction(A, 5)


def test_a_producer_may_not_send_a_control_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    from minikafka.common.control_batch import build_marker_batch

    with pytest.raises(KafkaError) as raised:
        log.append_as_leader(build_marker_batch(marker(A, commit=True), 0), 1, 0)
    assert raised.value.code == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 0


def _aborted_and_open(log: PartitionLog) -> None:
    for round_ in range(6):
        log.append_as_leader(txn_batch(A, 2 * round_), 1, 0)
        log.append_as_leader(plain_batch(), 1, 0)
        log.append_marker_as_leader(marker(A, commit=round_ % 2 == 0), 1, 0)
    log.append_as_leader(txn_batch(B, 0), 1, 0)  # left open


def test_the_index_and_open_transactions_survive_a_clean_restart_and_a_crash(tmp_path: Path) -> None:
    log = caught_up_after(open_log(tmp_path, segment_bytes=300), _aborted_and_open)
    assert len(log.segments) > 2 and list(log.directory.glob("*.txnindex"))
    aborted, lso, ongoing = (
        log.aborted_transactions(0, 1 << 40),
        log.last_stable_offset,
        dict(log.producer_state.ongoing),
    )
    assert len(aborted) == 3 and ongoing == {B: lso}
    log.abandon()  # a crash: segments after the last snapshot are replayed
    crashed = caught_up(open_log(tmp_path, segment_bytes=300))
    assert crashed.aborted_transactions(0, 1 << 40) == aborted
    assert (crashed.last_stable_offset, dict(crashed.producer_state.ongoing)) == (lso, ongoing)
    crashed.close()
    reopened = caught_up(open_log(tmp_path, segment_bytes=300))
    assert reopened.aborted_transactions(0, 1 << 40) == aborted
    assert (reopened.last_stable_offset, dict(reopened.producer_state.ongoing)) == (lso, ongoing)


def caught_up_after(log: PartitionLog, write: object) -> PartitionLog:
    assert callable(write)
    write(log)
    return caught_up(log)


def test_a_lost_index_file_is_rebuilt_from_the_log(tmp_path: Path) -> None:
    log = caught_up_after(open_log(tmp_path, segment_bytes=300), _aborted_and_open)
    aborted = log.aborted_transactions(0, 1 << 40)
    log.abandon()
    for path in log.directory.glob("*.snapshot"):
        path.unlink()  # no snapshot: every batch is replayed, and the index written again
    for path in log.directory.glob("*.txnindex"):
        path.unlink()
    rebuilt = caught_up(open_log(tmp_path, segment_bytes=300))
    assert rebuilt.aborted_transactions(0, 1 << 40) == aborted
    assert sum(p.stat().st_size for p in rebuilt.directory.glob("*.txnindex")) == 34 * len(aborted)


def test_a_truncation_forgets_the_markers_it_cut_and_reopens_their_transactions(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(A, 0), 1, 0)  # 0-1
    log.append_marker_as_leader(marker(A, commit=False), 1, 0)  # 2
    log.append_as_leader(txn_batch(B, 0), 1, 0)  # 3-4
    log.append_marker_as_leader(marker(B, commit=False), 1, 0)  # 5
    log.truncate_to(5)  # B's marker goes: its transaction is open again
    caught_up(log)
    assert [t.producer_id for t in log.aborted_transactions(0, 1 << 40)] == [A]
    assert dict(log.producer_state.ongoing) == {B: 3}
    assert log.last_stable_offset == 3
    assert txn_index_path(log.directory, 0).stat().st_size == 34
    log.truncate_to(0)
    assert log.aborted_transactions(0, 1 << 40) == [] and not txn_index_path(log.directory, 0).exists()


def test_a_follower_builds_the_same_transactions_from_replicated_batches(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    follower = open_log(tmp_path / "follower")
    _aborted_and_open(leader)
    follower.append_as_follower(leader.read(0, 1 << 20), 0)
    caught_up(leader), caught_up(follower)
    assert follower.producer_state == leader.producer_state
    assert follower.aborted_transactions(0, 1 << 40) == leader.aborted_transactions(0, 1 << 40)
    assert follower.last_stable_offset == leader.last_stable_offset


def test_retention_drops_the_entries_of_deleted_segments(tmp_path: Path) -> None:
    log = caught_up_after(open_log(tmp_path, segment_bytes=300), _aborted_and_open)
    before = log.aborted_transactions(0, 1 << 40)
    log.delete_before(log.segments[-1].base_offset, reason="test")
    after = log.aborted_transactions(0, 1 << 40)
    assert all(entry.last_offset >= log.segments[0].base_offset for entry in after)
    assert len(after) < len(before)
    assert {p.name for p in log.directory.glob("*.txnindex")} <= {txn_index_path(log.directory, 0).name} | {
        txn_index_path(log.directory, s.base_offset).name for s in log.segments
    }


def test_with_verification_a_first_transactional_batch_needs_a_guard_no_marker_has_cleared(tmp_path: Path) -> None:
    from minikafka.storage.partition_log import Verification

    log = open_log(tmp_path)
    with pytest.raises(KafkaError) as unverified:
        log.append_as_leader(txn_batch(A, 0), 1, 0, verification=Verification(None))
    assert unverified.value.code == ErrorCode.INVALID_TXN_STATE
    guard = log.start_verification(A)
    log.append_as_leader(txn_batch(A, 0), 1, 0, verification=Verification(guard))
    log.append_as_leader(txn_batch(A, 2), 1, 0, verification=Verification(None))  # its transaction is open here
    # A late batch verified before the abort, appended after its marker: the marker cleared the guard.
    late_guard = log.start_verification(A)
    log.append_marker_as_leader(marker(A, commit=False), 1, 0)
    end = log.log_end_offset
    with pytest.raises(KafkaError) as late:
        log.append_as_leader(txn_batch(A, 4), 1, 0, verification=Verification(late_guard))
    assert late.value.code == ErrorCode.INVALID_TXN_STATE and log.log_end_offset == end
    caught_up(log)
    assert log.last_stable_offset == log.high_watermark


def test_a_version_2_verification_outlives_the_last_transactions_markers_at_its_epoch(tmp_path: Path) -> None:
    """Transaction version 2: EndTxn v5 answers before the markers are written, and they carry the bumped epoch,
    the next transaction's. Its first batch, verified (added) while they are on their way, is appended after them
    (Kafka's isV2NextTransactionStarted); a version-0 verification, or one at another epoch, is void."""
    from minikafka.storage.partition_log import Verification

    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(A, 0, epoch=0), 1, 0, verification=Verification(log.start_verification(A, 0)))
    guard = log.start_verification(A, 1, supports_epoch_bump=True)  # the next transaction, at the bumped epoch
    log.append_marker_as_leader(marker(A, commit=True, epoch=1), 1, 0)  # the last one's COMMIT, at that epoch
    log.append_as_leader(txn_batch(A, 0, epoch=1), 1, 0, verification=Verification(guard))
    log.append_marker_as_leader(marker(A, commit=True, epoch=2), 1, 0)
    for epoch, supports in ((2, False), (1, True)):  # version 0, or a verification older than the marker
        stale = log.start_verification(A, epoch, supports_epoch_bump=supports)
        log.append_marker_as_leader(marker(A, commit=False, epoch=2), 1, 0)
        with pytest.raises(KafkaError) as refused:
            log.append_as_leader(txn_batch(A, 0, epoch=2), 1, 0, verification=Verification(stale))
        assert refused.value.code == ErrorCode.INVALID_TXN_STATE


def test_a_batch_of_the_next_epoch_is_not_taken_into_the_transaction_still_open_here(tmp_path: Path) -> None:
    """A version-2 producer's next transaction (epoch + 1) whose first batch arrives before the last one's marker:
    it must be verified, not appended into the open transaction, which the marker would then end with it (a
    committed marker over an aborted transaction's records, or the reverse)."""
    from minikafka.storage.partition_log import Verification

    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(A, 0, epoch=0), 1, 0, verification=Verification(log.start_verification(A, 0)))
    assert log.producer_state.has_ongoing_transaction(A, 0) and not log.producer_state.has_ongoing_transaction(A, 1)
    with pytest.raises(KafkaError) as unverified:
        log.append_as_leader(txn_batch(A, 0, epoch=1), 1, 0, verification=Verification(None))
    assert unverified.value.code == ErrorCode.INVALID_TXN_STATE
    guard = log.start_verification(A, 1, supports_epoch_bump=True)
    log.append_marker_as_leader(marker(A, commit=True, epoch=1), 1, 0)  # ends epoch 0's transaction, at offset 2
    next_first = log.log_end_offset
    log.append_as_leader(txn_batch(A, 0, epoch=1), 1, 0, verification=Verification(guard))
    assert log.producer_state.ongoing[A] == next_first  # a transaction of its own, after the marker


def test_dump_log_shows_transactional_flags_markers_and_the_txnindex(tmp_path: Path) -> None:
    from minikafka.storage.dump_log import dump_log, format_text

    log = open_log(tmp_path)
    log.append_as_leader(txn_batch(A, 0), 1, 0)
    log.append_marker_as_leader(marker(A, commit=False, coordinator_epoch=4), 1, 0)
    log.flush(0)
    dumped = dump_log(log.directory / "00000000000000000000.log")
    data, control = dumped["batches"]
    assert (data["is_transactional"], data["is_control"], data["producer_id"]) == (True, False, A)
    assert control["is_control"] and control["end_txn_marker"] == {"type": "ABORT", "coordinator_epoch": 4}
    assert "| endTxnMarker: ABORT coordinatorEpoch: 4" in format_text(dumped)
    index = dump_log(txn_index_path(log.directory, 0))
    assert index["entries"] == [{"producer_id": A, "first_offset": 0, "last_offset": 2, "last_stable_offset": 3}]

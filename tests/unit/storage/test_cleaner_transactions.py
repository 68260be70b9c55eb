"""The log cleaner under Kafka's transaction rules, on a real partition log: an undecided transaction is not
cleaned, an aborted one's records go, a committed one's are compacted, markers stay until their data is gone and
delete.retention.ms has passed, and a read_committed read gives the same committed records before and after."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from test_log_cleaner import batches

from minikafka.common.control_batch import EndTxnMarker, build_marker_batch
from minikafka.common.record_batch import Record, build_batch, iter_batches, stamped
from minikafka.storage.cleaned_transactions import CleanedTransactions
from minikafka.storage.cleaner_plan import filthiest
from minikafka.storage.log_cleaner import CleaningResult, clean, filter_marker
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.transaction_index import AbortedTxn

RETENTION = 1000
COMPACTED = LogConfig(
    segment_bytes=400, cleanup_policy=("compact",), delete_retention_ms=RETENTION, index_interval_bytes=100
)
NOW = 10_000
PID = 9000
TRANSACTIONAL = 0x10


class Read(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int
    transactional: bool
    control: bool


def open_log(path: Path) -> PartitionLog:
    return PartitionLog.open(path, COMPACTED, now_ms=0)


def produce(log: PartitionLog, key: bytes, value: bytes) -> None:
    log.append_as_leader(build_batch([Record(value, key, 0)]), 1, 0)
    log.high_watermark = log.log_end_offset


def in_transaction(log: PartitionLog, key: bytes, value: bytes, sequence: int) -> int:
    batch = build_batch(
        [Record(value, key, 0)], producer_id=PID, producer_epoch=0, base_sequence=sequence, attributes=TRANSACTIONAL
    )
    first = log.append_as_leader(batch, 1, 0).first_offset
    log.high_watermark = log.log_end_offset
    return first


def end_transaction(log: PartitionLog, commit: bool) -> int:
    offset = log.append_marker_as_leader(EndTxnMarker(PID, 0, commit, 0), 1, 0).first_offset
    log.high_watermark = log.log_end_offset
    return offset


def filler(log: PartitionLog, rounds: int = 2) -> None:
    for round_ in range(rounds):
        for key in (b"a", b"b", b"c"):
            produce(log, key, b"%s-%d" % (key, round_))


def read_all(log: PartitionLog) -> list[Read]:
    return [
        Read(r.offset, r.key, r.value, b.producer_id, b.is_transactional, b.is_control)
        for b in batches(log)
        for r in b.records()
    ]


def read_committed(log: PartitionLog) -> dict[bytes | None, bytes | None]:
    """Every key's latest value as a read_committed consumer sees it: below the LSO, markers and the records of the
    aborted transactions the index answers dropped."""
    lso = log.last_stable_offset
    aborted = log.aborted_transactions(log.log_start_offset, lso)
    found: dict[bytes | None, bytes | None] = {}
    for record in read_all(log):
        if record.offset >= lso or record.control:
            continue
        if record.transactional and any(
            txn.producer_id == record.producer_id and txn.first_offset <= record.offset <= txn.last_offset
            for txn in aborted
        ):
            continue
        found[record.key] = record.value
    return found


def run_cleaner(log: PartitionLog, now_ms: int = NOW, due: int | None = None) -> CleaningResult:
    plan = filthiest([log.cleanable(due)], now_ms)
    assert plan is not None, "the log should be due for cleaning"
    job = log.cleaning_job(plan, now_ms, 1 << 20)
    result = clean(job)
    assert log.swap_cleaned(job, result, log.truncations)
    return result


def transactions(log: PartitionLog, rounds: int = 6) -> None:
    """`rounds` transactions of one producer, each writing key `tx` (and its own key), committed on even rounds,
    aborted on odd ones, with other keys' records between; the last committed; all of it below the active
    segment."""
    for round_ in range(rounds):
        in_transaction(log, b"tx", b"tx-%d" % round_, 2 * round_)
        in_transaction(log, b"t%d" % round_, b"own-%d" % round_, 2 * round_ + 1)
        end_transaction(log, commit=round_ % 2 == 0 or round_ == rounds - 1)
        filler(log)
    filler(log, rounds=6)


def test_an_undecided_transaction_bounds_the_range_cleaned(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    filler(log, rounds=8)
    open_at = in_transaction(log, b"open", b"undecided", 0)
    filler(log, rounds=8)
    assert log.last_stable_offset == open_at < log.active_segment.base_offset
    before = [r for r in read_all(log) if r.offset >= open_at]
    plan = filthiest([log.cleanable()], NOW)
    assert plan is not None and plan.first_uncleanable_offset <= open_at
    run_cleaner(log)
    assert [r for r in read_all(log) if r.offset >= open_at] == before  # nothing from the open one on is touched


def test_aborted_records_go_and_committed_ones_are_compacted(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    transactions(log)
    committed_before = read_committed(log)
    run_cleaner(log)
    after = read_all(log)
    values = {r.value for r in after if not r.control}
    assert not any(b"-%d" % n in value for n in (1, 3) for value in values if value)  # aborted rounds: gone
    assert [r.value for r in after if r.key == b"tx"] == [b"tx-5"]  # committed records compacted as any other
    assert {b"own-0", b"own-2", b"own-4", b"own-5"} <= values
    assert read_committed(log) == committed_before
    assert committed_before[b"tx"] == b"tx-5" and b"t1" not in committed_before


def markers_without_data(log: PartitionLog) -> list[int]:
    """The markers no batch of whose transaction is left in the log (not even an empty one)."""
    found, data_since_marker = [], False
    for batch in batches(log):
        if batch.is_control:
            if not data_since_marker:
                found.append(batch.last_offset)
            data_since_marker = False
        elif batch.is_transactional:
            data_since_marker = True
    return found


def test_markers_stay_until_their_data_is_gone_and_delete_retention_ms_has_passed(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    transactions(log)
    committed = read_committed(log)
    markers = [r.offset for r in read_all(log) if r.control]
    aborted = log.aborted_transactions(0, 1 << 40)
    assert len(markers) == 6 and len(aborted) == 2 and markers_without_data(log) == []
    first = run_cleaner(log)
    # The aborted data went in this pass: markers and index entries stay, and the cleaner is due again.
    assert [r.offset for r in read_all(log) if r.control] == markers
    assert log.aborted_transactions(0, 1 << 40) == aborted
    assert first.tombstones_due_ms == NOW
    going = markers_without_data(log)
    assert aborted[1].last_offset in going  # round 3's: aborted, both its batches removed
    assert not {markers[0], markers[2], markers[4], markers[5]} & set(going)  # committed, data kept
    second = run_cleaner(log, now_ms=NOW + 1, due=first.tombstones_due_ms)
    horizons = {b.last_offset: b.delete_horizon_ms for b in batches(log) if b.is_control}
    # Data gone, a marker gets its delete horizon; the others stay as they are.
    assert horizons == {offset: NOW + 1 + RETENTION if offset in going else None for offset in markers}
    assert aborted[1] not in log.aborted_transactions(0, 1 << 40)  # its data gone: no consumer needs the entry
    assert second.tombstones_due_ms == NOW + 1 + RETENTION
    run_cleaner(log, now_ms=NOW + RETENTION, due=NOW + 1)  # before the horizon: still there
    assert [r.offset for r in read_all(log) if r.control] == markers
    past = run_cleaner(log, now_ms=NOW + 1 + RETENTION, due=second.tombstones_due_ms)
    assert [r.offset for r in read_all(log) if r.control] == [m for m in markers if m not in going]
    assert past.markers_removed == len(going) and past.tombstones_removed == 0  # as log_cleaned counts them
    assert read_committed(log) == committed


def test_a_cleaned_transactional_log_reopens_the_same_after_a_stop_or_a_crash(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    transactions(log)
    committed = read_committed(log)
    run_cleaner(log)
    records, aborted, end = read_all(log), log.aborted_transactions(0, 1 << 40), log.log_end_offset
    log.close()
    reopened = open_log(tmp_path / "t-0")
    assert read_all(reopened) == records and reopened.aborted_transactions(0, 1 << 40) == aborted
    assert reopened.log_end_offset == end and read_committed(reopened) == committed
    for path in (tmp_path / "t-0").glob("*.snapshot"):
        path.unlink()  # a crash before any snapshot: producer state is rebuilt from the cleaned log
    reopened.abandon()
    crashed = open_log(tmp_path / "t-0")
    crashed.high_watermark = crashed.log_end_offset
    assert read_all(crashed) == records
    assert crashed.last_stable_offset == crashed.log_end_offset  # no transaction left looking open
    assert read_committed(crashed) == committed


def test_the_transaction_rules_alone() -> None:
    """The pure core: an aborted transaction's batch goes, its marker stays while its data is met, and a marker
    met without data is discardable; a discardable marker gets its horizon, then goes past it."""
    data = build_batch([Record(b"v", b"k", 0)], 5, producer_id=PID, producer_epoch=0, attributes=TRANSACTIONAL)
    marker_bytes = log_marker(commit=False, offset=6)
    txns = CleanedTransactions([AbortedTxn(PID, 5, 6, 7)])
    (data_batch,), (marker,) = iter_batches(data), iter_batches(marker_bytes)
    assert txns.on_batch(data_batch) is True
    txns.on_written(data_batch, written=False)
    assert txns.on_marker(marker) is False and txns.retained == [AbortedTxn(PID, 5, 6, 7)] and txns.recheck
    assert CleanedTransactions([AbortedTxn(PID, 5, 6, 7)]).on_marker(marker) is True
    set_horizon = filter_marker(marker, True, NOW, RETENTION, keep_empty=False)
    assert set_horizon.data is not None and set_horizon.tombstones_due_ms == NOW + RETENTION
    (marked,) = iter_batches(set_horizon.data)
    assert marked.delete_horizon_ms == NOW + RETENTION and list(marked.records()) == list(marker.records())
    assert filter_marker(marked, True, NOW + RETENTION - 1, RETENTION, keep_empty=False).data == marked.bytes()
    assert filter_marker(marked, True, NOW + RETENTION, RETENTION, keep_empty=False).data is None
    kept_empty = filter_marker(marked, True, NOW + RETENTION, RETENTION, keep_empty=True).data
    assert kept_empty is not None and next(iter_batches(kept_empty)).records_count == 0


def log_marker(commit: bool, offset: int) -> bytes:
    (batch,) = iter_batches(build_marker_batch(EndTxnMarker(PID, 0, commit, 0), 0))
    return stamped(batch, offset, 1)

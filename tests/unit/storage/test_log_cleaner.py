"""The log cleaner on a real partition log: latest value per key, offsets and producer metadata kept, tombstones
after delete.retention.ms, and the .cleaned/.swap replacement surviving a crash at every step."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import Record, RecordBatch, build_batch, iter_batches
from minikafka.storage.cleaner_plan import filthiest
from minikafka.storage.log_cleaner import CleaningResult, clean, filter_batch
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.segment_swap import CLEANED_SUFFIX, SWAP_SUFFIX, rename_suffix

COMPACTED = LogConfig(
    segment_bytes=400, cleanup_policy=("compact",), delete_retention_ms=1000, index_interval_bytes=100
)
NOW = 10_000
KEYS = [b"k%d" % n for n in range(5)]


def open_log(path: Path, config: LogConfig = COMPACTED) -> PartitionLog:
    return PartitionLog.open(path, config, now_ms=0)


def produce(log: PartitionLog, key: bytes, value: bytes | None, timestamp: int = 0, **producer: int) -> int:
    info = log.append_as_leader(build_batch([Record(value, key, timestamp)], **producer), 1, 0)
    log.high_watermark = log.log_end_offset
    return info.first_offset


def batches(log: PartitionLog) -> list[RecordBatch]:
    """Every batch below the high watermark, read as a consumer reads: batch after batch across the gaps."""
    out: list[RecordBatch] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20, max_offset=log.high_watermark)
        if not data:
            break
        for batch in iter_batches(data):
            assert batch.is_valid()
            out.append(batch)
            offset = batch.last_offset + 1
    return out


def read_all(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record, read as a consumer reads: batch after batch across the gaps."""
    return [(record.offset, record.key, record.value) for batch in batches(log) for record in batch.records()]


def latest(records: list[tuple[int, bytes | None, bytes | None]]) -> dict[bytes | None, bytes | None]:
    found: dict[bytes | None, bytes | None] = {}
    for _offset, key, value in records:
        found[key] = value
    return {key: value for key, value in found.items() if value is not None}


def cleaning(log: PartitionLog, now_ms: int = NOW, due: int | None = None) -> tuple[object, CleaningResult]:
    plan = filthiest([log.cleanable(due)], now_ms)
    assert plan is not None, "the log should be due for cleaning"
    job = log.cleaning_job(plan, now_ms, 1 << 20)
    return job, clean(job)


def run_cleaner(log: PartitionLog, now_ms: int = NOW, due: int | None = None) -> CleaningResult:
    job, result = cleaning(log, now_ms, due)
    assert log.swap_cleaned(job, result, log.truncations)  # type: ignore[arg-type]
    return result


def overwritten(log: PartitionLog, rounds: int = 8) -> None:
    for round_ in range(rounds):
        for key in KEYS:
            produce(log, key, b"%s-v%d" % (key, round_))


def test_cleaning_keeps_the_latest_value_of_every_key_at_its_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    overwritten(log)
    before, size_before, end = read_all(log), log.size_bytes, log.log_end_offset
    result = run_cleaner(log)
    after = read_all(log)
    assert latest(after) == latest(before)
    assert set(after) <= set(before)  # every record kept at its own offset: gaps, never renumbering
    assert [offset for offset, _, _ in after] == sorted({offset for offset, _, _ in after})
    assert log.size_bytes < size_before and log.log_end_offset == end
    assert result.keys == len(KEYS) and result.records_after < result.records_before
    # The active segment is never cleaned: its records are all still there.
    active_base = log.active_segment.base_offset
    assert [r for r in before if r[0] >= active_base] == [r for r in after if r[0] >= active_base]
    # Every cleaned segment still ends where the next begins.
    for segment, following in zip(log.segments, log.segments[1:], strict=False):
        assert segment.next_offset == following.base_offset
    log.close()
    reopened = open_log(tmp_path / "t-0")
    assert read_all(reopened) == after and reopened.log_end_offset == end


def test_a_second_cleaning_only_needs_new_dirt_and_keeps_the_result(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    overwritten(log)
    first = run_cleaner(log)
    assert filthiest([log.cleanable()], NOW) is None  # nothing dirty: not due
    overwritten(log, rounds=6)
    run_cleaner(log)
    assert latest(read_all(log)) == {key: b"%s-v5" % key for key in KEYS}
    assert first.end_offset <= log.log_end_offset


def test_tombstones_stay_for_delete_retention_ms_from_their_first_cleaning_then_go_with_their_key(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path / "t-0")
    overwritten(log)
    tombstone_at = produce(log, KEYS[0], None, timestamp=NOW)
    for round_ in range(8):  # the other keys go on: the tombstone's segment rolls into the cleanable part
        for key in KEYS[1:]:
            produce(log, key, b"v%d" % round_)
    # Cleaned long after it was written, the tombstone still gets its delete.retention.ms from now (KIP-534).
    first_cleaning = NOW + 5000
    result = run_cleaner(log, now_ms=first_cleaning)
    records = read_all(log)
    assert (tombstone_at, KEYS[0], None) in records  # kept: consumers must still see the delete
    assert all(key != KEYS[0] or offset >= tombstone_at for offset, key, _ in records)
    assert result.tombstones_due_ms == first_cleaning + 1000
    [batch] = [b for b in batches(log) if b.base_offset <= tombstone_at <= b.last_offset]
    assert batch.delete_horizon_ms == first_cleaning + 1000  # marked in the batch: every replica's cleaner agrees
    assert [r.timestamp_ms for r in batch.records() if r.offset == tombstone_at] == [NOW]  # its own time kept
    # Before its horizon a cleaning keeps it; past it the tombstone is due, and the cleaning it forces removes it.
    assert filter_batch(batch, {}, first_cleaning + 999, 1000, keep_empty=False).tombstones_removed == 0
    assert filthiest([log.cleanable(result.tombstones_due_ms)], first_cleaning + 999) is None
    plan = filthiest([log.cleanable(result.tombstones_due_ms)], first_cleaning + 1000)
    assert plan is not None and plan.forced == "delete.retention.ms"
    removed = run_cleaner(log, now_ms=first_cleaning + 1000, due=result.tombstones_due_ms)
    assert removed.tombstones_removed == 1 and removed.tombstones_due_ms is None
    assert all(key != KEYS[0] for _, key, _ in read_all(log))


def test_producer_metadata_survives_so_a_retried_batch_is_still_a_duplicate(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    producer = {"producer_id": 7, "producer_epoch": 0}
    for sequence in range(12):
        produce(log, b"same", b"v%d" % sequence, base_sequence=sequence, **producer)
    for key in KEYS:
        produce(log, key, b"x")  # the producer's last batch is no longer at the log end
    run_cleaner(log)
    log.close()
    reopened = open_log(tmp_path / "t-0")
    retried = build_batch([Record(b"v11", b"same")], base_sequence=11, **producer)
    assert reopened.append_as_leader(retried, 1, 0).duplicate
    assert latest(read_all(reopened))[b"same"] == b"v11"


def test_a_follower_replicates_the_cleaned_log_across_its_gaps(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader" / "t-0")
    overwritten(leader)
    run_cleaner(leader)
    follower = open_log(tmp_path / "follower" / "t-0")
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read(follower.log_end_offset, 300), 0)
    follower.high_watermark = follower.log_end_offset
    assert read_all(follower) == read_all(leader)
    follower.close()
    assert read_all(open_log(tmp_path / "follower" / "t-0")) == read_all(leader)


def test_a_truncation_in_a_gap_ends_the_log_at_the_last_batch_kept(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    produce(log, b"solo", b"kept")
    overwritten(log)
    run_cleaner(log)
    kept = [offset for offset, _, _ in read_all(log)]
    gap = next(offset + 1 for offset, following in zip(kept, kept[1:], strict=False) if following > offset + 1)
    end = log.truncate_to(gap)
    assert end <= gap and all(offset < end for offset, _, _ in read_all(log))


def test_a_compacted_topic_refuses_a_record_without_a_key(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    with pytest.raises(KafkaError) as raised:
        log.append_as_leader(build_batch([Record(b"no key")]), 1, 0)
    assert raised.value.code == ErrorCode.INVALID_RECORD
    assert log.log_end_offset == 0


def test_a_cleaning_of_a_log_cut_meanwhile_is_discarded(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    overwritten(log)
    job, result = cleaning(log)
    log.truncate_to(log.log_end_offset - 3)
    assert not log.swap_cleaned(job, result, log.truncations - 1)  # type: ignore[arg-type]
    assert not list((tmp_path / "t-0").glob("*" + CLEANED_SUFFIX))


# ---- a crash at every step of the swap ----


def crashed_at(tmp_path: Path, step: str) -> tuple[PartitionLog, list[tuple[int, bytes | None, bytes | None]]]:
    """A log cleaned up to `step` of the swap, then abandoned as a kill -9 leaves it; returns it reopened and
    what it held before the cleaning."""
    log = open_log(tmp_path / "t-0")
    overwritten(log)
    log.flush(0, checkpoint=True)
    before = read_all(log)
    _job, result = cleaning(log)
    group = result.groups[0]
    if step in ("swap", "old-deleted"):
        rename_suffix(group.log_path, CLEANED_SUFFIX, SWAP_SUFFIX)
        rename_suffix(group.index_path, CLEANED_SUFFIX, SWAP_SUFFIX)
    if step == "old-deleted":
        for base in group.replaces[1:]:
            (tmp_path / "t-0" / f"{base:020d}.log").unlink()  # some of the old segments are gone, not all
    log.abandon()
    reopened = open_log(tmp_path / "t-0")
    reopened.high_watermark = reopened.log_end_offset  # no checkpoint of it was written: read it all
    return reopened, before


@pytest.mark.parametrize("step", ["cleaned", "swap", "old-deleted"])
def test_a_crash_during_the_swap_loses_no_latest_value_and_duplicates_no_offset(tmp_path: Path, step: str) -> None:
    reopened, before = crashed_at(tmp_path, step)
    after = read_all(reopened)
    assert latest(after) == latest(before)
    offsets = [offset for offset, _, _ in after]
    assert offsets == sorted(set(offsets))
    assert reopened.log_end_offset == before[-1][0] + 1
    leftovers = [p.name for p in (tmp_path / "t-0").iterdir() if p.name.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))]
    assert leftovers == []
    if step == "cleaned":
        assert after == before  # never swapped: the old segments stand
    else:
        assert len(after) < len(before)  # the swap was finished at open


def test_a_key_map_too_small_for_the_dirty_section_cleans_it_in_passes(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for round_ in range(2):
        for n in range(30):
            produce(log, b"key-%d" % n, b"v%d" % round_)
    before = latest(read_all(log))
    ends = []
    for _ in range(20):
        plan = filthiest([log.cleanable()], NOW)
        if plan is None:
            break
        job = log.cleaning_job(plan, NOW, 1000)  # room for 7 keys
        result = clean(job)
        assert result.keys <= 7 and log.swap_cleaned(job, result, log.truncations)
        ends.append(result.end_offset)
    assert len(ends) > 1 and ends == sorted(ends)  # several passes, each further on
    assert latest(read_all(log)) == before


def test_cleaning_keeps_the_aborted_transactions_of_the_segments_it_replaces(tmp_path: Path) -> None:
    """The cleaned segment keeps the aborted-transaction entries of the segments it replaces while their markers
    stay with data of theirs met (Kafka's cleaned .txnindex), and they are read back after a reopen."""
    log = open_log(tmp_path / "t-0")
    for round_ in range(4):
        records = [Record(b"txn-%d" % round_, b"t%d" % round_, 0)]
        batch = build_batch(records, producer_id=9000, producer_epoch=0, base_sequence=round_, attributes=0x10)
        log.append_as_leader(batch, 1, 0)
        log.append_marker_as_leader(EndTxnMarker(9000, 0, round_ % 2 == 0, 0), 1, 0)
        overwritten(log, rounds=2)
    log.high_watermark = log.log_end_offset
    aborted = log.aborted_transactions(0, 1 << 40)
    assert len(aborted) == 2
    run_cleaner(log)
    assert log.aborted_transactions(0, 1 << 40) == aborted
    log.close()
    assert open_log(tmp_path / "t-0").aborted_transactions(0, 1 << 40) == aborted

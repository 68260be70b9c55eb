"""minikafka's consumer with isolation.level=read_committed drops what Kafka's consumer drops: an aborted
transaction's records, from its first offset until its ABORT marker, and every control batch."""

from __future__ import annotations

from minikafka.client.consumer import AbortedProducers
from minikafka.common.control_batch import EndTxnMarker, build_marker_batch
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch, read_header


def txn(pid: int, offset: int) -> object:
    data = build_batch([Record(b"x")], base_offset=offset, producer_id=pid, producer_epoch=0, base_sequence=0,
                       attributes=TRANSACTIONAL_FLAG)  # fmt: skip
    return read_header(data)


def marker(pid: int, offset: int, commit: bool) -> object:
    data = bytearray(build_marker_batch(EndTxnMarker(pid, 0, commit, 0), 0))
    data[0:8] = offset.to_bytes(8, "big")
    return read_header(bytes(data))


def test_only_the_aborted_producers_batches_between_first_offset_and_marker_are_dropped() -> None:
    # offsets: 0 A, 1 B, 2 A, 3 ABORT(A), 4 COMMIT(B), 5 A (a new transaction), 6 plain
    batches = [txn(7, 0), txn(8, 1), txn(7, 2), marker(7, 3, False), marker(8, 4, True), txn(7, 5),
               read_header(build_batch([Record(b"p")], base_offset=6))]  # fmt: skip
    filter_ = AbortedProducers([(7, 0)])
    kept = [b.base_offset for b in batches if not filter_.skips(b)]  # type: ignore[attr-defined,arg-type]
    assert kept == [1, 5, 6]

"""The consumer reads across a compacted log's gaps as Kafka's does: a batch the cleaner emptied (kept for its
offsets and producer state) moves the position past its last offset, so a read from the beginning does not stall
on it."""

from __future__ import annotations

from minikafka.client.consumer import Consumer
from minikafka.common.record_batch import Record, build_batch, iter_batches, rebuild_batch
from minikafka.pb import broker_pb2


def cleaned(base_offset: int, keys: list[bytes], keep: set[int]) -> bytes:
    """A batch of one record per key, with only the records at the offsets in `keep` left by a cleaning."""
    batch = next(iter_batches(build_batch([Record(b"v", key) for key in keys], base_offset=base_offset)))
    return rebuild_batch(batch, [record for record in batch.records() if record.offset in keep])


def response(records: bytes, high_watermark: int) -> broker_pb2.FetchResponse.PartitionData:
    return broker_pb2.FetchResponse.PartitionData(
        partition_index=0, error_code=0, high_watermark=high_watermark, records=records
    )


def test_an_emptied_batch_moves_the_position_past_it() -> None:
    consumer = Consumer(["127.0.0.1:1"])
    consumer.positions[("t", 0)] = 0
    assert consumer._handle_partition("t", response(cleaned(0, [b"a", b"b", b"c"], set()), 10)) == []
    assert consumer.positions[("t", 0)] == 3


def test_the_position_moves_past_the_last_batch_whatever_its_last_records_were() -> None:
    consumer = Consumer(["127.0.0.1:1"])
    consumer.positions[("t", 0)] = 0
    data = cleaned(0, [b"a", b"b"], {0}) + cleaned(2, [b"c", b"d"], set()) + cleaned(4, [b"e", b"f"], {4})
    records = consumer._handle_partition("t", response(data, 10))
    assert [(r.offset, r.key) for r in records] == [(0, b"a"), (4, b"e")]
    assert consumer.positions[("t", 0)] == 6


def test_a_batch_reaching_above_the_high_watermark_is_not_skipped() -> None:
    consumer = Consumer(["127.0.0.1:1"])
    consumer.positions[("t", 0)] = 0
    assert consumer._handle_partition("t", response(cleaned(0, [b"a", b"b", b"c"], set()), 2)) == []
    assert consumer.positions[("t", 0)] == 0

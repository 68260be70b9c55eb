"""The consumer verifies every batch's CRC (Kafka's check.crcs=true): a corrupt batch is never delivered, the poll
fails with CORRUPT_MESSAGE naming the offset."""

from __future__ import annotations

import pytest

from minikafka.client.consumer import Consumer, ConsumerConfig
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import Record, build_batch, set_base_offset
from minikafka.pb import broker_pb2


def fetched(values: list[bytes], base_offset: int, flip: bool) -> broker_pb2.FetchResponse.PartitionData:
    batch = bytearray(build_batch([Record(v) for v in values]))
    set_base_offset(batch, 0, base_offset)
    if flip:
        batch[-2] ^= 0x01  # inside the last record's value: covered by the CRC
    return broker_pb2.FetchResponse.PartitionData(
        partition_index=0, error_code=0, high_watermark=base_offset + len(values), records=bytes(batch)
    )


def consumer(config: ConsumerConfig | None = None) -> Consumer:
    made = Consumer(["127.0.0.1:1"], config)
    made.positions[("t", 0)] = 980
    return made


def test_a_corrupt_batch_fails_the_poll_with_corrupt_message_naming_the_offset() -> None:
    with pytest.raises(KafkaError) as raised:
        consumer()._handle_partition("t", fetched([b"good", b"value"], 980, flip=True))
    assert raised.value.code is ErrorCode.CORRUPT_MESSAGE
    assert "t-0 at offset 980" in raised.value.message


def test_intact_batches_are_delivered() -> None:
    records = consumer()._handle_partition("t", fetched([b"good", b"value"], 980, flip=False))
    assert [(r.offset, r.value) for r in records] == [(980, b"good"), (981, b"value")]


def test_check_crcs_off_delivers_what_the_broker_sent() -> None:
    records = consumer(ConsumerConfig(check_crcs=False))._handle_partition("t", fetched([b"v"], 980, flip=True))
    assert len(records) == 1

"""The producer's batches, against a fake ProduceStream: records are encoded from the pending queue in send order,
each batch takes records while it stays within `batch.size` (its header included, as Kafka's accumulator counts),
and every future resolves with its offset."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikafka.client import producer as producer_module
from minikafka.client.producer import Producer, ProducerConfig
from minikafka.common.record_batch import iter_batches
from minikafka.pb import broker_pb2


class _FakeStream:
    def __init__(self, requests: list[broker_pb2.ProduceRequest]) -> None:
        self.requests = requests
        self.next_offset = 0

    async def call(self, request: broker_pb2.ProduceRequest, timeout: float | None = None) -> Any:
        self.requests.append(request)
        records = next(iter_batches(request.topic_data[0].partition_data[0].records)).records_count
        response = broker_pb2.ProduceResponse()
        response.responses.add(name="t").partition_responses.add(index=0, base_offset=self.next_offset)
        self.next_offset += records
        return response

    async def close(self) -> None:
        pass


class _Metadata:
    def __init__(self, *_args: object) -> None:
        self.view = type("View", (), {"topics": {"t": [0]}, "brokers": {}})()

    def leader_address(self, _topic: str, _partition: int) -> str:
        return "leader"

    bootstrap = ("leader",)

    def stub(self, _address: str) -> Any:
        async def init_producer_id(_request: object, timeout: float) -> broker_pb2.InitProducerIdResponse:
            return broker_pb2.InitProducerIdResponse(producer_id=1000, producer_epoch=0)

        return type("Stub", (), {"InitProducerId": staticmethod(init_producer_id)})()

    async def close(self) -> None:
        pass


def _producer(monkeypatch: pytest.MonkeyPatch, requests: list[broker_pb2.ProduceRequest]) -> Producer:
    """A producer with batch.size 4096 whose batches go to a fake stream, into `requests`."""
    monkeypatch.setattr(producer_module, "MetadataCache", _Metadata)
    producer = Producer(["leader"], ProducerConfig(acks=-1, batch_size=4096, linger_ms=1000))
    stream = _FakeStream(requests)
    monkeypatch.setattr(producer, "_stream", lambda _address: stream)
    return producer


async def test_batches_keep_send_order_fill_to_batch_size_and_resolve_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[broker_pb2.ProduceRequest] = []
    producer = _producer(monkeypatch, requests)
    values = [bytes([i]) * 1000 for i in range(10)]
    keys = [b"k" if i % 2 else None for i in range(10)]
    futures = [await producer.send("t", value, key=key, partition=0) for key, value in zip(keys, values, strict=True)]
    await producer.flush()
    sent = [
        [(r.key, r.value) for r in next(iter_batches(req.topic_data[0].partition_data[0].records)).records()]
        for req in requests
    ]
    # 1000-byte values count 1016-1017 bytes each, the batch header 61: four would make 4129 bytes, over 4096.
    assert [len(batch) for batch in sent] == [3, 3, 3, 1]
    assert all(len(req.topic_data[0].partition_data[0].records) <= 4096 for req in requests)
    assert [value for batch in sent for _, value in batch] == values
    assert [key for batch in sent for key, _ in batch] == keys
    assert [(await f).offset for f in futures] == list(range(10))
    await producer.close()
    assert not asyncio.all_tasks() - {asyncio.current_task()}


async def test_a_record_larger_than_batch_size_goes_in_a_batch_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[broker_pb2.ProduceRequest] = []
    producer = _producer(monkeypatch, requests)
    for value in (b"a" * 100, b"b" * 5000, b"c" * 100):
        await producer.send("t", value, partition=0)
    await producer.flush()
    sizes = [
        [len(r.value) for r in next(iter_batches(req.topic_data[0].partition_data[0].records)).records()]
        for req in requests
    ]
    assert sizes == [[100], [5000], [100]]
    await producer.close()

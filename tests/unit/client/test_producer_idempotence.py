"""The producer's enable.idempotence: Kafka's defaults and conflicts, and retries after lost answers written once,
against a fake leader whose log is the real PartitionLog (with its producer state)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest

from minikafka.client import producer as producer_module
from minikafka.client.produce_command import history_line
from minikafka.client.producer import Producer, ProducerConfig, RecordMetadata
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import iter_batches
from minikafka.pb import broker_pb2
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog


@pytest.mark.parametrize(
    ("fields", "idempotent"),
    [
        ({}, True),
        ({"acks": 1}, False),
        ({"max_in_flight_requests_per_connection": 6}, False),
        ({"max_in_flight_requests_per_connection": 5}, True),
        ({"retries": 0}, False),
        ({"acks": 1, "enable_idempotence": False}, False),
    ],
)
def test_idempotence_is_on_by_default_unless_another_setting_rules_it_out(
    fields: dict[str, Any], idempotent: bool
) -> None:
    assert ProducerConfig(**fields).idempotent is idempotent


@pytest.mark.parametrize(
    ("fields", "needs"),
    [
        ({"acks": 0}, "acks=all"),
        ({"max_in_flight_requests_per_connection": 6}, "max.in.flight.requests.per.connection at most 5"),
        ({"retries": 0}, "retries above 0"),
    ],
)
def test_idempotence_asked_for_beside_a_conflict_is_invalid_config(fields: dict[str, Any], needs: str) -> None:
    with pytest.raises(KafkaError) as raised:
        ProducerConfig(enable_idempotence=True, **fields)
    assert raised.value.code == ErrorCode.INVALID_CONFIG and needs in raised.value.message


class _LossyLeader:
    """Appends every request to a real log, then loses the answer to each of the first `lose` requests, as a
    connection dropped after the leader wrote the batch."""

    def __init__(self, log: PartitionLog, lose: int) -> None:
        self.log = log
        self.lose = lose
        self.calls = 0

    async def call(self, request: broker_pb2.ProduceRequest, timeout: float | None = None) -> Any:
        self.calls += 1
        try:
            info = self.log.append_as_leader(request.topic_data[0].partition_data[0].records, 1, 0)
            error, offset = ErrorCode.NONE, info.first_offset
        except KafkaError as refused:
            error, offset = refused.code, -1
        if self.calls <= self.lose:
            raise grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata())
        response = broker_pb2.ProduceResponse()
        response.responses.add(name="t").partition_responses.add(index=0, error_code=error, base_offset=offset)
        return response

    async def close(self) -> None:
        pass


class _Metadata:
    bootstrap = ("leader",)

    def __init__(self, *_args: object) -> None:
        self.view = type("View", (), {"topics": {"t": [0]}, "brokers": {}})()

    def leader_address(self, _topic: str, _partition: int) -> str:
        return "leader"

    async def refresh(self, _topics: object) -> None:
        pass

    def stub(self, _address: str) -> Any:
        async def init_producer_id(_request: object, timeout: float) -> broker_pb2.InitProducerIdResponse:
            return broker_pb2.InitProducerIdResponse(producer_id=7000, producer_epoch=0)

        return type("Stub", (), {"InitProducerId": staticmethod(init_producer_id)})()

    async def close(self) -> None:
        pass


async def _produce(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, config: ProducerConfig
) -> tuple[PartitionLog, list[int | None]]:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), 0)
    leader = _LossyLeader(log, lose=2)
    monkeypatch.setattr(producer_module, "MetadataCache", _Metadata)
    producer = Producer(["leader"], config)
    monkeypatch.setattr(producer, "_stream", lambda _address: leader)
    futures = [await producer.send("t", b"v%d" % i, partition=0) for i in range(3)]
    await producer.close()
    return log, [(await f).offset for f in futures]


async def test_retries_after_lost_answers_are_written_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = ProducerConfig(linger_ms=50, retry_backoff_ms=1)
    log, offsets = await _produce(monkeypatch, tmp_path, config)
    assert offsets == [0, 1, 2]  # acknowledged at the offsets of the first write
    batches = list(iter_batches(log.read(0, 1 << 20)))
    assert [(b.producer_id, b.base_sequence, b.records_count) for b in batches] == [(7000, 0, 3)]


async def test_without_idempotence_the_same_retries_are_written_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = ProducerConfig(linger_ms=50, retry_backoff_ms=1, enable_idempotence=False)
    log, offsets = await _produce(monkeypatch, tmp_path, config)
    assert (
        offsets == [6, 7, 8] and log.log_end_offset == 9
    )  # the control case: the broker cannot tell a retry from a new batch


def test_a_history_line_says_whether_its_producer_was_idempotent() -> None:
    metadata = RecordMetadata("t", 0, 5)
    line = json.loads(history_line("t", 0, metadata, b"v", -1, None, 1.0, ProducerConfig().idempotent))
    assert line["idempotent"] is True and line["offset"] == 5
    line = json.loads(history_line("t", 0, metadata, b"v", 1, None, 1.0, ProducerConfig(acks=1).idempotent))
    assert line["idempotent"] is False

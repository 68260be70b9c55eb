"""The producer refuses what Kafka's ConfigDef refuses (INVALID_CONFIG naming the key) and fails a record larger
than max.request.size at once (MESSAGE_TOO_LARGE), never sending it; a retriable error is reported to on_retry."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import grpc
import pytest

from minikafka.client import producer as producer_module
from minikafka.client.produce_command import ProduceSummary, RetryReporter
from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig, RetryNotice
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.pb import broker_pb2


@pytest.mark.parametrize(
    ("fields", "key"),
    [
        ({"max_in_flight_requests_per_connection": 0}, "max.in.flight.requests.per.connection"),
        ({"request_timeout_ms": 0}, "request.timeout.ms"),
        ({"linger_ms": -1}, "linger.ms"),
        ({"batch_size": -1}, "batch.size"),
        ({"delivery_timeout_ms": 2**31}, "delivery.timeout.ms"),
        ({"max_request_size": 1 << 30}, "max.request.size"),
        ({"delivery_timeout_ms": 1000, "request_timeout_ms": 2000}, "delivery.timeout.ms"),
    ],
)
def test_config_out_of_range_is_invalid_config_naming_the_key(fields: dict[str, int], key: str) -> None:
    with pytest.raises(KafkaError) as raised:
        ProducerConfig(**fields)
    assert raised.value.code == ErrorCode.INVALID_CONFIG
    assert key in str(raised.value)


class _Metadata:
    def __init__(self, *_args: object) -> None:
        self.view = type("View", (), {"topics": {"t": [0]}, "brokers": {}})()

    def leader_address(self, _topic: str, _partition: int) -> str:
        return "leader"

    async def refresh(self, _topics: list[str]) -> None:
        pass

    bootstrap = ("leader",)

    def stub(self, _address: str) -> Any:
        async def init_producer_id(_request: object, timeout: float) -> broker_pb2.InitProducerIdResponse:
            return broker_pb2.InitProducerIdResponse(producer_id=1000, producer_epoch=0)

        return type("Stub", (), {"InitProducerId": staticmethod(init_producer_id)})()

    async def close(self) -> None:
        pass


class _Stream:
    """Answers every request with `code` (NONE: offset 0)."""

    def __init__(self, code: ErrorCode) -> None:
        self.code = code
        self.requests: list[broker_pb2.ProduceRequest] = []

    async def call(self, request: broker_pb2.ProduceRequest, timeout: float | None = None) -> Any:
        self.requests.append(request)
        response = broker_pb2.ProduceResponse()
        response.responses.add(name="t").partition_responses.add(index=0, error_code=self.code, error_message="why")
        return response

    async def close(self) -> None:
        pass


def _producer(
    monkeypatch: pytest.MonkeyPatch, stream: _Stream, config: ProducerConfig, notices: list[RetryNotice]
) -> Producer:
    monkeypatch.setattr(producer_module, "MetadataCache", _Metadata)
    producer = Producer(["leader"], config, on_retry=notices.append)
    monkeypatch.setattr(producer, "_stream", lambda _address: stream)
    return producer


async def test_a_record_over_max_request_size_fails_at_once_unsent(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = _Stream(ErrorCode.NONE)
    producer = _producer(monkeypatch, stream, ProducerConfig(max_request_size=1000), [])
    future = await producer.send("t", b"x" * 2000, partition=0)
    assert future.done()
    with pytest.raises(DeliveryFailed) as raised:
        await future
    assert raised.value.code == ErrorCode.MESSAGE_TOO_LARGE and raised.value.definite
    assert "max.request.size 1000" in str(raised.value)
    small = await producer.send("t", b"x" * 100, partition=0)
    await producer.close()
    assert (await small).offset == 0
    assert len(stream.requests) == 1  # only the small record went out


async def _one_failed_record(
    monkeypatch: pytest.MonkeyPatch, stream: _Stream, config: ProducerConfig, notices: list[RetryNotice]
) -> DeliveryFailed:
    """Send one record and return how its delivery failed."""
    producer = _producer(monkeypatch, stream, config, notices)
    future = await producer.send("t", b"v", partition=0)
    await producer.close()
    with pytest.raises(DeliveryFailed) as raised:
        await future
    return raised.value


async def test_a_retriable_error_is_reported_each_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = _Stream(ErrorCode.NOT_ENOUGH_REPLICAS)
    notices: list[RetryNotice] = []
    config = ProducerConfig(linger_ms=0, request_timeout_ms=50, delivery_timeout_ms=300, retry_backoff_ms=10)
    failed = await _one_failed_record(monkeypatch, stream, config, notices)
    assert failed.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert len(notices) == len(stream.requests) >= 1
    assert notices[0] == RetryNotice("t", 0, ErrorCode.NOT_ENOUGH_REPLICAS, "why")


def test_the_retry_reporter_says_each_error_once() -> None:
    out = io.StringIO()
    reporter = RetryReporter(120000, out)
    for _ in range(3):
        reporter(RetryNotice("t", 0, ErrorCode.NOT_ENOUGH_REPLICAS, "min.insync.replicas 2, ISR 1"))
    reporter(RetryNotice("t", 1, ErrorCode.NETWORK_EXCEPTION, ""))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert "t-0: NOT_ENOUGH_REPLICAS (min.insync.replicas 2, ISR 1)" in lines[0]
    assert "delivery.timeout.ms 120000" in lines[0]


def test_the_summary_counts_failures_by_error_name() -> None:
    summary = ProduceSummary(sent=3, acknowledged=0, failed=3, elapsed_s=0.1)
    summary.errors.update(["MESSAGE_TOO_LARGE", "MESSAGE_TOO_LARGE", "NOT_ENOUGH_REPLICAS"])
    assert summary.line() == ("produced 0 of 3 records (3 failed: MESSAGE_TOO_LARGE 2, NOT_ENOUGH_REPLICAS 1) in 0.1s")


class _CutOff(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.DEADLINE_EXCEEDED


class _RefusedThenSlow(_Stream):
    """Refuses the first attempt at once; answers the next only after its deadline (a loaded machine)."""

    async def call(self, request: broker_pb2.ProduceRequest, timeout: float | None = None) -> Any:
        if self.requests:
            self.requests.append(request)
            await asyncio.sleep(timeout or 0)
            raise _CutOff()
        return await super().call(request, timeout)


async def test_an_attempt_cut_off_by_the_delivery_timeout_keeps_the_brokers_last_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stream = _RefusedThenSlow(ErrorCode.NOT_ENOUGH_REPLICAS)
    notices: list[RetryNotice] = []
    config = ProducerConfig(linger_ms=0, request_timeout_ms=250, delivery_timeout_ms=300, retry_backoff_ms=100)
    failed = await _one_failed_record(monkeypatch, stream, config, notices)
    assert failed.code == ErrorCode.NOT_ENOUGH_REPLICAS and not failed.definite
    assert "delivery.timeout.ms ran out" in str(failed)
    assert len(stream.requests) == 2
    assert notices == [RetryNotice("t", 0, ErrorCode.NOT_ENOUGH_REPLICAS, "why")]  # no retry announced after it


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ],
)
async def test_a_write_refused_by_the_authorizer_certainly_was_not_written(
    monkeypatch: pytest.MonkeyPatch, code: ErrorCode
) -> None:
    failed = await _one_failed_record(monkeypatch, _Stream(code), ProducerConfig(linger_ms=0), [])
    assert failed.code == code and failed.definite

"""The consumer waits for a partition's leader as Kafka's does: it retries, refreshing metadata, until
default.api.timeout.ms has passed (not a fixed number of attempts), then gives up with the error it last saw."""

from __future__ import annotations

import asyncio

import pytest

from minikafka.client.consumer import EARLIEST, Consumer, ConsumerConfig
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.pb import broker_pb2


class LeaderAfterRefreshes:
    """Metadata in which t-0 has no leader until the consumer has refreshed `leaderless` times (the controller
    fences a killed leader only after the session timeout); the leader then answers ListOffsets with 0."""

    def __init__(self, leaderless: int) -> None:
        self.leaderless = leaderless
        self.refreshes = 0

    async def require_topic(self, topic: str) -> dict[int, object]:
        return {0: object()}

    def leader_address(self, topic: str, partition: int) -> str | None:
        return "broker-2:9092" if self.refreshes >= self.leaderless else None

    async def refresh(self, topics: list[str]) -> None:
        self.refreshes += 1

    def stub(self, address: str) -> LeaderAfterRefreshes:
        return self

    async def ListOffsets(self, request: broker_pb2.ListOffsetsRequest, timeout: float) -> object:  # noqa: N802
        response = broker_pb2.ListOffsetsResponse()
        response.topics.add(name="t").partitions.add(partition_index=0, error_code=0, offset=0)
        return response

    async def close(self) -> None:
        pass


def consumer_with(metadata: LeaderAfterRefreshes, config: ConsumerConfig) -> Consumer:
    consumer = Consumer(["unused:1"], config)
    consumer.metadata = metadata  # type: ignore[assignment]
    return consumer


def test_a_leader_elected_after_many_retries_is_waited_for() -> None:
    # 80 refreshes 1 ms apart: Kafka's consumer keeps trying for default.api.timeout.ms (60 s by default).
    consumer = consumer_with(LeaderAfterRefreshes(80), ConsumerConfig(retry_backoff_ms=1))
    asyncio.run(consumer.assign("t", [0], EARLIEST))
    assert consumer.positions == {("t", 0): 0}


def test_no_leader_within_default_api_timeout_is_an_error_the_read_end_names() -> None:
    consumer = consumer_with(LeaderAfterRefreshes(10**9), ConsumerConfig(retry_backoff_ms=1, default_api_timeout_ms=50))
    with pytest.raises(KafkaError) as raised:
        asyncio.run(consumer.assign("t", [0], EARLIEST))
    assert raised.value.code == ErrorCode.LEADER_NOT_AVAILABLE
    [end] = consumer.read_ends()
    assert (end.position, end.error, end.reached) == (None, "LEADER_NOT_AVAILABLE", False)

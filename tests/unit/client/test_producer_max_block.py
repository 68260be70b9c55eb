"""send() waits for a topic's metadata as Kafka's producer does: it refreshes until the topic (and the partition
asked for) is known, for up to max.block.ms, then fails with "not present in metadata"; a non-retriable topic error
fails at once. A topic just created reaches every broker a moment after the controller commits it."""

from __future__ import annotations

import pytest

from minikafka.client import producer as producer_module
from minikafka.client.metadata_cache import ClusterView
from minikafka.client.producer import Producer, ProducerConfig
from minikafka.common.errors import ErrorCode, KafkaError


class _AppearsAfter:
    """Metadata whose brokers learn topic t (with `partitions` partitions) at the `known_at`-th refresh."""

    known_at = 3
    partitions = 1
    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def __init__(self, *_args: object) -> None:
        self.refreshes = 0
        self.view = ClusterView(brokers={})

    async def refresh(self, topics: list[str]) -> ClusterView:
        self.refreshes += 1
        view = ClusterView(brokers={1: "leader"})
        if self.refreshes >= self.known_at:
            view.topics["t"] = {p: object() for p in range(self.partitions)}  # type: ignore[misc]
        else:
            view.topic_errors["t"] = self.error
        self.view = view
        return view

    async def close(self) -> None:
        pass


def _producer(monkeypatch: pytest.MonkeyPatch, metadata: type[_AppearsAfter], max_block_ms: int) -> Producer:
    monkeypatch.setattr(producer_module, "MetadataCache", metadata)
    config = ProducerConfig(acks=1, max_block_ms=max_block_ms, retry_backoff_ms=1)
    return Producer(["leader"], config)


async def test_send_waits_until_the_brokers_know_the_topic(monkeypatch: pytest.MonkeyPatch) -> None:
    producer = _producer(monkeypatch, _AppearsAfter, 60000)
    future = await producer.send("t", b"v", partition=0)
    assert producer.metadata.refreshes == 3
    future.cancel()
    await producer.close()


async def test_a_topic_never_known_fails_after_max_block_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    never = type("Never", (_AppearsAfter,), {"known_at": 10**9})
    producer = _producer(monkeypatch, never, 50)
    with pytest.raises(KafkaError) as raised:
        await producer.send("t", b"v")
    await producer.close()
    assert raised.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "topic 't' not present in metadata after 50 ms" in str(raised.value)
    assert producer.metadata.refreshes > 1


async def test_a_partition_the_topic_lacks_fails_after_max_block_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    producer = _producer(monkeypatch, type("One", (_AppearsAfter,), {"known_at": 1}), 50)
    with pytest.raises(KafkaError) as raised:
        await producer.send("t", b"v", partition=4)
    await producer.close()
    assert "partition 4 of topic 't' not present in metadata after 50 ms (it has 1)" in str(raised.value)


async def test_a_non_retriable_topic_error_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = type("Refused", (_AppearsAfter,), {"known_at": 10**9, "error": ErrorCode.TOPIC_AUTHORIZATION_FAILED})
    producer = _producer(monkeypatch, refused, 60000)
    with pytest.raises(KafkaError) as raised:
        await producer.send("t", b"v")
    await producer.close()
    assert raised.value.code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert producer.metadata.refreshes == 1


def test_max_block_ms_out_of_range_is_invalid_config() -> None:
    with pytest.raises(KafkaError, match="max.block.ms"):
        ProducerConfig(max_block_ms=-1)

"""A partition whose fetch failed with a retriable error (its leader moved) is forgotten until the next refresh,
and the topic asked for by `require_topic` (a group leader counting partitions to assign, a consumer assigning one)
is looked up again rather than answered short of that partition: a group leader that counted its consumer's partial
view assigned no partition at all, generation after generation."""

from __future__ import annotations

import asyncio

from minikafka.client.metadata_cache import MetadataCache
from minikafka.pb import broker_pb2


class Brokers:
    """Metadata for topic t of 3 partitions, led by broker 1."""

    def __init__(self) -> None:
        self.asked = 0

    async def Metadata(self, request: broker_pb2.MetadataRequest, timeout: float) -> broker_pb2.MetadataResponse:  # noqa: N802
        self.asked += 1
        response = broker_pb2.MetadataResponse()
        response.brokers.add(node_id=1, host="b1", port=9092)
        topic = response.topics.add(name="t")
        for index in range(3):
            topic.partitions.add(partition_index=index, leader_id=1, replica_nodes=[1], isr_nodes=[1])
        return response


def test_a_forgotten_leader_makes_require_topic_ask_again() -> None:
    brokers = Brokers()
    cache = MetadataCache(["b1:9092"])
    cache.stub = lambda _address: brokers  # type: ignore[assignment,method-assign,return-value]

    async def run() -> None:
        assert sorted(await cache.require_topic("t")) == [0, 1, 2]
        cache.forget_leader("t", 1)
        assert cache.leader_address("t", 1) is None  # the next poll refreshes it
        assert sorted(await cache.require_topic("t")) == [0, 1, 2]
        assert brokers.asked == 2
        assert sorted(await cache.require_topic("t")) == [0, 1, 2]
        assert brokers.asked == 2  # fresh again: no more lookups

    asyncio.run(run())

"""A broker auto-creates a topic with its own num.partitions and default.replication.factor, as Kafka's
AutoTopicCreationManager fills them in before asking the controller; DescribeConfigs on the broker lists both."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from minikafka.broker.config import BrokerConfig
from minikafka.broker.kafka_wire.admin_topics import auto_create_topics
from minikafka.broker.kafka_wire.config_entries import STATIC_BROKER_CONFIG, broker_entries
from minikafka.common.config import load_config

PROPERTIES = {
    "node.id": "0",
    "process.roles": "broker",
    "listeners": "GRPC://127.0.0.1:9092",
    "controller.quorum.voters": "101@127.0.0.1:9093",
    "log.dirs": "/tmp/unused",
    "num.partitions": "2",
    "default.replication.factor": "3",
}


def test_the_topic_is_asked_for_with_the_brokers_defaults() -> None:
    config = load_config(BrokerConfig, PROPERTIES, "test")
    asked: list[Any] = []

    async def call(method: str, request: Any) -> None:
        asked.append((method, request))

    async def run() -> None:
        manager = SimpleNamespace(config=config, auto_creations={}, controller=SimpleNamespace(call=call))
        auto_create_topics(SimpleNamespace(manager=manager), ["orders", "bad name!"])  # type: ignore[arg-type]
        await asyncio.gather(*manager.auto_creations.values())

    asyncio.run(run())
    [(method, request)] = asked
    assert method == "CreateTopics"
    assert [(t.name, t.num_partitions, t.replication_factor) for t in request.topics] == [("orders", 2, 3)]


def test_describe_configs_lists_them_as_the_brokers_static_configs() -> None:
    entries = {entry.name: entry for entry in broker_entries(load_config(BrokerConfig, PROPERTIES, "test"))}
    assert (entries["num.partitions"].value, entries["num.partitions"].source) == ("2", STATIC_BROKER_CONFIG)
    assert entries["default.replication.factor"].value == "3"

"""The listener name says the protocol: PLAINTEXT listeners speak Kafka's, GRPC ones minikafka's."""

from __future__ import annotations

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.common.config import ConfigError, load_config

BASE = {
    "node.id": "1",
    "process.roles": "broker",
    "controller.quorum.voters": "101@127.0.0.1:9093",
    "log.dirs": "/tmp/unused",
}


def _load(**props: str) -> BrokerConfig:
    return load_config(BrokerConfig, {**BASE, **props}, "test")


def test_plaintext_is_kafka_and_grpc_is_grpc_by_default() -> None:
    config = _load(listeners="PLAINTEXT://127.0.0.1:9092,GRPC://127.0.0.1:9192")
    assert [listener.port for listener in config.kafka_listeners] == [9092]
    assert [listener.port for listener in config.grpc_listeners] == [9192]
    assert config.inter_broker_listener == "GRPC"


def test_a_listener_the_map_lacks_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="listener.security.protocol.map"):
        _load(listeners="INTERNAL://127.0.0.1:9192")
    config = _load(listeners="INTERNAL://127.0.0.1:9192", **{"listener.security.protocol.map": "INTERNAL:GRPC"})
    assert config.inter_broker_listener == "INTERNAL"


def test_replication_cannot_go_through_a_kafka_listener() -> None:
    with pytest.raises(ConfigError, match="inter.broker.listener.name"):
        _load(
            listeners="PLAINTEXT://127.0.0.1:9092,GRPC://127.0.0.1:9192",
            **{"inter.broker.listener.name": "PLAINTEXT"},
        )


def test_an_unknown_protocol_in_the_map_is_refused() -> None:
    with pytest.raises(ConfigError, match="listener.security.protocol.map"):
        _load(listeners="GRPC://127.0.0.1:9192", **{"listener.security.protocol.map": "GRPC:KERBEROS"})

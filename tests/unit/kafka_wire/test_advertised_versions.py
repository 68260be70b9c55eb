"""The ApiVersions answer: kafka-python infers the broker's Kafka version from it, and must see Kafka 4.0 (its
marker is ListOffsets v10); every key advertised has a handler and every advertised version a kio schema."""

from __future__ import annotations

import pytest
from kio.index import load_request_schema, load_response_schema

from minikafka.broker.kafka_wire import api_versions, apis

broker_version_data = pytest.importorskip("kafka.protocol.broker_version_data", reason="kafka-python is in dev")


def test_kafka_python_infers_kafka_4_0() -> None:
    inferred = broker_version_data.infer_broker_version_from_api_versions(dict(api_versions.SUPPORTED))
    assert inferred == (4, 0)


def test_every_advertised_key_and_version_is_served() -> None:
    for key, (low, high) in api_versions.SUPPORTED.items():
        assert key in apis.HANDLERS, key
        for version in range(low, high + 1):
            load_request_schema(key, version)
            load_response_schema(key, version)

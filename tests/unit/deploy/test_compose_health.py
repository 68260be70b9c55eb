"""The compose brokers' healthcheck: healthy only once the broker lists itself as an unfenced broker (registered,
caught up, unfenced), not as soon as it answers a client."""

from __future__ import annotations

from typing import Any

import pytest

from minikafka.client.admin import AdminClient
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.deploy.compose_health import broker_health, main
from minikafka.pb import broker_pb2


def _answering(monkeypatch: pytest.MonkeyPatch, answer: Any) -> None:
    def metadata(_admin: AdminClient, topics: Any = (), servers: Any = ()) -> broker_pb2.MetadataResponse:
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(AdminClient, "metadata", metadata)


def _listing(*broker_ids: int) -> broker_pb2.MetadataResponse:
    response = broker_pb2.MetadataResponse()
    for broker_id in broker_ids:
        response.brokers.add(node_id=broker_id, host=f"broker-{broker_id}", port=9092)
    return response


def test_a_broker_that_answers_but_is_not_unfenced_is_not_healthy(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    _answering(monkeypatch, _listing(2, 3))
    assert "broker 1 is not registered and unfenced yet (unfenced brokers: [2, 3])" in str(
        broker_health(1, "broker-1:19091")
    )
    assert main(["1", "broker-1:19091"]) == 1
    assert "not healthy" in capsys.readouterr().out


def test_a_broker_listing_itself_is_healthy(monkeypatch: pytest.MonkeyPatch) -> None:
    _answering(monkeypatch, _listing(1, 2))
    assert broker_health(1, "broker-1:19091") is None
    assert main(["1", "broker-1:19091"]) == 0


def test_an_unreachable_broker_is_not_healthy(monkeypatch: pytest.MonkeyPatch) -> None:
    _answering(monkeypatch, KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, "no broker reachable"))
    assert "BROKER_NOT_AVAILABLE" in str(broker_health(1, "broker-1:19091"))


def test_bad_arguments_get_a_usage_line(capsys) -> None:  # noqa: ANN001
    assert main(["one", "broker-1:19091"]) == 2
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err

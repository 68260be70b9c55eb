"""AdminClient follows NOT_CONTROLLER redirects, but not to a host this machine cannot resolve (a container's
name seen from the host): when every given controller points there, it fails at once saying so."""

from __future__ import annotations

from typing import Any

import pytest

from minikafka.client.admin import AdminClient
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.pb import controller_pb2


def _answers(admin: AdminClient, by_address: dict[str, Any]) -> list[str]:
    """Each address answers `by_address[address]`; returns the addresses called, in order."""
    called: list[str] = []

    def stub(address: str) -> str:
        called.append(address)
        return address

    admin._controller_stub = stub  # type: ignore[method-assign]
    return called


def _not_controller(leader_id: int, leader_address: str) -> controller_pb2.DescribeQuorumResponse:
    response = controller_pb2.DescribeQuorumResponse(error_code=ErrorCode.NOT_CONTROLLER)
    response.current_leader.leader_id = leader_id
    response.current_leader.leader_address = leader_address
    return response


def test_a_redirect_to_an_unresolvable_host_fails_at_once_naming_it() -> None:
    admin = AdminClient(["127.0.0.1:19102"], timeout_s=60)
    called = _answers(admin, {})
    redirect = _not_controller(101, "controller-101.invalid:9093")
    with pytest.raises(KafkaError) as raised:
        admin._call_active_controller(lambda _stub: redirect)
    assert raised.value.code == ErrorCode.NOT_CONTROLLER
    assert "controller-101.invalid:9093" in str(raised.value) and "cannot resolve" in str(raised.value)
    assert called == ["127.0.0.1:19102"]


def test_another_bootstrap_controller_is_tried_instead_of_the_unresolvable_redirect() -> None:
    admin = AdminClient(["127.0.0.1:19102", "127.0.0.1:19101"], timeout_s=60)
    called = _answers(admin, {})
    ok = controller_pb2.DescribeQuorumResponse(error_code=ErrorCode.NONE, leader_id=101)
    answers = {"127.0.0.1:19102": _not_controller(101, "controller-101.invalid:9093"), "127.0.0.1:19101": ok}
    assert admin._call_active_controller(lambda address: answers[address]) is ok
    assert called == ["127.0.0.1:19102", "127.0.0.1:19101"]


def test_a_resolvable_redirect_is_followed() -> None:
    admin = AdminClient(["127.0.0.1:19102", "127.0.0.1:19103"], timeout_s=60)
    called = _answers(admin, {})
    ok = controller_pb2.DescribeQuorumResponse(error_code=ErrorCode.NONE, leader_id=101)
    answers = {"127.0.0.1:19102": _not_controller(101, "127.0.0.1:19101"), "127.0.0.1:19101": ok}
    assert admin._call_active_controller(lambda address: answers[address]) is ok
    assert called == ["127.0.0.1:19102", "127.0.0.1:19101"]

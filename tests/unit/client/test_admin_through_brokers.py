"""With only --bootstrap-server, AdminClient sends partition administration (ElectLeaders, reassignments) to a
broker, which forwards it to the active controller: the next broker when one is unreachable, the request's own
timeout left for the broker to wait on the controller, and a whole-request error raised with Kafka's code."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from minikafka.client import admin as admin_module
from minikafka.client.admin import AdminClient
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.pb import controller_pb2


class Down(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE


def brokers_answering(monkeypatch: pytest.MonkeyPatch, answers: dict[str, Any]) -> tuple[AdminClient, list[Any]]:
    """An AdminClient on the brokers of `answers` (address -> response or exception); records each call."""
    calls: list[Any] = []

    class Stub:
        def __init__(self, address: str) -> None:
            self.address = address

        def __getattr__(self, method: str) -> Any:
            def call(request: Any, timeout: float) -> Any:
                calls.append((self.address, method, request, timeout))
                answer = answers[self.address]
                if isinstance(answer, Exception):
                    raise answer
                return answer

            return call

    monkeypatch.setattr(admin_module.broker_pb2_grpc, "BrokerStub", Stub)
    client = AdminClient(bootstrap_servers=list(answers), timeout_s=10)
    client._channel = lambda address, controller=True: address  # type: ignore[method-assign]
    return client, calls


def test_list_goes_to_the_first_broker_that_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    listed = controller_pb2.ListPartitionReassignmentsResponse()
    listed.topics.add(name="orders").partitions.add(partition_index=0, replicas=[1, 2, 3, 4], adding_replicas=[4])
    client, calls = brokers_answering(monkeypatch, {"b1:9092": Down(), "b2:9092": listed})
    assert client.list_partition_reassignments() == {
        ("orders", 0): {"replicas": [1, 2, 3, 4], "adding_replicas": [4], "removing_replicas": []}
    }
    assert [(address, method) for address, method, _, _ in calls] == [
        ("b1:9092", "ListPartitionReassignments"),
        ("b2:9092", "ListPartitionReassignments"),
    ]
    _, _, request, timeout = calls[-1]
    assert request.timeout_ms == 10000 and timeout > 10  # the broker's own REQUEST_TIMED_OUT comes back in time


def test_reassignments_and_elections_carry_the_controllers_per_partition_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    altered = controller_pb2.AlterPartitionReassignmentsResponse()
    altered.responses.add(name="nope").partitions.add(
        partition_index=0, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown"
    )
    client, calls = brokers_answering(monkeypatch, {"b1:9092": altered})
    assert client.alter_partition_reassignments([("nope", 0, [1, 2])]) == [
        ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "unknown")
    ]
    elected = controller_pb2.ElectLeadersResponse()
    elected.replica_election_results.add(topic="orders").partition_result.add(
        partition_id=0, error_code=ErrorCode.ELECTION_NOT_NEEDED
    )
    client, calls = brokers_answering(monkeypatch, {"b1:9092": elected})
    assert client.elect_leaders(0, [("orders", 0)]) == [("orders", 0, ErrorCode.ELECTION_NOT_NEEDED, "")]
    assert calls[0][1] == "ElectLeaders" and not calls[0][2].all_topic_partitions


def test_a_whole_request_error_raises_and_no_broker_reachable_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    timed_out = controller_pb2.ListPartitionReassignmentsResponse(
        error_code=ErrorCode.REQUEST_TIMED_OUT, error_message="no controller answered"
    )
    client, _ = brokers_answering(monkeypatch, {"b1:9092": timed_out})
    with pytest.raises(KafkaError) as raised:
        client.list_partition_reassignments()
    assert raised.value.code == ErrorCode.REQUEST_TIMED_OUT
    client, _ = brokers_answering(monkeypatch, {"b1:9092": Down(), "b2:9092": Down()})
    with pytest.raises(KafkaError) as raised:
        client.elect_leaders(0, None)
    assert raised.value.code == ErrorCode.BROKER_NOT_AVAILABLE and "b2:9092: UNAVAILABLE" in str(raised.value)

"""ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments on the Kafka listener: each request
becomes the controller's message, each answer Kafka's response (every version encodes), and a request the
controller refused or never answered gets that error where Kafka puts it."""

from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.alter_partition_reassignments.v0 import request as alter_v0
from kio.schema.elect_leaders.v0 import request as elect_v0
from kio.schema.elect_leaders.v2 import request as elect_v2
from kio.schema.list_partition_reassignments.v0 import request as list_v0

from minikafka.broker.kafka_wire import api_versions, apis, partition_admin
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response, response_class
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2

TIMEOUT = datetime.timedelta(seconds=30)


class FakeController:
    """The broker's channel to the active controller: records what is forwarded, answers with `answer`."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.forwarded: list[tuple[str, Any]] = []

    async def call_forwarded(self, method: str, request: Any) -> Any:
        self.forwarded.append((method, request))
        return self.answer


def answered(key: int, version: int, body: Any, answer: Any) -> tuple[Any, FakeController]:
    """The response the listener gives `body` when the controller answers `answer` (None: no controller)."""
    controller = FakeController(answer)
    ctx = WireContext(SimpleNamespace(controller=controller), "PLAINTEXT")  # type: ignore[arg-type]
    response = asyncio.run(apis.HANDLERS[key](ctx, Request(ApiHeader(key, version, 1), "test", body)))
    encode_response(1, response)  # every field is one kio can write at this version
    return response, controller


def codes(entries: Any, name: str) -> list[tuple[int, int, str | None]]:
    return [
        (p.partition_id if name == "e" else p.partition_index, int(p.error_code.value), p.error_message)
        for p in entries
    ]


# ---- ElectLeaders ----


def test_elect_leaders_is_advertised_and_forwarded_with_its_type_and_partitions() -> None:
    assert api_versions.SUPPORTED[partition_admin.ELECT_LEADERS] == (0, 2)
    body = elect_v2.ElectLeadersRequest(
        election_type=1,
        topic_partitions=(elect_v2.TopicPartitions(topic="orders", partitions=(0, 1)),),
        timeout=TIMEOUT,
    )
    answer = controller_pb2.ElectLeadersResponse()
    result = answer.replica_election_results.add(topic="orders")
    result.partition_result.add(partition_id=0, error_code=ErrorCode.NONE)
    result.partition_result.add(partition_id=1, error_code=ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, error_message="x")
    response, controller = answered(43, 2, body, answer)
    [(method, forwarded)] = controller.forwarded
    assert method == "ElectLeaders" and forwarded.election_type == 1 and not forwarded.all_topic_partitions
    assert [(t.topic, list(t.partitions)) for t in forwarded.topic_partitions] == [("orders", [0, 1])]
    assert forwarded.timeout_ms == 30000
    assert int(response.error_code.value) == ErrorCode.NONE
    [topic] = response.replica_election_results
    assert topic.topic == "orders"
    assert codes(topic.partition_result, "e") == [(0, 0, None), (1, int(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE), "x")]


def test_elect_leaders_v0_is_a_preferred_election_and_null_partitions_mean_all() -> None:
    body = elect_v0.ElectLeadersRequest(topic_partitions=None, timeout=TIMEOUT)
    _response, controller = answered(43, 0, body, controller_pb2.ElectLeadersResponse())
    [(_method, forwarded)] = controller.forwarded
    assert forwarded.election_type == partition_admin.PREFERRED and forwarded.all_topic_partitions


@pytest.mark.parametrize("version", [0, 1, 2])
def test_elect_leaders_without_a_controller_times_out_each_partition_named(version: int) -> None:
    cls = response_class(43, version).__module__.replace("response", "request")
    module = __import__(cls, fromlist=["ElectLeadersRequest"])
    values = {"topic_partitions": (module.TopicPartitions(topic="orders", partitions=(3,)),), "timeout": TIMEOUT}
    if version > 0:
        values["election_type"] = 0
    response, _ = answered(43, version, module.ElectLeadersRequest(**values), None)
    timed_out = int(ErrorCode.REQUEST_TIMED_OUT)
    assert codes(response.replica_election_results[0].partition_result, "e") == [
        (3, timed_out, "no controller answered")
    ]
    if version > 0:
        assert int(response.error_code.value) == timed_out


def test_elect_leaders_refused_as_a_whole_carries_the_controllers_error() -> None:
    refused = controller_pb2.ElectLeadersResponse(error_code=ErrorCode.INVALID_REQUEST, error_message="bad type")
    body = elect_v2.ElectLeadersRequest(
        election_type=7, topic_partitions=(elect_v2.TopicPartitions(topic="t", partitions=(0,)),), timeout=TIMEOUT
    )
    response, _ = answered(43, 2, body, refused)
    assert int(response.error_code.value) == ErrorCode.INVALID_REQUEST
    assert codes(response.replica_election_results[0].partition_result, "e") == [
        (0, int(ErrorCode.INVALID_REQUEST), "bad type")
    ]


# ---- AlterPartitionReassignments ----


def _alter_body() -> Any:
    return alter_v0.AlterPartitionReassignmentsRequest(
        timeout=TIMEOUT,
        topics=(
            alter_v0.ReassignableTopic(
                name="orders",
                partitions=(
                    alter_v0.ReassignablePartition(partition_index=0, replicas=(1, 2, 4)),
                    alter_v0.ReassignablePartition(partition_index=1, replicas=None),
                ),
            ),
            alter_v0.ReassignableTopic(
                name="nope", partitions=(alter_v0.ReassignablePartition(partition_index=0, replicas=(1,)),)
            ),
        ),
    )


def test_alter_partition_reassignments_forwards_targets_and_cancellations() -> None:
    assert api_versions.SUPPORTED[partition_admin.ALTER_PARTITION_REASSIGNMENTS] == (0, 0)
    answer = controller_pb2.AlterPartitionReassignmentsResponse()
    orders = answer.responses.add(name="orders")
    orders.partitions.add(partition_index=0, error_code=ErrorCode.NONE)
    orders.partitions.add(partition_index=1, error_code=ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, error_message="none")
    answer.responses.add(name="nope").partitions.add(
        partition_index=0, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown"
    )
    response, controller = answered(45, 0, _alter_body(), answer)
    [(method, forwarded)] = controller.forwarded
    assert method == "AlterPartitionReassignments" and forwarded.timeout_ms == 30000
    partitions = {(t.name, p.partition_index): p for t in forwarded.topics for p in t.partitions}
    assert list(partitions[("orders", 0)].replicas.broker_ids) == [1, 2, 4]
    assert not partitions[("orders", 1)].HasField("replicas")  # null replicas: cancel
    assert int(response.error_code.value) == ErrorCode.NONE and response.error_message is None
    got = {t.name: codes(t.partitions, "a") for t in response.responses}
    assert got == {
        "orders": [(0, 0, None), (1, int(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS), "none")],
        "nope": [(0, int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), "unknown")],
    }


def test_alter_partition_reassignments_refused_or_unanswered_fails_every_partition() -> None:
    for answer, code, message in (
        (None, ErrorCode.REQUEST_TIMED_OUT, "no controller answered"),
        (
            controller_pb2.AlterPartitionReassignmentsResponse(error_code=ErrorCode.NOT_CONTROLLER, error_message="m"),
            ErrorCode.NOT_CONTROLLER,
            "m",
        ),
    ):
        response, _ = answered(45, 0, _alter_body(), answer)
        assert (int(response.error_code.value), response.error_message) == (int(code), message)
        assert {p.error_code.value for t in response.responses for p in t.partitions} == {int(code)}


def test_a_partition_the_controller_left_out_is_an_unknown_server_error() -> None:
    response, _ = answered(45, 0, _alter_body(), controller_pb2.AlterPartitionReassignmentsResponse())
    assert {int(p.error_code.value) for t in response.responses for p in t.partitions} == {
        int(ErrorCode.UNKNOWN_SERVER_ERROR)
    }


# ---- ListPartitionReassignments ----


def _ongoing() -> controller_pb2.ListPartitionReassignmentsResponse:
    answer = controller_pb2.ListPartitionReassignmentsResponse()
    orders = answer.topics.add(name="orders")
    orders.partitions.add(partition_index=0, replicas=[1, 2, 3, 4], adding_replicas=[4], removing_replicas=[3])
    orders.partitions.add(partition_index=2, replicas=[2, 3, 1], adding_replicas=[1], removing_replicas=[])
    answer.topics.add(name="clicks").partitions.add(partition_index=0, replicas=[1, 2], adding_replicas=[2])
    return answer


def _listed(response: Any) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    return {
        (t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
        for t in response.topics
        for p in t.partitions
    }


def test_list_partition_reassignments_all_of_them_or_those_of_the_partitions_named() -> None:
    assert api_versions.SUPPORTED[partition_admin.LIST_PARTITION_REASSIGNMENTS] == (0, 0)
    everything, controller = answered(
        46, 0, list_v0.ListPartitionReassignmentsRequest(timeout=TIMEOUT, topics=None), _ongoing()
    )
    assert controller.forwarded[0][0] == "ListPartitionReassignments"
    assert _listed(everything) == {
        ("orders", 0): ([1, 2, 3, 4], [4], [3]),
        ("orders", 2): ([2, 3, 1], [1], []),
        ("clicks", 0): ([1, 2], [2], []),
    }
    named = list_v0.ListPartitionReassignmentsRequest(
        timeout=TIMEOUT,
        topics=(
            list_v0.ListPartitionReassignmentsTopics(name="orders", partition_indexes=(0, 1)),
            list_v0.ListPartitionReassignmentsTopics(name="nope", partition_indexes=(0,)),
        ),
    )
    some, _ = answered(46, 0, named, _ongoing())
    assert _listed(some) == {("orders", 0): ([1, 2, 3, 4], [4], [3])}  # 1 is not moving, nope is unknown


def test_list_partition_reassignments_without_a_controller_times_out() -> None:
    response, _ = answered(46, 0, list_v0.ListPartitionReassignmentsRequest(timeout=TIMEOUT, topics=None), None)
    assert int(response.error_code.value) == ErrorCode.REQUEST_TIMED_OUT and response.topics == ()

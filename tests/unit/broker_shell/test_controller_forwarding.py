"""A broker forwards partition administration to the active controller: it asks again while every controller
answers NOT_CONTROLLER (an election under way) or none is reachable, follows a redirect, returns the active
controller's answer as it is, and REQUEST_TIMED_OUT once the request's timeout has passed with no answer."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import grpc
from immutables import Map

from minikafka.broker.client_authorizer import ClientAuthorizer
from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.service import BrokerService
from minikafka.common.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.errors import ErrorCode
from minikafka.common.standard_authorizer import AuthorizerSettings
from minikafka.pb import controller_pb2

VOTERS = {1: ("c1", 9001), 2: ("c2", 9002), 3: ("c3", 9003)}


NO_AUTHORIZER = ClientAuthorizer(AuthorizerSettings(), dict)  # off, as by default
ALLOW = AclPermissionType.ALLOW


class Unreachable(grpc.RpcError):
    pass


class FakeStub:
    """One controller: answers each call with the next of `answers` (an exception is raised)."""

    def __init__(self, address: str, answers: list[Any], calls: list[str]) -> None:
        self.address = address
        self.answers = answers
        self.calls = calls

    def __getattr__(self, method: str) -> Any:
        async def call(request: Any, timeout: float) -> Any:
            self.calls.append(self.address)
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            if isinstance(answer, Exception):
                raise answer
            return answer

        return call


def client(answers: dict[str, list[Any]], calls: list[str], request_timeout_ms: int = 30000) -> ControllerClient:
    config = SimpleNamespace(
        request_timeout_ms=request_timeout_ms, inter_node_tls=None, voters=VOTERS, bootstrap_servers=[]
    )
    controllers = ControllerClient(config)  # type: ignore[arg-type]
    stubs = {address: FakeStub(address, list(replies), calls) for address, replies in answers.items()}
    controllers._stub = stubs.__getitem__  # type: ignore[method-assign]
    return controllers


def not_controller(leader_address: str = "") -> controller_pb2.ListPartitionReassignmentsResponse:
    response = controller_pb2.ListPartitionReassignmentsResponse(error_code=ErrorCode.NOT_CONTROLLER)
    response.current_leader.leader_address = leader_address
    return response


def test_an_election_under_way_is_waited_out_and_the_active_controllers_answer_returned() -> None:
    listed = controller_pb2.ListPartitionReassignmentsResponse()
    listed.topics.add(name="orders").partitions.add(partition_index=0, replicas=[1, 2, 4], adding_replicas=[4])
    calls: list[str] = []
    controllers = client(
        {
            "c1:9001": [not_controller(), not_controller("c3:9003")],
            "c2:9002": [Unreachable(), not_controller("c3:9003")],
            "c3:9003": [not_controller(), listed],
        },
        calls,
    )
    service = BrokerService(SimpleNamespace(controller=controllers, authorizer=NO_AUTHORIZER), "GRPC", None)  # type: ignore[arg-type]
    request = controller_pb2.ListPartitionReassignmentsRequest(timeout_ms=30000)
    answer = asyncio.run(service.ListPartitionReassignments(request, None))
    assert answer == listed
    # The first round finds no active controller; in the second, c1's redirect sends the request to c3 at once.
    assert calls == ["c1:9001", "c2:9002", "c3:9003", "c1:9001", "c3:9003"]


def test_no_controller_within_the_requests_timeout_is_request_timed_out() -> None:
    calls: list[str] = []
    controllers = client({a: [not_controller()] for a in ("c1:9001", "c2:9002", "c3:9003")}, calls)
    service = BrokerService(SimpleNamespace(controller=controllers, authorizer=NO_AUTHORIZER), "GRPC", None)  # type: ignore[arg-type]
    request = controller_pb2.ElectLeadersRequest(election_type=0, all_topic_partitions=True, timeout_ms=1000)
    answer = asyncio.run(service.ElectLeaders(request, None))
    assert (answer.error_code, answer.error_message) == (ErrorCode.REQUEST_TIMED_OUT, "no controller answered")
    assert calls[:4] == ["c1:9001", "c2:9002", "c3:9003", "c1:9001"]  # asked again, round after round


def test_the_controllers_per_partition_errors_come_back_unchanged() -> None:
    refused = controller_pb2.AlterPartitionReassignmentsResponse()
    refused.responses.add(name="nope").partitions.add(
        partition_index=0, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown topic"
    )
    calls: list[str] = []
    controllers = client({"c1:9001": [refused], "c2:9002": [Unreachable()], "c3:9003": [Unreachable()]}, calls)
    service = BrokerService(SimpleNamespace(controller=controllers, authorizer=NO_AUTHORIZER), "GRPC", None)  # type: ignore[arg-type]
    request = controller_pb2.AlterPartitionReassignmentsRequest(timeout_ms=5000)
    request.topics.add(name="nope").partitions.add(partition_index=0).replicas.broker_ids.extend([1])
    assert asyncio.run(service.AlterPartitionReassignments(request, None)) == refused
    assert calls == ["c1:9001"]


def test_alter_configs_forwards_what_the_caller_may_alter_and_refuses_the_rest_in_place() -> None:
    """ANONYMOUS may ALTER_CONFIGS topic `mine` only: `theirs` and the broker are refused in their place, as Kafka
    answers each resource; the controller sees `mine` alone."""
    may = AclBinding(
        ResourceType.TOPIC, "mine", PatternType.LITERAL, "User:ANONYMOUS", "*", AclOperation.ALTER_CONFIGS, ALLOW
    )
    authorizer = ClientAuthorizer(AuthorizerSettings(enabled=True), lambda: Map({"id-1": may}))
    altered = controller_pb2.AlterConfigsResponse()
    altered.results.add(resource=controller_pb2.ConfigResourceRef(resource_type=2, resource_name="mine"))
    forwarded: list[Any] = []

    async def forward(method: str, request: Any, _answer: Any) -> Any:
        forwarded.append((method, [r.resource.resource_name for r in request.resources]))
        return altered

    manager = SimpleNamespace(controller=SimpleNamespace(forward=forward), authorizer=authorizer)
    service = BrokerService(manager, "GRPC", None)  # type: ignore[arg-type]
    context = SimpleNamespace(invocation_metadata=lambda: (), peer=lambda: "ipv4:127.0.0.1:5000")
    request = controller_pb2.AlterConfigsRequest(incremental=True)
    for kind, name in ((2, "theirs"), (2, "mine"), (4, "1")):
        entry = request.resources.add()
        entry.resource.resource_type, entry.resource.resource_name = kind, name
    answer = asyncio.run(service.AlterConfigs(request, context))
    assert forwarded == [("AlterConfigs", ["mine"])]
    assert [(r.resource.resource_name, r.error_code) for r in answer.results] == [
        ("theirs", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("mine", ErrorCode.NONE),
        ("1", ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    ]

"""AddRaftVoter (80) and RemoveRaftVoter (81) on a broker's Kafka listener: forwarded to the active controller with
the voter's directory id as minikafka names it and its CONTROLLER listener as its endpoint; the controller's
refusal comes back as Kafka's error; without ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from types import SimpleNamespace
from typing import Any

from kio.schema.add_raft_voter.v1 import request as add_v1
from kio.schema.remove_raft_voter.v0 import request as remove_v0
from kio.static.primitive import u16

from minikafka.broker.kafka_wire import api_versions, apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.common.acl import AclOperation
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2

DIRECTORY = uuid.UUID("00000000-0000-0001-0000-000000000002")


class FakeController:
    def __init__(self, code: ErrorCode = ErrorCode.NONE) -> None:
        self.code = code
        self.asked: list[tuple[str, Any]] = []

    async def call_within(self, method: str, request: Any, _timeout_s: float) -> Any:
        self.asked.append((method, request))
        return controller_pb2.RaftVoterChangeResponse(error_code=self.code, error_message="" if not self.code else "no")


class Authorizer:
    def __init__(self, allowed: bool) -> None:
        self.allowed = allowed
        self.asked: list[AclOperation] = []

    def allowed_on_cluster(self, _caller: object, operation: AclOperation) -> bool:
        self.asked.append(operation)
        return self.allowed


def call(api_key: int, version: int, body: Any, controller: FakeController, authorizer: Any = None) -> Any:
    config = SimpleNamespace(cluster_id="minikafka", request_timeout_ms=1000, voters={})
    manager = SimpleNamespace(controller=controller, config=config)
    ctx = WireContext(manager, "PLAINTEXT", authorizer=authorizer or Authorizer(True))  # type: ignore[arg-type]
    response = asyncio.run(apis.HANDLERS[api_key](ctx, Request(ApiHeader(api_key, version, 1), "test", body)))
    encode_response(1, response)  # every field is one kio can write at this version
    return response


def add_request(ack_when_committed: bool = True) -> Any:
    listeners = (
        add_v1.Listener(name="OTHER", host="10.0.0.1", port=u16(1)),
        add_v1.Listener(name="CONTROLLER", host="127.0.1.4", port=u16(9093)),
    )
    return add_v1.AddRaftVoterRequest(
        cluster_id="minikafka",
        timeout=datetime.timedelta(seconds=10),
        voter_id=104,
        voter_directory_id=DIRECTORY,
        listeners=listeners,
        ack_when_committed=ack_when_committed,
    )


def test_versions_are_kafkas() -> None:
    assert api_versions.SUPPORTED[80] == (0, 1) and api_versions.SUPPORTED[81] == (0, 0)


def test_add_raft_voter_is_forwarded_with_the_controller_listener_and_the_directory() -> None:
    controller = FakeController()
    response = call(80, 1, add_request(), controller)
    assert int(response.error_code.value) == ErrorCode.NONE
    [(method, forwarded)] = controller.asked
    assert method == "AddRaftVoter"
    assert (forwarded.voter_id, forwarded.voter_directory_id) == (104, "AAAAAAAAAAEAAAAAAAAAAg")
    assert (forwarded.voter_endpoint, forwarded.timeout_ms) == ("127.0.1.4:9093", 10_000)
    assert forwarded.cluster_id == "minikafka"


def test_remove_raft_voter_answers_the_controllers_refusal() -> None:
    body = remove_v0.RemoveRaftVoterRequest(cluster_id=None, voter_id=101, voter_directory_id=DIRECTORY)
    controller = FakeController(ErrorCode.VOTER_NOT_FOUND)
    response = call(81, 0, body, controller)
    assert int(response.error_code.value) == ErrorCode.VOTER_NOT_FOUND and response.error_message == "no"
    [(method, forwarded)] = controller.asked
    assert method == "RemoveRaftVoter" and forwarded.cluster_id == "minikafka"


def test_without_alter_on_the_cluster_nothing_is_forwarded() -> None:
    controller, authorizer = FakeController(), Authorizer(False)
    response = call(80, 0, add_request(), controller, authorizer)
    assert int(response.error_code.value) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and controller.asked == []
    assert authorizer.asked == [AclOperation.ALTER]
    body = remove_v0.RemoveRaftVoterRequest(cluster_id=None, voter_id=101, voter_directory_id=DIRECTORY)
    response = call(81, 0, body, controller, authorizer)
    assert int(response.error_code.value) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and controller.asked == []


def test_add_raft_voter_v1_without_ack_when_committed_asks_for_the_answer_on_append() -> None:
    controller = FakeController()
    call(80, 1, add_request(ack_when_committed=False), controller)
    call(80, 1, add_request(), controller)
    call(80, 0, add_request(), controller)
    assert [forwarded.ack_when_appended for _, forwarded in controller.asked] == [True, False, False]

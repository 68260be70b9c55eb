"""AddRaftVoter (80) and RemoveRaftVoter (81) through any broker (KIP-853): Kafka's admin client
(`kafka-metadata-quorum --bootstrap-server ... add-controller`) sends them to a broker, which forwards them to the
active controller, as a Kafka broker does. ALTER on the cluster is required when an authorizer is configured. The
answer comes once the new voter set is committed (or with the controller's refusal: DUPLICATE_VOTER,
VOTER_NOT_FOUND, REQUEST_TIMED_OUT, UNSUPPORTED_VERSION, ...)."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from minikafka.broker.kafka_wire.context import QuorumContext
from minikafka.broker.kafka_wire.entities import build
from minikafka.broker.kafka_wire.forwarded import forwarded_request_error
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2

ADD_RAFT_VOTER = 80
REMOVE_RAFT_VOTER = 81
VERSIONS = {ADD_RAFT_VOTER: (0, 1), REMOVE_RAFT_VOTER: (0, 0)}  # Kafka 4.1's ranges
CONTROLLER_LISTENER = "CONTROLLER"
REMOVE_TIMEOUT_MS = 30_000  # RemoveRaftVoter carries no timeout


def directory_id(value: uuid.UUID | None) -> str:
    """A Kafka Uuid as minikafka names a directory (meta.properties' directory.id)."""
    return "" if value is None else base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _endpoint(listeners: Any) -> str:
    """host:port of the voter's controller listener: the one named CONTROLLER, else the first."""
    chosen = next((li for li in listeners if li.name == CONTROLLER_LISTENER), listeners[0] if listeners else None)
    return "" if chosen is None else f"{chosen.host}:{int(chosen.port)}"


def _answer(cls: type, answer: Any) -> Any:
    code, message = forwarded_request_error(answer)
    return build(cls, throttle_time=0, error_code=code, error_message=message)


async def add_raft_voter(ctx: QuorumContext, request: Request) -> Any:
    cls = response_class(ADD_RAFT_VOTER, request.header.api_version)
    if not ctx.allowed_on_cluster(AclOperation.ALTER):  # Kafka: ALTER on the cluster
        return build(cls, throttle_time=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None)
    body = request.body
    timeout_ms = max(1, int(body.timeout.total_seconds() * 1000))
    forwarded = controller_pb2.AddRaftVoterRequest(
        cluster_id=body.cluster_id if body.cluster_id is not None else ctx.quorum.cluster_id,
        voter_id=body.voter_id,
        voter_directory_id=directory_id(body.voter_directory_id),
        timeout_ms=timeout_ms,
        voter_endpoint=_endpoint(body.listeners),
        ack_when_appended=not getattr(body, "ack_when_committed", True),  # a v0 request waits for the commit
    )
    answer = await ctx.quorum.controller.call_within("AddRaftVoter", forwarded, timeout_ms / 1000 + 5)
    return _answer(cls, answer)


async def remove_raft_voter(ctx: QuorumContext, request: Request) -> Any:
    cls = response_class(REMOVE_RAFT_VOTER, request.header.api_version)
    if not ctx.allowed_on_cluster(AclOperation.ALTER):
        return build(cls, throttle_time=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None)
    body = request.body
    forwarded = controller_pb2.RemoveRaftVoterRequest(
        cluster_id=body.cluster_id if body.cluster_id is not None else ctx.quorum.cluster_id,
        voter_id=body.voter_id,
        voter_directory_id=directory_id(body.voter_directory_id),
    )
    answer = await ctx.quorum.controller.call_within("RemoveRaftVoter", forwarded, REMOVE_TIMEOUT_MS / 1000 + 5)
    return _answer(cls, answer)


HANDLERS = {ADD_RAFT_VOTER: add_raft_voter, REMOVE_RAFT_VOTER: remove_raft_voter}

"""The checks a Raft request passes before its handler may change any state, in KafkaRaftClient's order.

Every request must name this node's cluster (INCONSISTENT_CLUSTER_ID). Vote, BeginQuorumEpoch and EndQuorumEpoch
are voter-only: from an older epoch they are left to the handler (FENCED_LEADER_EPOCH); otherwise the sender must be
a voter, and so must this node (INCONSISTENT_VOTER_SET). Fetch and FetchSnapshot are open to observers.

Kafka accepts a request without a cluster id (older senders); protobuf cannot tell an absent string from an empty
one and every minikafka sender sets it, so an empty cluster id is refused like any other mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    RaftRequest,
    VoteRequest,
)


@dataclass(frozen=True)
class LocalQuorum:
    """What this node knows that requests are checked against."""

    node_id: int
    cluster_id: str
    voters: frozenset[int]
    epoch: int


@dataclass(frozen=True)
class Rejection:
    """Why a request is refused: the error to answer and the value that failed, against the one expected."""

    error_code: ErrorCode
    field: str  # the request field (or this node's role) that failed the check
    expected: str
    actual: str


@dataclass(frozen=True)
class _VoterOnly:
    sender_field: str
    sender: int
    epoch: int


def _voter_only(request: RaftRequest) -> _VoterOnly | None:
    match request:
        case VoteRequest():
            return _VoterOnly("candidate_id", request.candidate_id, request.candidate_epoch)
        case BeginQuorumEpochRequest() | EndQuorumEpochRequest():
            return _VoterOnly("leader_id", request.leader_id, request.leader_epoch)
    return None


def validate_request(request: RaftRequest, local: LocalQuorum) -> Rejection | None:
    """The rejection `request` earns at this node, or None when its handler may process it."""
    if request.cluster_id != local.cluster_id:
        return Rejection(ErrorCode.INCONSISTENT_CLUSTER_ID, "cluster_id", local.cluster_id, request.cluster_id)
    check = _voter_only(request)
    if check is None or check.epoch < local.epoch:
        return None
    voters = "one of voters " + ",".join(str(v) for v in sorted(local.voters))
    if check.sender < 0:
        return Rejection(ErrorCode.INVALID_REQUEST, check.sender_field, "a node id >= 0", str(check.sender))
    if local.node_id not in local.voters:
        return Rejection(ErrorCode.INCONSISTENT_VOTER_SET, "receiver", voters, str(local.node_id))
    if check.sender not in local.voters:
        return Rejection(ErrorCode.INCONSISTENT_VOTER_SET, check.sender_field, voters, str(check.sender))
    return None

"""The checks a Raft request passes before its handler may change any state, in KafkaRaftClient's order.

Every request must name this node's cluster (INCONSISTENT_CLUSTER_ID). Vote, BeginQuorumEpoch and EndQuorumEpoch
are voter-only: from an older epoch they are left to the handler (FENCED_LEADER_EPOCH); otherwise the sender must be
a voter, and so must this node (INCONSISTENT_VOTER_SET). Replicas are named by id and metadata log directory
(KIP-853): a request naming another directory for this node than its own is not meant for it (INVALID_VOTER_KEY),
and one naming this node's directory is answered whatever this node's own voter set, which may be stale: the
sender counts the answers of its own voter set only. Fetch and FetchSnapshot are open to observers.

Kafka accepts a request without a cluster id (older senders); protobuf cannot tell an absent string from an empty
one and every minikafka sender sets it, so an empty cluster id is refused like any other mismatch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

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
    directory_id: str = ""
    is_voter: bool = True  # this node's (id, directory) is in the voter set
    voter_directories: Mapping[int, str] = field(default_factory=dict)  # "": any directory (static voters)
    leader_id: int | None = None  # the leader this node knows in `epoch`


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
    receiver_directory_id: str = ""  # the directory the sender's voter set names for this node ("": any)
    sender_directory_id: str = ""  # the sender's own directory, where the request carries it


def _voter_only(request: RaftRequest) -> _VoterOnly | None:
    match request:
        case VoteRequest():
            return _VoterOnly(
                "candidate_id",
                request.candidate_id,
                request.candidate_epoch,
                request.voter_directory_id,
                request.candidate_directory_id,
            )
        case BeginQuorumEpochRequest():
            return _VoterOnly("leader_id", request.leader_id, request.leader_epoch, request.voter_directory_id)
        case EndQuorumEpochRequest():
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
    if check.receiver_directory_id and check.receiver_directory_id != local.directory_id:
        return Rejection(
            ErrorCode.INVALID_VOTER_KEY, "voter_directory_id", local.directory_id, check.receiver_directory_id
        )
    if check.receiver_directory_id:
        # Addressed to this very replica by id and directory (KIP-853): the sender's voter set names it, and this
        # replica's own may be stale (a change not fetched yet). The sender counts only the voters of its own set.
        return None
    if local.node_id not in local.voters or not local.is_voter:
        return Rejection(ErrorCode.INCONSISTENT_VOTER_SET, "receiver", voters, f"{local.node_id}")
    # A leader that removed itself resigns once that commits: its EndQuorumEpoch comes from outside the voter set.
    resigning = isinstance(request, EndQuorumEpochRequest) and (check.sender, check.epoch) == (
        local.leader_id,
        local.epoch,
    )
    if check.sender not in local.voters and not resigning:
        return Rejection(ErrorCode.INCONSISTENT_VOTER_SET, check.sender_field, voters, str(check.sender))
    return None

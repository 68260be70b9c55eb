"""Requests from another cluster, or voter-only requests naming a node outside the voter set, change nothing."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.raft.core import Follower, RaftConfig, RaftNode
from minikafka.kraft_controller.raft.messages import (
    NO_LEADER,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    RaftRequest,
    SnapshotId,
    VoteRequest,
    VoteResponse,
)

CLUSTER = "kraft-cluster-1"
VOTERS = (1, 2, 3)
CONFIG = RaftConfig(election_timeout_ms=1000, fetch_timeout_ms=2000)


class LowestRandom:
    def randint(self, a: int, b: int) -> int:
        return a


def follower(node_id: int = 2) -> RaftNode:
    """A voter following leader 1 in epoch 5."""
    return RaftNode(node_id, VOTERS, CONFIG, LowestRandom(), 0, epoch=5, leader_id=1, cluster_id=CLUSTER)


def state(raft: RaftNode) -> tuple[object, ...]:
    return (raft.epoch, raft.leader_id, raft.voted_for, raft.role, raft.timers)


def refused(raft: RaftNode, sender: int, request: RaftRequest) -> object:
    """The answer to `request`; asserts it changed nothing, had no effect, and was logged once."""
    before = state(raft)
    with capture_logs() as logs:
        response, effects = raft.handle_request(sender, request, 10)
    assert effects == [] and state(raft) == before
    [event] = [e for e in logs if e["event"] == "raft_request_invalid"]
    assert event["error"] == response.error_code.name
    return response


@pytest.mark.parametrize("cluster_id", ["", "another-cluster"])
@pytest.mark.parametrize(
    "request_",
    [
        VoteRequest(6, 3, 5, 10),
        BeginQuorumEpochRequest(3, 6),
        EndQuorumEpochRequest(1, 5, (2, 3)),
        FetchRequest(3, 5, 0, 0),
        FetchSnapshotRequest(100, 5, SnapshotId(10, 5)),
    ],
)
def test_a_request_from_another_cluster_is_refused(request_: RaftRequest, cluster_id: str) -> None:
    request_ = type(request_)(**{**request_.__dict__, "cluster_id": cluster_id})
    response = refused(follower(), 3, request_)
    assert response.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert (response.leader_id, response.leader_epoch) == (NO_LEADER, -1)  # nothing learned about this quorum


def test_inconsistent_cluster_id_logs_expected_and_actual() -> None:
    with capture_logs() as logs:
        follower().handle_request(999, BeginQuorumEpochRequest(999, 6, "forged"), 10)
    [event] = [e for e in logs if e["event"] == "raft_request_invalid"]
    assert (event["field"], event["expected"], event["actual"]) == ("cluster_id", CLUSTER, "forged")


def test_begin_quorum_epoch_naming_a_leader_outside_the_voters_is_refused() -> None:
    raft = follower()
    response = refused(raft, 999, BeginQuorumEpochRequest(999, 6, CLUSTER))
    assert response == BeginQuorumEpochResponse(ErrorCode.INCONSISTENT_VOTER_SET, 1, 5)
    assert raft.role == Follower(1)


def test_end_quorum_epoch_from_a_non_voter_is_refused() -> None:
    response = refused(follower(), 999, EndQuorumEpochRequest(999, 5, (2, 3), CLUSTER))
    assert response == EndQuorumEpochResponse(ErrorCode.INCONSISTENT_VOTER_SET, 1, 5)


def test_vote_from_a_non_voter_is_refused() -> None:
    raft = RaftNode(2, VOTERS, CONFIG, LowestRandom(), 0, epoch=5, cluster_id=CLUSTER)
    response = refused(raft, 999, VoteRequest(6, 999, 5, 10, CLUSTER))
    assert response == VoteResponse(ErrorCode.INCONSISTENT_VOTER_SET, NO_LEADER, 5, False)


def test_an_observer_refuses_voter_only_requests() -> None:
    observer = RaftNode(100, VOTERS, CONFIG, LowestRandom(), 0, epoch=5, leader_id=1, cluster_id=CLUSTER)
    response = refused(observer, 2, VoteRequest(6, 2, 5, 10, CLUSTER))
    assert response.error_code == ErrorCode.INCONSISTENT_VOTER_SET


def test_a_negative_leader_id_is_an_invalid_request() -> None:
    response = refused(follower(), 3, BeginQuorumEpochRequest(-1, 6, CLUSTER))
    assert response.error_code == ErrorCode.INVALID_REQUEST


def test_an_older_epoch_is_fenced_before_the_voter_set_is_checked() -> None:
    response, effects = follower().handle_request(999, BeginQuorumEpochRequest(999, 4, CLUSTER), 10)
    assert response.error_code == ErrorCode.FENCED_LEADER_EPOCH and effects == []


def test_observers_may_fetch() -> None:
    leader = RaftNode(1, (1,), CONFIG, LowestRandom(), 0, cluster_id=CLUSTER)
    leader.tick(1000)
    assert leader.is_leader
    response, _ = leader.handle_request(100, FetchRequest(100, leader.epoch, 0, 0, CLUSTER), 1001)
    assert isinstance(response, FetchResponse) and response.error_code == ErrorCode.NONE
    snapshot, _ = leader.handle_request(100, FetchSnapshotRequest(100, leader.epoch, SnapshotId(1, 1), CLUSTER), 1001)
    assert isinstance(snapshot, FetchSnapshotResponse) and snapshot.error_code == ErrorCode.SNAPSHOT_NOT_FOUND


def test_a_valid_begin_quorum_epoch_is_still_followed() -> None:
    raft = follower()
    response, _ = raft.handle_request(3, BeginQuorumEpochRequest(3, 6, CLUSTER), 10)
    assert response.error_code == ErrorCode.NONE and raft.role == Follower(3) and raft.epoch == 6


def test_every_request_the_core_sends_carries_its_cluster_id() -> None:
    raft = RaftNode(1, VOTERS, CONFIG, LowestRandom(), 0, cluster_id=CLUSTER)
    requests = [e.request for e in raft.tick(0) + raft.tick(1000) if hasattr(e, "request")]
    assert requests and all(r.cluster_id == CLUSTER for r in requests)

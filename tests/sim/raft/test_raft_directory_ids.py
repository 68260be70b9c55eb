"""Replicas named by id and metadata log directory (KIP-853): a controller whose disk was wiped keeps its id but
not its directory, and is no longer the voter the voter set names."""

from __future__ import annotations

from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.raft.core import Leader, RaftConfig, RaftNode, ReplicaKey, Send
from minikafka.kraft_controller.raft.messages import (
    BeginQuorumEpochRequest,
    FetchRequest,
    VoteRequest,
    VoteResponse,
)

CLUSTER = "kraft-cluster-1"
VOTERS = {1: "dir-1", 2: "dir-2", 3: "dir-3"}
CONFIG = RaftConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, pre_vote_enable=False)


class LowestRandom:
    def randint(self, a: int, b: int) -> int:
        return a


def node(node_id: int, directory_id: str, **kwargs: object) -> RaftNode:
    return RaftNode(
        node_id,
        VOTERS,
        CONFIG,
        LowestRandom(),
        0,
        cluster_id=CLUSTER,
        directory_id=directory_id,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_replica_is_a_voter_only_in_the_directory_the_voter_set_names() -> None:
    assert node(2, "dir-2").is_voter
    with capture_logs() as logs:
        wiped = node(2, "dir-2-new")
    assert not wiped.is_voter
    [event] = [e for e in logs if e["event"] == "raft_replica_not_in_voter_set"]
    assert event["voter_directory_id"] == "dir-2" and event["directory_id"] == "dir-2-new"
    assert not node(2, "dir-2", observer_only=True).is_voter
    # A static voter set (ids only) takes any directory.
    assert RaftNode(2, (1, 2, 3), CONFIG, LowestRandom(), 0, directory_id="anything").is_voter


def test_candidates_name_each_voter_by_its_directory() -> None:
    candidate = node(1, "dir-1")
    effects = candidate.tick(CONFIG.election_timeout_ms)
    votes = {e.destination: e.request for e in effects if isinstance(e, Send)}
    assert {d: (r.candidate_directory_id, r.voter_directory_id) for d, r in votes.items()} == {  # type: ignore[union-attr]
        2: ("dir-1", "dir-2"),
        3: ("dir-1", "dir-3"),
    }


def test_a_wiped_voter_refuses_a_vote_meant_for_its_old_directory() -> None:
    wiped = node(2, "dir-2-new", observer_only=True)
    with capture_logs() as logs:
        response, effects = wiped.handle_request(3, VoteRequest(1, 3, 0, 0, CLUSTER, False, "dir-3", "dir-2"), 10)
    assert isinstance(response, VoteResponse) and not response.vote_granted
    assert response.error_code == ErrorCode.INVALID_VOTER_KEY and effects == []
    assert wiped.voted_for is None and wiped.epoch == 0
    [event] = [e for e in logs if e["event"] == "raft_request_invalid"]
    assert event["field"] == "voter_directory_id" and event["expected"] == "dir-2-new"
    # Nor does it follow a leader's BeginQuorumEpoch for the old voter; it finds the leader by fetching.
    begin, _ = wiped.handle_request(1, BeginQuorumEpochRequest(1, 1, CLUSTER, "dir-2"), 10)
    assert begin.error_code == ErrorCode.INVALID_VOTER_KEY


def test_a_vote_addressed_to_this_directory_is_answered_whatever_its_own_voter_set() -> None:
    """Its own voter set may be stale (a change it has not fetched yet): the candidate counts only its own voters."""
    newcomer = RaftNode(4, VOTERS, CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="dir-4")
    assert not newcomer.is_voter
    response, _ = newcomer.handle_request(3, VoteRequest(1, 3, 0, 0, CLUSTER, False, "dir-3", "dir-4"), 10)
    assert response.error_code == ErrorCode.NONE and response.vote_granted  # type: ignore[union-attr]


def test_a_wiped_voter_never_starts_an_election() -> None:
    wiped = node(2, "dir-2-new", observer_only=True)
    for now in range(0, 20_000, 500):
        effects = wiped.tick(now)
        assert not any(isinstance(e, Send) and isinstance(e.request, VoteRequest) for e in effects)
    assert wiped.epoch == 0


def leader_of_epoch_1() -> RaftNode:
    leader = node(1, "dir-1")
    leader.tick(CONFIG.election_timeout_ms)
    leader.handle_response(2, VoteResponse(ErrorCode.NONE, -1, 1, True), CONFIG.election_timeout_ms)
    assert isinstance(leader.role, Leader)
    leader.propose([b"a", b"b"], 1000)
    return leader


def test_a_fetch_from_a_wiped_voter_is_an_observers() -> None:
    """Its offset does not count towards the high watermark, and it gets only committed entries."""
    leader = leader_of_epoch_1()
    response, _ = leader.handle_request(2, FetchRequest(2, 1, 0, 0, CLUSTER, "dir-2-new"), 1010)
    assert response.entries == ()  # type: ignore[union-attr]
    response, _ = leader.handle_request(2, FetchRequest(2, 1, 3, 1, CLUSTER, "dir-2-new"), 1020)
    assert leader.high_watermark == 0
    assert ReplicaKey(2, "dir-2-new") in leader.progress
    assert leader.voter_progress(2).fetch_offset == 0  # type: ignore[union-attr]
    # The voter itself, from its own directory, commits them.
    leader.handle_request(3, FetchRequest(3, 1, 3, 1, CLUSTER, "dir-3"), 1030)
    assert leader.high_watermark == 3

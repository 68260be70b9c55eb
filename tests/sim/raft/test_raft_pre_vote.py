"""KIP-996 pre-vote in the pure KRaft core: the prospective state, how voters answer a pre-vote, and what a
granted or refused round leads to. The rules are Kafka 4.x's (KafkaRaftClient, ProspectiveState, FollowerState)."""

from __future__ import annotations

from collections.abc import Sequence

from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.raft import wire
from minikafka.kraft_controller.raft.core import (
    Candidate,
    Effect,
    Follower,
    Leader,
    PersistQuorumState,
    Prospective,
    RaftConfig,
    RaftNode,
    Send,
    Unattached,
    Voted,
)
from minikafka.kraft_controller.raft.messages import (
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    LogEntry,
    VoteRequest,
    VoteResponse,
)

CONFIG = RaftConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, retry_backoff_ms=50)
VOTERS = (1, 2, 3)


class LowestRandom:
    def randint(self, a: int, b: int) -> int:
        return a


def node(node_id: int, now_ms: int = 0, config: RaftConfig = CONFIG, **persisted: object) -> RaftNode:
    return RaftNode(node_id, VOTERS, config, LowestRandom(), now_ms, **persisted)  # type: ignore[arg-type]


def log(epochs: Sequence[int]) -> list[LogEntry]:
    return [LogEntry(i, epoch, f"e{i}".encode()) for i, epoch in enumerate(epochs)]


def sends(effects: list[Effect]) -> list[Send]:
    return [e for e in effects if isinstance(e, Send)]


def persists(effects: list[Effect]) -> list[PersistQuorumState]:
    return [e for e in effects if isinstance(e, PersistQuorumState)]


def events(logs: list[dict[str, object]], name: str) -> list[dict[str, object]]:
    return [e for e in logs if e["event"] == name]


def follower_that_fetched(node_id: int, leader: int = 1, epoch: int = 3) -> RaftNode:
    """A voter following `leader` in `epoch` whose Fetch to it has succeeded."""
    raft = node(node_id, epoch=epoch, leader_id=leader, entries=log([1, 2, epoch]))
    raft.handle_response(leader, FetchResponse(ErrorCode.NONE, leader, epoch, 3, 0), 100)
    assert raft.role == Follower(leader, fetched=True)
    return raft


def pre_vote(candidate: int, epoch: int, last_epoch: int, last_offset: int) -> VoteRequest:
    return VoteRequest(epoch, candidate, last_epoch, last_offset, pre_vote=True)


# ---- the prospective ----


def test_fetch_timeout_makes_a_voter_prospective_without_raising_or_persisting_its_epoch() -> None:
    raft = node(2, epoch=3, leader_id=1, voted_for=1, entries=log([1, 3]))
    with capture_logs() as logs:
        effects = raft.tick(CONFIG.fetch_timeout_ms)
    assert raft.role == Prospective(frozenset({2}), last_leader=1)
    assert (raft.epoch, raft.voted_for, raft.leader_id) == (3, 1, 1)
    assert persists(effects) == []
    requests = sends(effects)
    assert [s.destination for s in requests] == [1, 3]
    # Kafka's prospective asks at its current epoch (the candidate's epoch + 1 comes only with the real election).
    assert all(s.request == VoteRequest(3, 2, 3, 2, pre_vote=True) for s in requests)
    assert events(logs, "raft_prevote_started")[0]["reason"] == "fetch timeout"


def test_a_granted_majority_starts_the_real_election_in_the_next_epoch() -> None:
    raft = node(2, epoch=3, leader_id=1, entries=log([1, 3]))
    raft.tick(CONFIG.fetch_timeout_ms)
    with capture_logs() as logs:
        effects = raft.handle_response(3, VoteResponse(ErrorCode.NONE, -1, 3, True), 2100)
    assert raft.role == Candidate(frozenset({2})) and raft.epoch == 4
    assert persists(effects) == [PersistQuorumState(4, 2, None)]
    assert all(s.request == VoteRequest(4, 2, 3, 2) for s in sends(effects))
    assert [e["event"] for e in logs] == ["raft_prevote_won", "raft_election_started"]


def test_a_refused_majority_returns_to_the_leader_it_followed_in_the_same_epoch() -> None:
    raft = node(2, epoch=3, leader_id=1, entries=log([1, 3]))
    raft.tick(CONFIG.fetch_timeout_ms)
    assert raft.handle_response(1, VoteResponse(ErrorCode.NONE, 1, 3, False), 2100) == []
    assert isinstance(raft.role, Prospective)  # one refusal of two: the other voter could still grant
    with capture_logs() as logs:
        effects = raft.handle_response(3, VoteResponse(ErrorCode.NONE, 1, 3, False), 2100)
    assert effects == [] and raft.role == Follower(1) and raft.epoch == 3
    lost = events(logs, "raft_prevote_lost")[0]
    assert lost["rejected"] == [1, 3] and lost["leader"] == 1
    assert sends(raft.tick(2100))[0].request == FetchRequest(2, 3, 2, 3)


def test_a_prospective_that_times_out_follows_its_leader_again_and_tries_after_the_next_fetch_timeout() -> None:
    raft = node(2, epoch=3, leader_id=1)
    raft.tick(2000)
    assert isinstance(raft.role, Prospective)
    raft.tick(2000 + CONFIG.election_timeout_ms)
    assert raft.role == Follower(1) and raft.epoch == 3
    raft.tick(3000 + CONFIG.fetch_timeout_ms)
    assert isinstance(raft.role, Prospective) and raft.epoch == 3


def test_a_prospective_without_a_leader_waits_unattached_and_keeps_its_vote() -> None:
    raft = node(2, epoch=3, voted_for=3)
    raft.tick(CONFIG.election_timeout_ms)
    assert raft.role == Prospective(frozenset({2}))
    raft.handle_response(1, VoteResponse(ErrorCode.NONE, -1, 3, False), 1100)
    raft.handle_response(3, VoteResponse(ErrorCode.NONE, -1, 3, False), 1100)
    assert raft.role == Voted(3) and (raft.epoch, raft.voted_for) == (3, 3)


def test_a_pre_vote_answer_naming_a_leader_the_prospective_did_not_know_is_followed() -> None:
    raft = node(2, epoch=3)
    raft.tick(CONFIG.election_timeout_ms)
    effects = raft.handle_response(1, VoteResponse(ErrorCode.NONE, 1, 3, False), 1100)
    assert raft.role == Follower(1) and persists(effects) == [PersistQuorumState(3, None, 1)]


def test_a_lone_voter_goes_from_prospective_to_leader_at_once() -> None:
    raft = RaftNode(1, [1], CONFIG, LowestRandom(), 0)
    raft.tick(CONFIG.election_timeout_ms)
    assert isinstance(raft.role, Leader) and raft.epoch == 1


def test_with_pre_vote_off_the_fetch_timeout_starts_the_election_at_once() -> None:
    raft = node(2, config=RaftConfig(pre_vote_enable=False), epoch=3, leader_id=1)
    raft.tick(2000)
    assert isinstance(raft.role, Candidate) and raft.epoch == 4


# ---- the voters ----


def test_a_follower_that_fetched_from_its_leader_refuses_a_pre_vote_and_changes_nothing() -> None:
    raft = follower_that_fetched(2)
    with capture_logs() as logs:
        response, effects = raft.handle_request(3, pre_vote(3, 3, 3, 5), 200)
    assert response == VoteResponse(ErrorCode.NONE, 1, 3, False) and effects == []
    assert raft.role == Follower(1, fetched=True) and (raft.epoch, raft.voted_for) == (3, None)
    rejected = events(logs, "raft_prevote_rejected")[0]
    assert rejected["reason"] == "fetched from leader 1 in epoch 3" and rejected["prospective"] == 3


def test_a_follower_that_has_not_fetched_yet_grants_a_pre_vote_to_an_up_to_date_log_and_persists_nothing() -> None:
    raft = node(2, epoch=3, leader_id=1, entries=log([1, 2, 3]))
    with capture_logs() as logs:
        response, effects = raft.handle_request(3, pre_vote(3, 3, 3, 3), 200)
    assert response == VoteResponse(ErrorCode.NONE, 1, 3, True) and effects == []
    assert raft.role == Follower(1) and raft.voted_for is None
    assert events(logs, "raft_prevote_granted")


def test_a_pre_vote_for_a_log_behind_is_refused() -> None:
    raft = node(2, epoch=3, entries=log([1, 2, 3]))
    response, effects = raft.handle_request(3, pre_vote(3, 3, 2, 9), 200)
    assert not response.vote_granted and effects == []


def test_a_voter_that_voted_grants_pre_votes_to_others_and_keeps_its_vote() -> None:
    raft = node(2, epoch=3, voted_for=1)
    response, effects = raft.handle_request(3, pre_vote(3, 3, 0, 0), 200)
    assert response.vote_granted and effects == [] and raft.role == Voted(1)
    real, _ = raft.handle_request(3, VoteRequest(3, 3, 0, 0), 200)
    assert not real.vote_granted


def test_the_leader_refuses_pre_votes() -> None:
    raft = node(1)
    raft.tick(CONFIG.election_timeout_ms)
    raft.handle_response(2, VoteResponse(ErrorCode.NONE, -1, 0, True), 1000)
    raft.handle_response(2, VoteResponse(ErrorCode.NONE, -1, 1, True), 1000)
    assert isinstance(raft.role, Leader)
    response, effects = raft.handle_request(3, pre_vote(3, 1, 1, 1), 1000)
    assert response == VoteResponse(ErrorCode.NONE, 1, 1, False) and effects == []


def test_a_pre_vote_from_an_older_epoch_is_fenced() -> None:
    raft = follower_that_fetched(2)
    response, _ = raft.handle_request(3, pre_vote(3, 2, 2, 9), 200)
    assert response.error_code == ErrorCode.FENCED_LEADER_EPOCH


def test_a_real_vote_from_a_higher_epoch_is_honoured_even_by_a_follower_of_a_healthy_leader() -> None:
    """Kafka's rule: any Vote of a higher epoch is adopted, and a voter without a leader in it grants an up-to-date
    log; pre-vote protects the leader only because voters with pre-vote on never send such a vote unasked."""
    raft = follower_that_fetched(2)
    response, effects = raft.handle_request(3, VoteRequest(4, 3, 3, 3), 200)
    assert response == VoteResponse(ErrorCode.NONE, -1, 4, True)
    assert raft.role == Voted(3) and raft.epoch == 4
    assert persists(effects)[-1] == PersistQuorumState(4, 3, None)


def test_a_pre_vote_from_a_higher_epoch_moves_the_voter_to_that_epoch_as_in_kafka() -> None:
    raft = follower_that_fetched(2)
    response, _ = raft.handle_request(3, pre_vote(3, 5, 3, 3), 200)
    assert raft.epoch == 5 and raft.role == Unattached() and response.vote_granted


def test_pre_vote_crosses_the_wire() -> None:
    request = pre_vote(3, 4, 2, 7)
    message = wire.request_to_proto(request)
    assert wire.vote_request(message) == VoteRequest(4, 3, 2, 7, pre_vote=True)  # type: ignore[arg-type]


def test_a_follower_told_its_leader_resigned_grants_a_pre_vote() -> None:
    """EndQuorumEpoch (a graceful shutdown, a leader that removed itself): the fetches it made no longer stand for a
    healthy leader, so the successor's pre-vote wins at once rather than after the others' fetch timeouts."""
    raft = follower_that_fetched(2)
    raft.handle_request(1, EndQuorumEpochRequest(1, 3, (3, 2)), 150)
    response, effects = raft.handle_request(3, pre_vote(3, 3, 3, 3), 200)
    assert response == VoteResponse(ErrorCode.NONE, 1, 3, True) and effects == []
    assert (raft.epoch, raft.leader_id, raft.voted_for) == (3, 1, None)

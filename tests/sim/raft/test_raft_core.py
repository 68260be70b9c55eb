"""Unit tests of the pure KRaft core: votes, elections, replication, HWM, observers, snapshots, resignation."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.raft.core import (
    AppendToLog,
    Candidate,
    CommitAdvanced,
    DivergedBelowHighWatermark,
    Effect,
    Follower,
    InstallSnapshot,
    Leader,
    LeaderChanged,
    PersistQuorumState,
    Proposed,
    RaftConfig,
    RaftNode,
    Reply,
    Resigned,
    SaveSnapshot,
    Send,
    TruncateLog,
    Unattached,
    Voted,
)
from minikafka.kraft_controller.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    EpochEndOffset,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    LogEntry,
    Propose,
    RequestReceived,
    SnapshotId,
    Tick,
    VoteRequest,
    VoteResponse,
)
from minikafka.kraft_controller.raft.quorum import has_majority, majority, majority_offset

# The classic election paths; pre-vote, which comes before them, is tested on its own (test_raft_pre_vote.py).
CONFIG = RaftConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, retry_backoff_ms=50, pre_vote_enable=False)
VOTERS = (1, 2, 3)
OBSERVER = 100


class LowestRandom:
    """Always the lowest value: the election timeout is exactly `election_timeout_ms`."""

    def randint(self, a: int, b: int) -> int:
        return a


def node(node_id: int, now_ms: int = 0, **persisted: object) -> RaftNode:
    return RaftNode(node_id, VOTERS, CONFIG, LowestRandom(), now_ms, **persisted)  # type: ignore[arg-type]


def log(epochs: Sequence[int], start: int = 0) -> list[LogEntry]:
    return [LogEntry(start + i, epoch, f"e{start + i}".encode()) for i, epoch in enumerate(epochs)]


def sends(effects: list[Effect]) -> list[Send]:
    return [e for e in effects if isinstance(e, Send)]


def commits(effects: list[Effect]) -> list[CommitAdvanced]:
    return [e for e in effects if isinstance(e, CommitAdvanced)]


def elect(raft: RaftNode, now_ms: int = 1000) -> list[Effect]:
    """Time the node out into candidacy, then grant it every vote."""
    effects = raft.tick(now_ms)
    assert isinstance(raft.role, Candidate)
    for voter in sorted(set(VOTERS) - {raft.node_id}):
        effects += raft.handle_response(voter, VoteResponse(ErrorCode.NONE, -1, raft.epoch, True), now_ms)
    assert isinstance(raft.role, Leader)
    return effects


def fetch(raft: RaftNode, replica: int, offset: int, last_epoch: int, now_ms: int = 1000) -> FetchResponse:
    response, _ = raft.handle_request(replica, FetchRequest(replica, raft.epoch, offset, last_epoch), now_ms)
    assert isinstance(response, FetchResponse)
    return response


# ---- majority math ----


def test_majority_sizes() -> None:
    assert [majority(n) for n in range(1, 6)] == [1, 2, 2, 3, 3]


def test_majority_offset_is_the_offset_a_majority_reached() -> None:
    assert majority_offset([10, 7, 3], 3) == 7
    assert majority_offset([10, 7, 3, 3, 1], 5) == 3
    assert majority_offset([10], 3) == 0  # missing voters count as nothing fetched
    assert majority_offset([5, 9], 3) == 5
    assert majority_offset([4], 1) == 4


def test_has_majority_counts_only_voters() -> None:
    voters = frozenset(VOTERS)
    assert has_majority({1, 2}, voters)
    assert not has_majority({1, OBSERVER}, voters)
    assert not has_majority(set(), voters)


# ---- votes ----


def test_vote_granted_is_persisted_before_the_answer() -> None:
    raft = node(2, **{"epoch": 1, "entries": log([1, 1])})
    with capture_logs() as logs:
        response, effects = raft.handle_request(1, VoteRequest(2, 1, 1, 2), 10)
    assert response == VoteResponse(ErrorCode.NONE, -1, 2, True)
    assert PersistQuorumState(2, 1, None) in effects
    assert raft.role == Voted(1)
    assert [e["event"] for e in logs] == ["raft_vote_granted"]
    # Through `step` the reply comes after the persistence it depends on.
    raft2 = node(3, **{"epoch": 1})
    stepped = raft2.step(RequestReceived(1, VoteRequest(2, 1, 1, 2)), 10)
    assert isinstance(stepped[-1], Reply) and stepped[-1].destination == 1
    assert any(isinstance(e, PersistQuorumState) and e.voted_for == 1 for e in stepped[:-1])


@pytest.mark.parametrize(
    ("candidate_last_epoch", "candidate_end_offset"),
    [(1, 5), (2, 2)],  # an older last epoch (however long), or the same last epoch but shorter
)
def test_vote_rejected_when_candidate_log_is_behind(candidate_last_epoch: int, candidate_end_offset: int) -> None:
    raft = node(2, **{"epoch": 2, "entries": log([1, 2, 2])})
    with capture_logs() as logs:
        response, effects = raft.handle_request(1, VoteRequest(3, 1, candidate_last_epoch, candidate_end_offset), 10)
    assert isinstance(response, VoteResponse) and not response.vote_granted
    assert raft.voted_for is None and raft.epoch == 3
    assert effects == [PersistQuorumState(3, None, None)]  # the new epoch, but no vote
    [event] = [e for e in logs if e["event"] == "raft_vote_rejected"]
    assert event["reason"] == "candidate log is behind"
    assert (event["expected_min_last_epoch"], event["expected_min_last_offset"]) == (2, 3)
    assert (event["actual_last_epoch"], event["actual_last_offset"]) == (candidate_last_epoch, candidate_end_offset)


def test_one_vote_per_epoch() -> None:
    raft = node(2)
    granted, _ = raft.handle_request(1, VoteRequest(1, 1, 0, 0), 10)
    assert isinstance(granted, VoteResponse) and granted.vote_granted
    with capture_logs() as logs:
        rejected, effects = raft.handle_request(3, VoteRequest(1, 3, 0, 0), 11)
    assert isinstance(rejected, VoteResponse) and not rejected.vote_granted and effects == []
    assert logs[0]["event"] == "raft_vote_rejected" and logs[0]["reason"] == "already voted for 1"
    again, effects = raft.handle_request(1, VoteRequest(1, 1, 0, 0), 12)  # a retried request: same answer
    assert isinstance(again, VoteResponse) and again.vote_granted and effects == []


def test_persisted_vote_survives_a_restart() -> None:
    raft = node(2, **{"epoch": 4, "voted_for": 1})
    assert raft.role == Voted(1)
    response, _ = raft.handle_request(3, VoteRequest(4, 3, 0, 0), 10)
    assert isinstance(response, VoteResponse) and not response.vote_granted


def test_vote_from_an_older_epoch_is_fenced() -> None:
    raft = node(2, **{"epoch": 5})
    response, effects = raft.handle_request(1, VoteRequest(4, 1, 0, 0), 10)
    assert response == VoteResponse(ErrorCode.FENCED_LEADER_EPOCH, -1, 5, False)
    assert effects == []


def test_observer_never_votes_nor_campaigns() -> None:
    observer = RaftNode(OBSERVER, VOTERS, CONFIG, LowestRandom(), 0)
    response, _ = observer.handle_request(1, VoteRequest(1, 1, 0, 0), 10)
    assert isinstance(response, VoteResponse) and not response.vote_granted
    for now in range(0, 10_000, 500):
        for effect in observer.tick(now):
            assert not (isinstance(effect, Send) and isinstance(effect.request, VoteRequest))
            if isinstance(effect, Send):
                observer.handle_failure(effect.destination, effect.request, now)
    assert not isinstance(observer.role, Candidate | Leader)


# ---- elections ----


def test_election_timeout_starts_an_election_persisting_the_self_vote_first() -> None:
    raft = node(1)
    # Before the timeout an unattached voter only looks for a leader (Fetch), it does not campaign.
    assert all(isinstance(s.request, FetchRequest) for s in sends(raft.tick(999)))
    assert raft.role == Unattached() and raft.epoch == 0
    with capture_logs() as logs:
        effects = raft.tick(1000)
    assert raft.role == Candidate(frozenset({1})) and raft.epoch == 1
    assert effects[0] == PersistQuorumState(1, 1, None)
    assert [(s.destination, s.request) for s in effects[1:]] == [
        (2, VoteRequest(1, 1, 0, 0)),
        (3, VoteRequest(1, 1, 0, 0)),
    ]
    assert logs[0]["event"] == "raft_election_started" and logs[0]["candidate"] == 1


def test_majority_of_votes_makes_a_leader_that_writes_its_epoch_start() -> None:
    raft = node(1, **{"entries": log([0, 0])})
    raft.tick(1000)
    assert raft.handle_response(2, VoteResponse(ErrorCode.NONE, -1, 1, False), 1001) == []
    assert isinstance(raft.role, Candidate)
    with capture_logs() as logs:
        effects = raft.handle_response(3, VoteResponse(ErrorCode.NONE, -1, 1, True), 1002)
    assert raft.role == Leader(epoch_start_offset=2)
    [append] = [e for e in effects if isinstance(e, AppendToLog)]
    assert append.entries == (LogEntry(2, 1, b"", control=True),)
    assert LeaderChanged(1, 1, 2) in effects
    assert {s.destination for s in sends(effects) if isinstance(s.request, BeginQuorumEpochRequest)} == {2, 3}
    elected = [e for e in logs if e["event"] == "raft_leader_elected"]
    assert elected == [
        {
            "event": "raft_leader_elected",
            "epoch": 1,
            "leader": 1,
            "voters": [1, 2, 3],
            "epoch_start_offset": 2,
            "log_level": "info",
            "raft_node": 1,
        }
    ]


def test_fetch_timeout_makes_a_follower_a_candidate() -> None:
    raft = node(2, **{"epoch": 3, "leader_id": 1})
    assert raft.role == Follower(1)
    [first] = sends(raft.tick(0))
    assert isinstance(first.request, FetchRequest) and first.destination == 1
    raft.handle_failure(1, first.request, 10)  # the leader is unreachable from now on
    for now in range(60, 2000, 50):
        for effect in sends(raft.tick(now)):
            assert isinstance(effect.request, FetchRequest)
            raft.handle_failure(effect.destination, effect.request, now)
        assert raft.role == Follower(1)
    with capture_logs() as logs:
        effects = raft.tick(2000)
    assert isinstance(raft.role, Candidate) and raft.epoch == 4
    assert [e["event"] for e in logs] == ["raft_fetch_timeout", "raft_election_started"]
    assert effects[0] == PersistQuorumState(4, 2, None)


def test_successful_fetches_keep_the_follower_following() -> None:
    leader = node(1)
    elect(leader, 1000)
    follower = node(2, 1000, **{"epoch": 1, "leader_id": 1})
    now, parked = 1000, []
    while now < 10_000:
        # The fetch parked at the last step is answered now (its max wait passed); the follower fetches again at
        # once after every answer, and a fetch with nothing new is parked again.
        pending, parked = parked + sends(follower.tick(now)), []
        while pending:
            send = pending.pop()
            response, _ = leader.handle_request(2, send.request, now)
            pending += sends(follower.handle_response(1, response, now))
            if isinstance(response, FetchResponse) and not response.entries:
                parked, pending = pending, []
        now += 100
    assert follower.role == Follower(1, fetched=True) and follower.log_end_offset == 1


def test_a_follower_fetches_again_at_once_after_entries_and_after_an_empty_answer() -> None:
    leader = node(1)
    elect(leader, 1000)
    follower = node(2, 1000, **{"epoch": 1, "leader_id": 1})
    (request,) = sends(follower.tick(1000))
    response, _ = leader.handle_request(2, request.request, 1000)
    (again,) = sends(follower.handle_response(1, response, 1000))  # the epoch-start entry arrived
    assert again.request.fetch_offset == 1
    response, _ = leader.handle_request(2, again.request, 1001)
    assert isinstance(response, FetchResponse) and not response.entries and response.high_watermark == 1
    # Nothing new but the high watermark (the shell parks such a fetch until a change): fetch again at once.
    (third,) = sends(follower.handle_response(1, response, 1001))
    assert third.request.fetch_offset == 1 and follower.high_watermark == 1


def test_a_restarted_leader_does_not_lead_its_old_epoch_again() -> None:
    raft = node(1, **{"epoch": 2, "leader_id": 1, "voted_for": 1, "entries": log([2])})
    assert raft.role == Resigned()
    response = fetch(raft, 2, 1, 2)
    assert response.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert isinstance(raft.tick(1000)[0], PersistQuorumState) and raft.epoch == 3  # it campaigns in a new epoch


# ---- replication and the high watermark ----


def test_high_watermark_waits_for_an_entry_of_the_leaders_epoch() -> None:
    """Entries of older epochs commit only once a majority also has the new leader's epoch-start entry."""
    raft = node(1, **{"epoch": 1, "entries": log([1, 1, 1])})
    elect(raft, 1000)
    assert raft.epoch == 2 and raft.log_end_offset == 4  # the epoch-start entry is offset 3
    response, effects = raft.handle_request(2, FetchRequest(2, 2, 3, 1), 1001)  # follower 2 has 0..2
    assert commits(effects) == [] and raft.high_watermark == 0
    assert isinstance(response, FetchResponse) and [e.offset for e in response.entries] == [3]
    with capture_logs() as logs:
        _, effects = raft.handle_request(2, FetchRequest(2, 2, 4, 2), 1002)
    [commit] = commits(effects)
    assert commit.high_watermark == 4 and [e.offset for e in commit.entries] == [0, 1, 2, 3]
    assert [e["event"] for e in logs] == ["raft_high_watermark_advanced"]


def test_high_watermark_is_the_majority_of_voter_offsets() -> None:
    raft = node(1)
    elect(raft)
    result, _ = raft.propose([b"a", b"b", b"c", b"d"], 1001)
    assert result.base_offset == 1 and raft.log_end_offset == 5
    _, effects = raft.handle_request(3, FetchRequest(3, 1, 3, 1), 1002)
    assert raft.high_watermark == 3 and commits(effects)[0].high_watermark == 3
    _, effects = raft.handle_request(2, FetchRequest(2, 1, 2, 1), 1003)  # the slower voter: no change
    assert commits(effects) == [] and raft.high_watermark == 3
    _, effects = raft.handle_request(OBSERVER, FetchRequest(OBSERVER, 1, 0, 0), 1004)  # observers don't count
    assert commits(effects) == [] and raft.high_watermark == 3
    _, effects = raft.handle_request(2, FetchRequest(2, 1, 5, 1), 1005)
    assert raft.high_watermark == 5


def test_follower_appends_and_tracks_the_leaders_high_watermark() -> None:
    leader = node(1)
    elect(leader)
    leader.propose([b"a", b"b"], 1001)
    follower = node(2, **{"epoch": 1, "leader_id": 1})
    [request] = sends(follower.tick(1002))
    response, _ = leader.handle_request(2, request.request, 1002)
    effects = follower.handle_response(1, response, 1002)
    assert [e for e in effects if isinstance(e, AppendToLog)][0].entries == tuple(leader.entries)
    assert follower.high_watermark == 0  # the leader had not committed anything yet
    [request] = sends(effects)  # the next fetch leaves at once, reporting the new log end
    response, _ = leader.handle_request(2, request.request, 1003)
    assert leader.high_watermark == 3
    effects = follower.handle_response(1, response, 1003)
    assert follower.high_watermark == 3 and commits(effects)[0].high_watermark == 3


def test_diverging_epoch_truncates_the_follower() -> None:
    # The leader (epoch 3) has epoch 1 at 0-1 and epoch 3 from 2; the follower wrote epoch 2 at 2-5 that never
    # committed.
    leader = node(1, **{"epoch": 2, "entries": log([1, 1, 3, 3])})
    elect(leader)
    assert leader.epoch == 3 and leader.log_end_offset == 5
    follower = node(2, **{"epoch": 3, "leader_id": 1, "entries": log([1, 1, 2, 2, 2, 2])})
    [request] = sends(follower.tick(1001))
    assert request.request == FetchRequest(2, 3, 6, 2)
    response, _ = leader.handle_request(2, request.request, 1001)
    assert isinstance(response, FetchResponse) and response.diverging_epoch == EpochEndOffset(1, 2)
    assert response.entries == ()
    with capture_logs() as logs:
        effects = follower.handle_response(1, response, 1001)
    assert effects[0] == TruncateLog(2) and follower.log_end_offset == 2
    [event] = logs
    assert event["event"] == "raft_log_truncated"
    assert (event["old_end_offset"], event["new_end_offset"], event["diverging_epoch"]) == (6, 2, 1)
    [request] = sends(effects)  # after the truncation, the follower fetches again at once
    assert request.request == FetchRequest(2, 3, 2, 1)
    response, _ = leader.handle_request(2, request.request, 1002)
    follower.handle_response(1, response, 1002)
    assert follower.entries == leader.entries


def test_a_truncation_below_the_high_watermark_is_fatal_and_not_fetched_again() -> None:
    """As Kafka's follower throws there: committed entries would go. Before, it clamped the cut to its high
    watermark and fetched again at once, to be answered the same: a loop of a fetch every few milliseconds."""
    leader = node(1, **{"epoch": 2, "entries": log([1, 1, 3, 3])})
    elect(leader)
    follower = node(2, **{"epoch": 3, "leader_id": 1, "entries": log([1, 1, 2, 2, 2, 2])})
    follower.high_watermark = 4  # it had seen offsets 2-3 committed (the quorum has since lost them)
    [request] = sends(follower.tick(1001))
    response, _ = leader.handle_request(2, request.request, 1001)
    with capture_logs() as logs:
        effects = follower.handle_response(1, response, 1001)
    assert effects == [DivergedBelowHighWatermark(2, 4)]
    assert follower.log_end_offset == 6  # nothing truncated
    assert [(e["event"], e["cut"], e["high_watermark"]) for e in logs] == [
        ("raft_truncation_below_high_watermark", 2, 4)
    ]


def test_a_diverging_answer_to_an_earlier_fetch_is_not_applied_to_the_log_since_moved() -> None:
    """As Kafka's client matches an answer to its request: a late answer (the node had sent the same Fetch twice)
    asking for a truncation is about a log the node no longer has; applied, it would cut committed entries."""
    leader = node(1, **{"epoch": 2, "entries": log([1, 1, 3, 3])})
    elect(leader)
    follower = node(2, **{"epoch": 3, "leader_id": 1, "entries": log([1, 1, 2, 2, 2, 2])})
    [first] = sends(follower.tick(1001))
    late, _ = leader.handle_request(2, first.request, 1001)
    effects = follower.handle_response(1, late, 1001, first.request)
    assert effects[0] == TruncateLog(2)
    for now in (1002, 1003):  # fetch the leader's entries, then report them so the high watermark covers them
        [request] = sends(effects)
        response, _ = leader.handle_request(2, request.request, now)
        effects = follower.handle_response(1, response, now, request.request)
    assert follower.log_end_offset == follower.high_watermark == 5
    assert follower.handle_response(1, late, 1004, first.request) == []
    assert follower.entries == leader.entries


def test_fetch_from_an_older_epoch_learns_the_leader() -> None:
    leader = node(1, **{"epoch": 4})
    elect(leader)
    response = FetchResponse(ErrorCode.NONE, 0, 0, 0, 0)  # placeholder for the type checker
    response, _ = leader.handle_request(2, FetchRequest(2, 3, 0, 0), 1001)  # type: ignore[assignment]
    assert response.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert (response.leader_id, response.leader_epoch) == (1, 5)
    stale = node(2, **{"epoch": 3})
    stale.handle_response(1, response, 1001)
    assert stale.role == Follower(1) and stale.epoch == 5


# ---- redirects ----


def test_non_leader_answers_with_the_known_leader() -> None:
    follower = node(2, **{"epoch": 7, "leader_id": 3})
    with capture_logs() as logs:
        response = fetch(follower, OBSERVER, 0, 0)
    assert response.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (response.leader_id, response.leader_epoch) == (3, 7)
    assert logs[0]["event"] == "raft_request_rejected" and logs[0]["error"] == "NOT_LEADER_OR_FOLLOWER"
    result, effects = follower.propose([b"x"], 10)
    assert result.base_offset is None and result.leader_id == 3 and result.epoch == 7
    assert result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and effects == []
    [proposed] = follower.step(Propose((b"x",)), 10)
    assert isinstance(proposed, Proposed) and proposed.result == result


# ---- observers ----


def test_observer_only_receives_committed_entries() -> None:
    leader = node(1)
    elect(leader)
    leader.propose([b"a", b"b", b"c"], 1001)
    assert fetch(leader, OBSERVER, 0, 0).entries == ()  # nothing committed yet
    leader.handle_request(2, FetchRequest(2, 1, 2, 1), 1002)
    assert leader.high_watermark == 2
    response = fetch(leader, OBSERVER, 0, 0)
    assert [e.offset for e in response.entries] == [0, 1] and response.high_watermark == 2
    assert [e.offset for e in fetch(leader, 3, 0, 0).entries] == [0, 1, 2, 3]  # voters get everything
    observer = RaftNode(OBSERVER, VOTERS, CONFIG, LowestRandom(), 1000, epoch=1, leader_id=1)
    observer.handle_response(1, response, 1003)
    assert observer.log_end_offset == 2 and observer.high_watermark == 2


def test_observer_looks_for_the_leader_among_the_voters_after_a_fetch_timeout() -> None:
    observer = RaftNode(OBSERVER, VOTERS, CONFIG, LowestRandom(), 0, epoch=1, leader_id=1)
    [first] = sends(observer.tick(0))
    observer.handle_failure(first.destination, first.request, 0)
    effects = observer.tick(2000)
    # It asks a voter at once, the old leader last.
    assert effects[0] == LeaderChanged(1, None, -1) and observer.role == Unattached()
    [asked] = sends(effects)
    assert asked.destination == 2
    observer.handle_failure(asked.destination, asked.request, 2000)
    targets = []
    now = 2000
    for _ in range(4):
        now += 100
        [send] = sends(observer.tick(now))
        targets.append(send.destination)
        observer.handle_failure(send.destination, send.request, now)
    assert targets == [3, 1, 2, 3]
    # A voter that knows the leader redirects the observer, which then follows it.
    observer.handle_response(2, FetchResponse(ErrorCode.NOT_LEADER_OR_FOLLOWER, 3, 2, 0, 0), now)
    assert observer.role == Follower(3) and observer.epoch == 2


# ---- snapshots ----


def committed_leader(entries: int) -> RaftNode:
    leader = node(1)
    elect(leader)
    leader.propose([f"v{i}".encode() for i in range(entries)], 1001)
    leader.handle_request(2, FetchRequest(2, 1, leader.log_end_offset, 1), 1002)
    assert leader.high_watermark == leader.log_end_offset
    return leader


def test_snapshot_drops_the_committed_prefix_and_only_the_committed_one() -> None:
    leader = committed_leader(5)
    leader.propose([b"uncommitted"], 1003)
    assert leader.take_snapshot(leader.high_watermark + 1, b"x") == []  # not committed: refused
    effects = leader.take_snapshot(4, b"image-0-3")
    assert effects == [SaveSnapshot(SnapshotId(4, 1), b"image-0-3")]
    assert leader.log_start_offset == 4 and leader.entries[0].offset == 4


def test_lagging_follower_catches_up_through_fetch_snapshot() -> None:
    leader = committed_leader(5)  # offsets 0..5, all committed
    leader.take_snapshot(4, b"image")
    follower = node(3, **{"epoch": 1, "leader_id": 1})
    [request] = sends(follower.tick(1003))
    response, _ = leader.handle_request(3, request.request, 1003)
    assert isinstance(response, FetchResponse) and response.snapshot_id == SnapshotId(4, 1)
    [send] = sends(follower.handle_response(1, response, 1003))
    assert send.request == FetchSnapshotRequest(3, 1, SnapshotId(4, 1))
    snapshot_response, _ = leader.handle_request(3, send.request, 1004)
    assert snapshot_response == FetchSnapshotResponse(ErrorCode.NONE, 1, 1, SnapshotId(4, 1), b"image")
    effects = follower.handle_response(1, snapshot_response, 1004)
    assert effects == [InstallSnapshot(SnapshotId(4, 1), b"image")]
    assert follower.log_start_offset == 4 and follower.high_watermark == 4
    # A duplicated answer is ignored; fetching resumes after the snapshot.
    assert follower.handle_response(1, snapshot_response, 1005) == []
    [request] = sends(follower.tick(1005))
    assert request.request == FetchRequest(3, 1, 4, 1)
    response, _ = leader.handle_request(3, request.request, 1005)
    follower.handle_response(1, response, 1005)
    assert follower.entries == leader.entries


def test_fetch_snapshot_of_an_unknown_snapshot_is_refused() -> None:
    leader = committed_leader(2)
    response, _ = leader.handle_request(2, FetchSnapshotRequest(2, 1, SnapshotId(2, 1)), 1003)
    assert isinstance(response, FetchSnapshotResponse) and response.error_code == ErrorCode.SNAPSHOT_NOT_FOUND


# ---- resignation ----


def test_resignation_sends_end_quorum_epoch_most_caught_up_first() -> None:
    leader = committed_leader(3)  # voter 2 is caught up, voter 3 never fetched
    with capture_logs() as logs:
        effects = leader.resign(1003)
    assert leader.role == Resigned()
    assert effects[0] == LeaderChanged(1, None, -1)
    assert [(s.destination, s.request) for s in sends(effects)] == [
        (2, EndQuorumEpochRequest(1, 1, (2, 3))),
        (3, EndQuorumEpochRequest(1, 1, (2, 3))),
    ]
    assert logs[0]["event"] == "raft_resigned" and logs[0]["reason"] == "shutdown"
    assert leader.propose([b"late"], 1004)[0].base_offset is None


def test_end_quorum_epoch_starts_the_preferred_successor_first() -> None:
    request = EndQuorumEpochRequest(1, 1, (2, 3))
    preferred = node(2, **{"epoch": 1, "leader_id": 1})
    other = node(3, **{"epoch": 1, "leader_id": 1})
    preferred.handle_request(1, request, 500)
    other.handle_request(1, request, 500)
    # Both stay in epoch 1 following the old leader: a stale candidate of epoch 1 cannot get a vote.
    response, _ = other.handle_request(2, VoteRequest(1, 2, 1, 10), 500)
    assert isinstance(response, VoteResponse) and not response.vote_granted
    assert isinstance(preferred.tick(500)[0], PersistQuorumState) and isinstance(preferred.role, Candidate)
    assert preferred.epoch == 2
    assert not any(isinstance(s.request, VoteRequest) for s in sends(other.tick(500)))
    assert other.role == Follower(1)
    # The preferred successor's vote request reaches the other voter, which grants it.
    response, _ = other.handle_request(2, VoteRequest(2, 2, 0, 0), 501)
    assert isinstance(response, VoteResponse) and response.vote_granted


def test_leader_without_a_quorum_steps_down() -> None:
    leader = node(1)
    elect(leader, 1000)
    assert leader.tick(2999) == []  # grace after the election
    leader.handle_request(2, FetchRequest(2, 1, 1, 1), 2500)
    assert leader.tick(4500) == [] and isinstance(leader.role, Leader)
    assert leader.tick(4501) == [LeaderChanged(1, None, -1)]
    assert leader.role == Resigned()


def test_step_dispatches_ticks() -> None:
    raft = node(1)
    assert raft.step(Tick(), 1000)[0] == PersistQuorumState(1, 1, None)


def test_a_fetch_never_answered_nor_failed_is_abandoned_after_the_request_timeout() -> None:
    """A shell that never reports the fate of a fetch (a hung connection) does not stop the node fetching."""
    observer = RaftNode(OBSERVER, VOTERS, CONFIG, LowestRandom(), 0)
    [first] = sends(observer.tick(0))
    timeout = CONFIG.fetch_max_wait_ms + CONFIG.request_timeout_ms
    assert sends(observer.tick(timeout - 1)) == []  # still waiting for that answer
    [second] = sends(observer.tick(timeout))
    assert second.destination != first.destination  # it asks the next voter

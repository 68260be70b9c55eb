"""KIP-853 in the KRaft core: the voter set in VotersRecords, AddRaftVoter and RemoveRaftVoter with Kafka's rules."""

from __future__ import annotations

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.raft.core import (
    AppendToLog,
    Follower,
    Leader,
    RaftConfig,
    RaftNode,
    Resigned,
    Send,
    TruncateLog,
    VoterChangeProposed,
)
from minikafka.kraft_controller.raft.messages import (
    AddVoter,
    EndQuorumEpochRequest,
    EpochEndOffset,
    FetchRequest,
    FetchResponse,
    LogEntry,
    VoteResponse,
)
from minikafka.kraft_controller.raft.voter_set import voters_of, voters_record

CLUSTER = "kraft-cluster-1"
VOTERS = {1: "d1", 2: "d2", 3: "d3"}
CONFIG = RaftConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, pre_vote_enable=False)
T = CONFIG.election_timeout_ms


class LowestRandom:
    def randint(self, a: int, b: int) -> int:
        return a


def leader(voters: dict[int, str] | tuple[int, ...] = VOTERS) -> RaftNode:
    """Node 1, elected in epoch 1 with node 2's vote, with its epoch committed by node 2's fetch."""
    raft = RaftNode(1, voters, CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="d1")
    raft.tick(T)
    raft.handle_response(2, VoteResponse(ErrorCode.NONE, -1, 1, True), T)
    assert isinstance(raft.role, Leader)
    commit(raft, T + 1)
    return raft


def commit(raft: RaftNode, now: int) -> None:
    raft.handle_request(2, FetchRequest(2, raft.epoch, raft.log_end_offset, raft.epoch, CLUSTER, "d2"), now)


def caught_up_observer(raft: RaftNode, node_id: int, directory: str, now: int) -> None:
    raft.handle_request(node_id, FetchRequest(node_id, 1, raft.log_end_offset, 1, CLUSTER, directory), now)


def test_a_new_leader_writes_the_formatted_voter_set_into_the_log() -> None:
    raft = leader()
    assert [voters_of(e) for e in raft.entries] == [None, VOTERS]
    assert raft.voters_offset == 1 and raft.high_watermark == 2
    # A static quorum (kraft.version 0) writes none.
    assert [voters_of(e) for e in leader((1, 2, 3)).entries] == [None]


def test_add_voter_applies_on_append_and_one_change_at_a_time() -> None:
    raft = leader()
    caught_up_observer(raft, 4, "d4", 2000)
    result, effects = raft.add_voter(4, "d4", 2001)
    assert result.error_code == ErrorCode.NONE and result.offset == 2
    assert raft.voter_directories == {**VOTERS, 4: "d4"}  # applies once appended, before the commit
    assert any(isinstance(e, AppendToLog) for e in effects)
    refused, _ = raft.remove_voter(3, "d3", 2002)
    assert refused.error_code == ErrorCode.REQUEST_TIMED_OUT  # the first is not committed yet
    commit(raft, 2003)
    raft.handle_request(4, FetchRequest(4, 1, raft.log_end_offset, 1, CLUSTER, "d4"), 2004)
    assert raft.high_watermark == 3  # a majority of the four: 1, 2 and 4
    result, _ = raft.remove_voter(3, "d3", 2005)
    assert result.error_code == ErrorCode.NONE and raft.voters == {1, 2, 4}


def test_voter_changes_are_refused_with_kafkas_errors() -> None:
    raft = leader()
    assert raft.add_voter(2, "d2-new", 2000)[0].error_code == ErrorCode.DUPLICATE_VOTER
    assert raft.add_voter(4, "d4", 2000)[0].error_code == ErrorCode.REQUEST_TIMED_OUT  # never fetched
    assert raft.remove_voter(2, "d2-old", 2000)[0].error_code == ErrorCode.VOTER_NOT_FOUND
    assert raft.remove_voter(7, "d7", 2000)[0].error_code == ErrorCode.VOTER_NOT_FOUND
    assert int(ErrorCode.DUPLICATE_VOTER) == 126 and int(ErrorCode.VOTER_NOT_FOUND) == 127
    static = leader((1, 2, 3))
    assert static.remove_voter(2, "", 2000)[0].error_code == ErrorCode.UNSUPPORTED_VERSION
    follower = RaftNode(2, VOTERS, CONFIG, LowestRandom(), 0, directory_id="d2", epoch=1, leader_id=1)
    assert follower.add_voter(4, "d4", 0)[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_the_last_voter_is_never_removed() -> None:
    raft = RaftNode(1, {1: "d1"}, CONFIG, LowestRandom(), 0, directory_id="d1")
    raft.tick(T)
    assert raft.is_leader
    result, _ = raft.remove_voter(1, "d1", T + 1)
    assert result.error_code == ErrorCode.INVALID_REQUEST


def test_a_leader_that_removed_itself_steps_down_once_the_change_commits() -> None:
    raft = leader()
    result, _ = raft.remove_voter(1, "d1", 2000)
    assert result.error_code == ErrorCode.NONE and raft.is_leader and not raft.is_voter
    raft.handle_request(3, FetchRequest(3, 1, raft.log_end_offset, 1, CLUSTER, "d3"), 2001)
    assert raft.high_watermark == 2  # node 2 and 3 are the majority now; only 3 has it
    _, effects = raft.handle_request(2, FetchRequest(2, 1, raft.log_end_offset, 1, CLUSTER, "d2"), 2002)
    assert raft.high_watermark == 3 and isinstance(raft.role, Resigned)
    ends = [e for e in effects if isinstance(e, Send) and isinstance(e.request, EndQuorumEpochRequest)]
    assert sorted(e.destination for e in ends) == [2, 3]


def test_a_follower_takes_the_set_on_append_and_returns_to_the_previous_one_on_truncation() -> None:
    raft = RaftNode(2, VOTERS, CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="d2", epoch=1, leader_id=1)
    grown = {**VOTERS, 4: "d4"}
    entries = (
        LogEntry(0, 1, b"", control=True),
        LogEntry(1, 1, voters_record(VOTERS), control=True),
        LogEntry(2, 1, voters_record(grown), control=True),
    )
    raft.handle_response(1, FetchResponse(ErrorCode.NONE, 1, 1, 2, 0, entries=entries), 10)
    assert raft.voter_directories == grown and raft.voters_offset == 2
    assert raft.role == Follower(1, fetched=True)
    diverging = FetchResponse(ErrorCode.NONE, 1, 1, 2, 0, diverging_epoch=EpochEndOffset(1, 2))
    effects = raft.handle_response(1, diverging, 20)
    assert TruncateLog(2) in effects
    assert raft.voter_directories == VOTERS and raft.voters_offset == 1


def test_the_end_quorum_epoch_of_a_leader_that_removed_itself_is_heard() -> None:
    """It is no voter any more, but it is the leader of this epoch: its followers time out at once, not after the
    fetch timeout."""
    raft = RaftNode(2, VOTERS, CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="d2", epoch=1, leader_id=1)
    entries = (
        LogEntry(0, 1, b"", control=True),
        LogEntry(1, 1, voters_record({2: "d2", 3: "d3"}), control=True),
    )
    raft.handle_response(1, FetchResponse(ErrorCode.NONE, 1, 1, 2, 0, entries=entries), 10)
    assert 1 not in raft.voters
    response, _ = raft.handle_request(1, EndQuorumEpochRequest(1, 1, (2, 3), CLUSTER), 20)
    assert response.error_code == ErrorCode.NONE
    assert raft.timers.fetch_deadline_ms == 20  # first of the preferred successors: it times out now
    stranger, _ = raft.handle_request(7, EndQuorumEpochRequest(7, 1, (2, 3), CLUSTER), 30)
    assert stranger.error_code == ErrorCode.INCONSISTENT_VOTER_SET


def test_add_voter_without_ack_when_committed_is_answered_once_appended() -> None:
    """AddRaftVoter v1's ack_when_committed=false: the answer does not wait for the commit (which may need the
    new voter itself); the default still does."""
    raft = leader()
    caught_up_observer(raft, 4, "d4", 2000)
    effects = raft.step(AddVoter(4, "d4", "127.0.0.1:9004", ack_when_committed=False), 2001)
    proposed = [e for e in effects if isinstance(e, VoterChangeProposed)]
    assert proposed and proposed[0].result.error_code == ErrorCode.NONE
    assert proposed[0].result.offset >= raft.high_watermark  # appended, not committed
    assert not proposed[0].result.awaits_commit
    commit(raft, 2002)
    raft.handle_request(4, FetchRequest(4, 1, raft.log_end_offset, 1, CLUSTER, "d4"), 2003)
    caught_up_observer(raft, 5, "d5", 2005)
    result, _ = raft.add_voter(5, "d5", 2006)
    assert result.error_code == ErrorCode.NONE and result.awaits_commit

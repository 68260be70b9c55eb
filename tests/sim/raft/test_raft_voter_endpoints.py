"""KIP-853's endpoints in the KRaft core: VotersRecords name each voter's endpoint, a node without voters finds the
leader through its bootstrap servers, and UpdateRaftVoter writes a moved voter's new endpoint."""

from __future__ import annotations

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.raft.core import Follower, Leader, RaftConfig, RaftNode, Send
from minikafka.kraft_controller.raft.messages import (
    EpochEndOffset,
    FetchRequest,
    FetchResponse,
    UpdateVoterRequest,
    UpdateVoterResponse,
    VoteResponse,
)
from minikafka.kraft_controller.raft.voter_set import endpoints_of, voters_of

CLUSTER = "kraft-cluster-1"
VOTERS = {1: "d1", 2: "d2", 3: "d3"}
BOOK = {1: "h1:9093", 2: "h2:9093", 3: "h3:9093"}
CONFIG = RaftConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, pre_vote_enable=False)
T = CONFIG.election_timeout_ms


class LowestRandom:
    def randint(self, a: int, b: int) -> int:
        return a


def leader() -> RaftNode:
    raft = RaftNode(
        1, VOTERS, CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="d1", voter_endpoints=BOOK,
        own_endpoint="h1:9093",
    )  # fmt: skip
    raft.tick(T)
    raft.handle_response(2, VoteResponse(ErrorCode.NONE, -1, 1, True), T)
    assert isinstance(raft.role, Leader)
    raft.handle_request(2, FetchRequest(2, 1, raft.log_end_offset, 1, CLUSTER, "d2"), T + 1)
    return raft


def update(raft: RaftNode, voter: int, directory: str, endpoint: str, epoch: int = 1) -> UpdateVoterResponse:
    response, _effects = raft.handle_request(voter, UpdateVoterRequest(voter, directory, endpoint, epoch, CLUSTER), T)
    assert isinstance(response, UpdateVoterResponse)
    return response


def test_the_first_voters_record_names_every_voters_endpoint_and_the_leader_needs_no_update() -> None:
    raft = leader()
    [record] = [e for e in raft.entries if voters_of(e) is not None]
    assert endpoints_of(record) == BOOK
    raft.tick(T + 2)
    assert [e for e in raft.entries if voters_of(e) is not None] == [record]


def test_update_raft_voter_writes_the_new_endpoint_once_and_checks_kafkas_rules() -> None:
    raft = leader()
    assert update(raft, 2, "other", "h2:9999").error_code == ErrorCode.VOTER_NOT_FOUND
    assert update(raft, 2, "d2", "no-port").error_code == ErrorCode.INVALID_REQUEST
    assert update(raft, 2, "d2", "h2:9999", epoch=0).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert update(raft, 2, "d2", "h2:9999").error_code == ErrorCode.NONE
    assert endpoints_of(raft.entries[-1])[2] == "h2:9999" and raft.endpoint(2) == "h2:9999"
    # Another change before that one commits: retry later.
    assert update(raft, 3, "d3", "h3:9999").error_code == ErrorCode.REQUEST_TIMED_OUT
    raft.handle_request(2, FetchRequest(2, 1, raft.log_end_offset, 1, CLUSTER, "d2"), T + 2)
    assert update(raft, 3, "d3", "h3:9999").error_code == ErrorCode.NONE
    follower = RaftNode(2, VOTERS, CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="d2")
    assert update(follower, 2, "d2", "h2:1").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_moved_voter_sends_update_raft_voter_to_its_leader_after_a_fetch() -> None:
    raft = leader()
    entries = tuple(raft.entries)
    moved = RaftNode(
        2, VOTERS, CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="d2", voter_endpoints=BOOK,
        own_endpoint="h2:7777", epoch=1, leader_id=1,
    )  # fmt: skip
    answer = FetchResponse(ErrorCode.NONE, 1, 1, 2, 0, entries=entries, leader_endpoint="h1:9093")
    effects = moved.handle_response(1, answer, 10)
    [sent] = [e for e in effects if isinstance(e, Send) and isinstance(e.request, UpdateVoterRequest)]
    assert sent.destination == 1 and sent.request == UpdateVoterRequest(2, "d2", "h2:7777", 1, CLUSTER)
    # Not again before the request timeout.
    again = moved.handle_response(1, FetchResponse(ErrorCode.NONE, 1, 1, 2, 2), 20)
    assert not [e for e in again if isinstance(e, Send) and isinstance(e.request, UpdateVoterRequest)]


def test_a_node_with_bootstrap_servers_only_finds_the_leader_and_its_endpoint() -> None:
    node = RaftNode(
        104, {}, CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="d104", observer_only=True,
        bootstrap_endpoints=["h2:9093", "h3:9093"],
    )  # fmt: skip
    [first] = [e for e in node.tick(0) if isinstance(e, Send)]
    assert first.destination == -2 and node.endpoint(-2) == "h2:9093"
    # The bootstrap server is a follower: it names the leader and where it is.
    refused = FetchResponse(ErrorCode.NOT_LEADER_OR_FOLLOWER, 1, 1, 0, 0, leader_endpoint="h1:9093")
    node.handle_response(-2, refused, 5)
    assert node.role == Follower(1) and node.endpoint(1) == "h1:9093"
    [fetch] = [e for e in node.tick(100) if isinstance(e, Send)]
    assert fetch.destination == 1 and isinstance(fetch.request, FetchRequest)


def test_the_leaders_answers_name_its_endpoint() -> None:
    raft = leader()
    response, _ = raft.handle_request(9, FetchRequest(9, 1, 0, 0, CLUSTER, "d9"), T + 3)
    assert isinstance(response, FetchResponse) and response.leader_endpoint == "h1:9093"


def static_leader() -> RaftNode:
    raft = RaftNode(
        1, (1, 2, 3), CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="d1", voter_endpoints=BOOK,
        own_endpoint="h1:9093",
    )  # fmt: skip
    raft.tick(T)
    raft.handle_response(2, VoteResponse(ErrorCode.NONE, -1, 1, True), T)
    raft.handle_request(2, FetchRequest(2, 1, raft.log_end_offset, 1, CLUSTER, "d2"), T + 1)
    return raft


def test_upgrading_kraft_version_names_the_voters_by_the_directories_they_fetch_with() -> None:
    raft = static_leader()
    assert raft.kraft_version == 0
    # Voter 3 has not fetched: its directory is unknown.
    result, _ = raft.upgrade_kraft_version(T + 2)
    assert result.error_code == ErrorCode.INVALID_UPDATE_VERSION and "[3]" in result.message
    raft.handle_request(3, FetchRequest(3, 1, raft.log_end_offset, 1, CLUSTER, "d3"), T + 3)
    result, effects = raft.upgrade_kraft_version(T + 4)
    assert result.error_code == ErrorCode.NONE and raft.kraft_version == 1
    assert raft.voter_directories == VOTERS and endpoints_of(raft.entries[-1]) == BOOK
    assert raft.entries[-2].data.startswith(b"KRaftVersionRecord ")
    again, _ = raft.upgrade_kraft_version(T + 5)
    assert again.error_code == ErrorCode.NONE and again.message == "kraft.version is 1 already"
    # A follower of the static quorum becomes dynamic as it fetches the upgrade.
    follower = RaftNode(2, (1, 2, 3), CONFIG, LowestRandom(), 0, cluster_id=CLUSTER, directory_id="d2", epoch=1,
                        leader_id=1)  # fmt: skip
    follower.handle_response(1, FetchResponse(ErrorCode.NONE, 1, 1, 0, 0, entries=tuple(raft.entries)), T + 6)
    assert follower.kraft_version == 1 and follower.voter_directories == VOTERS and follower.is_voter
    # A truncation below the upgrade makes it static again.
    follower._truncate_to_diverging(EpochEndOffset(1, 1))
    assert follower.kraft_version == 0 and follower.voter_directories == {1: "", 2: "", 3: ""}

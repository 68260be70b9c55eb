"""The KRaft node (KIP-595) as a pure state machine: events in (with the time), effects out.

Pull replication: followers and observers Fetch from the leader with their log end offset and the epoch of their
last entry; the leader answers a diverging epoch when their logs disagree, and moves the high watermark to the
largest offset a majority of voters has fetched, once an entry of its own epoch is among them. Elections follow
Raft: a voter that hears from no leader for its timeout becomes a candidate in the next epoch; a vote goes to a
candidate whose log is at least as up to date, once per epoch, and is persisted before it is answered.

Pre-vote (KIP-996, Kafka 4.0): before that, the voter becomes "prospective" and asks the others, at its current
epoch and persisting nothing, whether they would vote for it. A voter that has fetched from its leader since it
began following it refuses, so a voter cut off and healed cannot force an election on a healthy leader; only a
majority of granted pre-votes starts the real election.

The shell executes the effects of one call in order: persistence (quorum state, log appends, truncations,
snapshots) before the Sends that follow them, so nothing is promised before it is durable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import structlog

from minikafka.common.errors import ErrorCode
from minikafka.common.evolve import evolve
from minikafka.kraft_controller.raft.messages import (
    NO_LEADER,
    AddVoter,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    EpochEndOffset,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    LogEntry,
    Propose,
    RaftEvent,
    RaftRequest,
    RaftResponse,
    RemoveVoter,
    RequestFailed,
    RequestReceived,
    Resign,
    ResponseReceived,
    SnapshotId,
    SnapshotTaken,
    Tick,
    UpdateVoterRequest,
    UpdateVoterResponse,
    UpgradeKRaftVersion,
    VoteRequest,
    VoteResponse,
)
from minikafka.kraft_controller.raft.quorum import has_majority, majority_offset
from minikafka.kraft_controller.raft.request_validation import LocalQuorum, Rejection, validate_request
from minikafka.kraft_controller.raft.voter_changes import (
    LeaderView,
    VoterChangeResult,
    check_add,
    check_remove,
    check_update,
)
from minikafka.kraft_controller.raft.voter_set import (
    KRAFT_VERSION_RECORD,
    VoterSet,
    describe,
    endpoints_of,
    voters_of,
    voters_record,
)

MAX_ENTRIES_PER_FETCH = 2000
HIGH_WATERMARK_LOG_INTERVAL = 1000  # log the HWM once per leader epoch, then once every this many offsets


class RandomSource(Protocol):
    def randint(self, a: int, b: int) -> int: ...


@dataclass(frozen=True)
class RaftConfig:
    election_timeout_ms: int = 1000  # controller.quorum.election.timeout.ms
    fetch_timeout_ms: int = 2000  # controller.quorum.fetch.timeout.ms
    election_backoff_max_ms: int = 1000  # controller.quorum.election.backoff.max.ms
    retry_backoff_ms: int = 50
    request_timeout_ms: int = 2000  # controller.quorum.request.timeout.ms
    fetch_max_wait_ms: int = 500  # KafkaRaftClient fixes it at 500 (no config); the shell long-polls a Fetch
    pre_vote_enable: bool = True  # minikafka.raft.pre.vote.enable (Kafka 4.0+ always pre-votes)


# ---- roles (a sum type) ----


@dataclass(frozen=True)
class Unattached:
    """No leader known in this epoch and no vote cast."""


@dataclass(frozen=True)
class Voted:
    voted_for: int


@dataclass(frozen=True)
class Candidate:
    votes: frozenset[int]


@dataclass(frozen=True)
class Follower:
    leader_id: int
    fetched: bool = False  # a Fetch from the leader succeeded since this node began following it: no pre-votes


@dataclass(frozen=True)
class Prospective:
    """A voter asking for pre-votes in its current epoch; it keeps that epoch's vote and leader until it wins."""

    granted: frozenset[int]
    rejected: frozenset[int] = frozenset()
    last_leader: int | None = None  # the leader it followed: it follows it again if it loses


@dataclass(frozen=True)
class Leader:
    epoch_start_offset: int


@dataclass(frozen=True)
class Resigned:
    """A leader that stepped down (shutdown, lost quorum, restart): never leads this epoch again."""


Role = Unattached | Voted | Prospective | Candidate | Follower | Leader | Resigned


# ---- effects ----


@dataclass(frozen=True)
class PersistQuorumState:
    epoch: int
    voted_for: int | None
    leader_id: int | None


@dataclass(frozen=True)
class AppendToLog:
    entries: tuple[LogEntry, ...]


@dataclass(frozen=True)
class TruncateLog:
    end_offset: int


@dataclass(frozen=True)
class DivergedBelowHighWatermark:
    """The leader asks this replica to truncate below its high watermark, past entries it knows committed: the
    quorum lost committed metadata. Kafka's follower throws there (KafkaRaftClient), which halts its process."""

    end_offset: int
    high_watermark: int


@dataclass(frozen=True)
class InstallSnapshot:
    snapshot_id: SnapshotId
    data: bytes
    voters: dict[int, str] | None = None  # the voter set at the snapshot's end (KIP-853), kept beside it
    endpoints: dict[int, str] | None = None  # and its voters' endpoints


@dataclass(frozen=True)
class SaveSnapshot:
    snapshot_id: SnapshotId
    data: bytes
    voters: dict[int, str] | None = None
    endpoints: dict[int, str] | None = None


@dataclass(frozen=True)
class Send:
    destination: int
    request: RaftRequest


@dataclass(frozen=True)
class CommitAdvanced:
    high_watermark: int
    entries: tuple[LogEntry, ...]  # newly committed, in offset order


@dataclass(frozen=True)
class LeaderChanged:
    epoch: int
    leader_id: int | None
    epoch_start_offset: int  # for a new leader: the offset of its first entry of the epoch


@dataclass(frozen=True)
class ProposeResult:
    base_offset: int | None  # None: not the leader
    leader_id: int | None
    epoch: int
    error_code: ErrorCode = ErrorCode.NONE  # NOT_LEADER_OR_FOLLOWER when refused


@dataclass(frozen=True)
class Reply:
    """The answer to a request received through `step`; sent after the persistence effects before it."""

    destination: int
    response: RaftResponse


@dataclass(frozen=True)
class VoterChangeProposed:
    """The outcome of an `AddVoter` or `RemoveVoter` event: refused, or appended at `result.offset`."""

    result: VoterChangeResult


@dataclass(frozen=True)
class Proposed:
    """The outcome of a `Propose` event passed to `step`."""

    result: ProposeResult


Effect = (
    PersistQuorumState
    | AppendToLog
    | TruncateLog
    | DivergedBelowHighWatermark
    | InstallSnapshot
    | SaveSnapshot
    | Send
    | CommitAdvanced
    | LeaderChanged
    | Reply
    | Proposed
    | VoterChangeProposed
)


class ReplicaKey(NamedTuple):
    """A replica as KIP-853 names it: a node id and the id of its metadata log directory ("": unknown, a static
    voter set of ids only). A controller whose disk was wiped keeps its id but not its directory."""

    id: int
    directory_id: str


@dataclass(frozen=True)
class ReplicaProgress:
    """What the leader knows of a voter or observer (for the HWM and DescribeQuorum)."""

    fetch_offset: int = 0
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1


@dataclass(frozen=True)
class _Timers:
    election_deadline_ms: int = 0
    fetch_deadline_ms: int = 0
    next_fetch_ms: int = 0
    fetch_in_flight: bool = False
    # The core gives up on an unanswered Fetch itself: a shell that never reports its failure (a hung connection
    # to a killed leader) must not stop this node from fetching for good.
    fetch_request_deadline_ms: int = 0
    fetch_target: int = 0  # rotates through voters while no leader is known
    next_update_voter_ms: int = 0  # when a voter whose endpoint changed may send UpdateRaftVoter again


def _request_epoch(request: RaftRequest) -> int:
    match request:
        case VoteRequest():
            return request.candidate_epoch
        case BeginQuorumEpochRequest() | EndQuorumEpochRequest():
            return request.leader_epoch
        case FetchRequest() | FetchSnapshotRequest() | UpdateVoterRequest():
            return request.current_leader_epoch
    raise TypeError(f"unknown request {request!r}")


class RaftNode:
    def __init__(
        self,
        node_id: int,
        voters: Sequence[int] | Mapping[int, str],
        config: RaftConfig,
        rng: RandomSource,
        now_ms: int,
        epoch: int = 0,
        voted_for: int | None = None,
        leader_id: int | None = None,
        entries: Sequence[LogEntry] = (),
        snapshot: tuple[SnapshotId, bytes] | None = None,
        cluster_id: str = "",
        directory_id: str = "",
        observer_only: bool = False,
        snapshot_voters: Mapping[int, str] | None = None,
        voter_endpoints: Mapping[int, str] | None = None,
        snapshot_endpoints: Mapping[int, str] | None = None,
        own_endpoint: str = "",
        bootstrap_endpoints: Sequence[str] = (),
    ) -> None:
        """`voters`: ids (kraft.version 0, static) or ids with directory ids (kraft.version 1, KIP-853: the voter
        set formatted, which VotersRecords in the log then replace); `observer_only`: formatted without the voter
        set (a new or wiped controller): `voters` only tells it whom to fetch from until its log names a set.
        `voter_endpoints`: controller.quorum.voters' addresses; `own_endpoint`: this node's listener;
        `bootstrap_endpoints`: controller.quorum.bootstrap.servers (named by the ids -2, -3, ...)."""
        self.node_id = node_id
        self._init_endpoints(voter_endpoints, snapshot_endpoints, own_endpoint, bootstrap_endpoints)
        self.cluster_id = cluster_id
        self.directory_id = directory_id
        self.kraft_version = 1 if isinstance(voters, Mapping) else 0
        # Each voter's directory as the voter set names it ("": any, a static voter set of ids only).
        self.voter_directories: dict[int, str] = (
            dict(voters) if isinstance(voters, Mapping) else {voter: "" for voter in voters}
        )
        self._bootstrap_voters: VoterSet | None = None if observer_only else dict(self.voter_directories)
        self._formatted_kraft_version = self.kraft_version
        self.snapshot_voters: VoterSet | None = dict(snapshot_voters) if snapshot_voters is not None else None
        self.voters = frozenset(self.voter_directories)
        self.voters_offset = -1  # of the VotersRecord the voter set comes from (-1: formatted or snapshot)
        self.is_voter = False
        self.config = config
        self.rng = rng
        self.epoch = epoch
        self.voted_for = voted_for
        self.leader_id = leader_id
        self.snapshot_id: SnapshotId | None = snapshot[0] if snapshot else None
        self.snapshot_data: bytes = snapshot[1] if snapshot else b""
        self.log_start_offset = self.snapshot_id.end_offset if self.snapshot_id else 0
        self.entries: list[LogEntry] = [e for e in entries if e.offset >= self.log_start_offset]
        if self.entries and self.entries[0].offset != self.log_start_offset:
            raise ValueError(f"log starts at {self.entries[0].offset}, expected {self.log_start_offset}")
        self.high_watermark = self.log_start_offset  # re-learned from the leader after a restart
        self.progress: dict[ReplicaKey, ReplicaProgress] = {}
        self.fetched_directories: dict[int, str] = {}  # voter id -> the directory its fetches name (an upgrade's)
        self.timers = _Timers()
        self._logged_high_watermark: tuple[int, int] = (-1, -1)  # (epoch, offset) of the last HWM event
        self._log = structlog.get_logger().bind(raft_node=node_id)
        self._refresh_voter_set(announce=False)
        if node_id in self.voters and not self.is_voter:
            self._log.warning(
                "raft_replica_not_in_voter_set",
                directory_id=directory_id,
                voter_directory_id=self.voter_directories[node_id],
                reason="formatted without the voter set" if observer_only else "another directory",
            )
        if leader_id == node_id:
            self.role: Role = Resigned()  # a restarted leader does not resume leading its old epoch
        elif leader_id is not None:
            self.role = Follower(leader_id)
        elif voted_for is not None:
            self.role = Voted(voted_for)
        else:
            self.role = Unattached()
        self._reset_election_timer(now_ms)
        self.timers = evolve(self.timers, fetch_deadline_ms=now_ms + config.fetch_timeout_ms)

    def _init_endpoints(
        self,
        voter_endpoints: Mapping[int, str] | None,
        snapshot_endpoints: Mapping[int, str] | None,
        own_endpoint: str,
        bootstrap_endpoints: Sequence[str],
    ) -> None:
        self.own_endpoint = own_endpoint
        self.address_book: dict[int, str] = dict(voter_endpoints or {})
        self.bootstrap_servers: dict[int, str] = {-2 - i: e for i, e in enumerate(bootstrap_endpoints)}
        # Endpoints learned from VotersRecords (as applied, latest last) and from leaders announcing themselves.
        self.learned_endpoints: dict[int, str] = {}
        self.record_endpoints: dict[int, str] = {}  # those of the VotersRecord the voter set comes from
        self.snapshot_endpoints: dict[int, str] = dict(snapshot_endpoints or {})  # of the snapshot's voter set

    def step(self, event: RaftEvent, now_ms: int) -> list[Effect]:
        """One entry point for every event; requests are answered by a `Reply`, proposals by `Proposed`."""
        match event:
            case Tick():
                return self.tick(now_ms)
            case RequestReceived(sender, request):
                response, effects = self.handle_request(sender, request, now_ms)
                return effects + [Reply(sender, response)]
            case ResponseReceived(sender, response):
                return self.handle_response(sender, response, now_ms)
            case RequestFailed(destination, request):
                return self.handle_failure(destination, request, now_ms)
            case Propose(entries):
                result, effects = self.propose(entries, now_ms)
                return effects + [Proposed(result)]
            case Resign():
                return self.resign(now_ms)
            case SnapshotTaken(end_offset, data):
                return self.take_snapshot(end_offset, data)
            case AddVoter(voter_id, directory_id, endpoint, ack_when_committed):
                change, effects = self.add_voter(voter_id, directory_id, now_ms, endpoint, ack_when_committed)
                return effects + [VoterChangeProposed(change)]
            case RemoveVoter(voter_id, directory_id):
                change, effects = self.remove_voter(voter_id, directory_id, now_ms)
                return effects + [VoterChangeProposed(change)]
            case UpgradeKRaftVersion():
                change, effects = self.upgrade_kraft_version(now_ms)
                return effects + [VoterChangeProposed(change)]
        raise TypeError(f"unknown event {event!r}")

    # ---- log helpers ----

    @property
    def log_end_offset(self) -> int:
        return self.log_start_offset + len(self.entries)

    @property
    def last_epoch(self) -> int:
        if self.entries:
            return self.entries[-1].epoch
        return self.snapshot_id.epoch if self.snapshot_id else 0

    def entry(self, offset: int) -> LogEntry:
        return self.entries[offset - self.log_start_offset]

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        """(largest epoch <= `epoch`, where it ends), as Kafka's leader-epoch cache answers."""
        if epoch == self.last_epoch:
            return EpochEndOffset(epoch, self.log_end_offset)
        higher_start: int | None = None
        for entry in reversed(self.entries):
            if entry.epoch > epoch:
                higher_start = entry.offset
            else:
                return EpochEndOffset(entry.epoch, higher_start if higher_start is not None else self.log_end_offset)
        if self.snapshot_id is not None and self.snapshot_id.epoch <= epoch:
            return EpochEndOffset(
                self.snapshot_id.epoch, higher_start if higher_start is not None else self.log_end_offset
            )
        return EpochEndOffset(epoch, higher_start if higher_start is not None else self.log_end_offset)

    @property
    def is_leader(self) -> bool:
        return isinstance(self.role, Leader)

    # ---- the voter set (KIP-853: replicas named by id and directory) ----

    def is_voter_key(self, key: ReplicaKey) -> bool:
        """Whether `key` is a voter: its id is one, and its directory is the one the voter set names (if any)."""
        expected = self.voter_directories.get(key.id)
        return expected is not None and expected in ("", key.directory_id)

    def voter_key(self, voter: int) -> ReplicaKey:
        return ReplicaKey(voter, self.voter_directories[voter])

    def _progress_key(self, replica_id: int, directory_id: str) -> ReplicaKey:
        """Where a fetch's progress is kept: under the voter's key when it is that voter, else its own."""
        key = ReplicaKey(replica_id, directory_id)
        return self.voter_key(replica_id) if self.is_voter_key(key) else key

    def voter_progress(self, voter: int) -> ReplicaProgress | None:
        return self.progress.get(self.voter_key(voter))

    def _own_key(self) -> ReplicaKey:
        return self._progress_key(self.node_id, self.directory_id)

    def _latest_voters_entry(self, below: int | None = None) -> LogEntry | None:
        end = self.log_end_offset if below is None else below
        for entry in reversed(self.entries[: max(0, end - self.log_start_offset)]):
            if voters_of(entry) is not None:
                return entry
        return None

    def _latest_voter_set(self, below: int | None = None) -> tuple[VoterSet | None, int]:
        """The voter set of the log below `below` (default: all of it): its latest VotersRecord, else the
        snapshot's, else the one formatted; and the VotersRecord's offset (-1 for the others)."""
        entry = self._latest_voters_entry(below)
        if entry is not None:
            return voters_of(entry), entry.offset
        if self.snapshot_voters is not None:
            return self.snapshot_voters, -1
        return self._bootstrap_voters, -1

    def endpoint(self, node_id: int) -> str | None:
        """Where `node_id` is reached: a bootstrap server's (negative ids), this node's own, else the latest one
        learned (VotersRecords, leaders announcing themselves), else the configured address book's."""
        if node_id < 0:
            return self.bootstrap_servers.get(node_id)
        if node_id == self.node_id and self.own_endpoint:
            return self.own_endpoint
        return self.learned_endpoints.get(node_id) or self.address_book.get(node_id)

    def _voter_endpoints(self, voters: Mapping[int, str]) -> dict[int, str]:
        return {v: e for v in voters if (e := self.endpoint(v))}

    def _refresh_voter_set(self, announce: bool = True) -> None:
        """Take the voter set from the log (KIP-853: a VotersRecord applies once appended)."""
        static = self._formatted_kraft_version == 0 and self.snapshot_voters is None
        if static and self._latest_voters_entry() is None:
            # kraft.version 0 (again, after a truncation below an upgrade's VotersRecord): the configured ids.
            self.kraft_version, self.voters_offset, self.record_endpoints = 0, -1, {}
            self.voter_directories = dict(self._bootstrap_voters or {})
            self.voters = frozenset(self.voter_directories)
            self.is_voter = self.is_voter_key(ReplicaKey(self.node_id, self.directory_id))
            return
        # A log naming voter sets is a dynamic quorum's, whatever this node was configured with (an observer
        # configured with a static address book or with bootstrap servers only, a static quorum upgraded).
        self.kraft_version = 1
        found, offset = self._latest_voter_set()
        self.voters_offset = offset
        latest = self._latest_voters_entry()
        self.record_endpoints = endpoints_of(latest) if latest is not None else dict(self.snapshot_endpoints)
        self.learned_endpoints.update(self.record_endpoints)
        if found is None:  # formatted without the voter set, and none learned yet: fetch from the configured ones
            self.is_voter = False
            return
        changed = found != self.voter_directories
        self.voter_directories = dict(found)
        self.voters = frozenset(found)
        was_voter = self.is_voter
        self.is_voter = self.is_voter_key(ReplicaKey(self.node_id, self.directory_id))
        if announce and (changed or was_voter != self.is_voter):
            self._log.info(
                "raft_voter_set_changed",
                epoch=self.epoch,
                offset=offset,
                voters=describe(found),
                is_voter=self.is_voter,
            )

    # ---- transitions ----

    def _persist(self) -> PersistQuorumState:
        return PersistQuorumState(self.epoch, self.voted_for, self.leader_id)

    def _reset_election_timer(self, now_ms: int) -> None:
        timeout = self.config.election_timeout_ms
        self.timers = evolve(self.timers, election_deadline_ms=now_ms + self.rng.randint(timeout, 2 * timeout))

    def _become_unattached(self, epoch: int, now_ms: int) -> list[Effect]:
        changed_leader = self.leader_id is not None
        was_leader = self.is_leader
        self._step_down_for(epoch)
        self.epoch = epoch
        self.voted_for = None
        self.leader_id = None
        self.role = Unattached()
        self._reset_election_timer(now_ms)
        effects: list[Effect] = [self._persist()]
        if changed_leader or was_leader:
            effects.append(LeaderChanged(epoch, None, -1))
        return effects

    def _step_down_for(self, epoch: int) -> None:
        # Where the quorum's leaderless time starts when a leader is displaced rather than resigning.
        if self.is_leader and epoch > self.epoch:
            self._log.info("raft_resigned", epoch=self.epoch, reason=f"higher epoch {epoch}")

    def _become_follower(self, epoch: int, leader_id: int, now_ms: int) -> list[Effect]:
        self._step_down_for(epoch)
        if epoch > self.epoch:
            self.voted_for = None
        self.epoch = epoch
        self.leader_id = leader_id
        self.role = Follower(leader_id)
        self.timers = evolve(
            self.timers,
            fetch_deadline_ms=now_ms + self.config.fetch_timeout_ms,
            next_fetch_ms=now_ms,
            fetch_in_flight=False,
        )
        self._log.info("raft_leader_discovered", epoch=epoch, leader=leader_id)
        return [self._persist(), LeaderChanged(epoch, leader_id, -1)]

    def _observe_epoch(self, epoch: int, leader_id: int, now_ms: int) -> list[Effect]:
        """React to a message from a newer epoch (or a leader of ours we did not know)."""
        if epoch > self.epoch:
            if leader_id != NO_LEADER and leader_id != self.node_id:
                return self._become_follower(epoch, leader_id, now_ms)
            return self._become_unattached(epoch, now_ms)
        if epoch == self.epoch and leader_id not in (NO_LEADER, self.node_id) and self.leader_id is None:
            return self._become_follower(epoch, leader_id, now_ms)
        return []

    def _begin_election(self, reason: str, now_ms: int) -> list[Effect]:
        """A timed-out voter's next step: the pre-vote round, or with pre-vote off the election itself."""
        if self.config.pre_vote_enable:
            return self._become_prospective(reason, now_ms)
        return self._start_election(now_ms)

    def _become_prospective(self, reason: str, now_ms: int) -> list[Effect]:
        # Nothing is persisted: the epoch, vote and leader stay those of the current epoch until the pre-vote wins.
        last_leader = self.leader_id if self.leader_id != self.node_id else None
        self.role = Prospective(frozenset({self.node_id}), last_leader=last_leader)
        self._reset_election_timer(now_ms)
        self._log.info(
            "raft_prevote_started",
            epoch=self.epoch,
            prospective=self.node_id,
            reason=reason,
            leader=last_leader,
            last_offset=self.log_end_offset,
            last_offset_epoch=self.last_epoch,
        )
        if has_majority({self.node_id}, self.voters):
            return self._prevote_won(now_ms)
        return [Send(voter, self._vote_request(voter, pre_vote=True)) for voter in sorted(self.voters - {self.node_id})]

    def _vote_request(self, voter: int, pre_vote: bool = False) -> VoteRequest:
        return VoteRequest(
            self.epoch,
            self.node_id,
            self.last_epoch,
            self.log_end_offset,
            self.cluster_id,
            pre_vote=pre_vote,
            candidate_directory_id=self.directory_id,
            voter_directory_id=self.voter_directories[voter],
        )

    def _prevote_won(self, now_ms: int) -> list[Effect]:
        assert isinstance(self.role, Prospective)
        self._log.info(
            "raft_prevote_won", epoch=self.epoch, prospective=self.node_id, granted=sorted(self.role.granted)
        )
        return self._start_election(now_ms)

    def _prevote_lost(self, reason: str, now_ms: int) -> list[Effect]:
        """Refused by too many voters, or timed out: back to the leader it followed, or to waiting (KIP-996)."""
        role = self.role
        assert isinstance(role, Prospective)
        self._log.info(
            "raft_prevote_lost",
            epoch=self.epoch,
            prospective=self.node_id,
            reason=reason,
            granted=sorted(role.granted),
            rejected=sorted(role.rejected),
            leader=role.last_leader,
        )
        self._reset_election_timer(now_ms)
        if role.last_leader is not None:
            self.role = Follower(role.last_leader)
            self.timers = evolve(
                self.timers,
                fetch_deadline_ms=now_ms + self.config.fetch_timeout_ms,
                next_fetch_ms=now_ms,
                fetch_in_flight=False,
            )
        elif self.leader_id == self.node_id:
            self.role = Resigned()
        elif self.voted_for is not None:
            self.role = Voted(self.voted_for)
        else:
            self.role = Unattached()
        return []

    def _start_election(self, now_ms: int) -> list[Effect]:
        self.epoch += 1
        self.voted_for = self.node_id
        self.leader_id = None
        self.role = Candidate(frozenset({self.node_id}))
        self._reset_election_timer(now_ms)
        self._log.info(
            "raft_election_started",
            epoch=self.epoch,
            candidate=self.node_id,
            last_offset=self.log_end_offset,
            last_offset_epoch=self.last_epoch,
        )
        effects: list[Effect] = [self._persist()]
        if has_majority({self.node_id}, self.voters):
            return effects + self._become_leader(now_ms)
        effects += [Send(voter, self._vote_request(voter)) for voter in sorted(self.voters - {self.node_id})]
        return effects

    def _become_leader(self, now_ms: int) -> list[Effect]:
        start = self.log_end_offset
        self.leader_id = self.node_id
        self.role = Leader(start)
        self.progress = {self.voter_key(voter): ReplicaProgress() for voter in self.voters}
        # Grace before the first quorum check.
        self.timers = evolve(self.timers, fetch_deadline_ms=now_ms + self.config.fetch_timeout_ms)
        marker = LogEntry(start, self.epoch, b"", control=True)  # commits the epoch: KRaft's LeaderChange record
        self.entries.append(marker)
        appended: tuple[LogEntry, ...] = (marker,)
        if self.kraft_version == 1 and self.voters_offset < 0 and self.snapshot_voters is None:
            # The formatted voter set goes into the log, so a replica formatted without it learns it by fetching.
            endpoints = self._voter_endpoints(self.voter_directories)
            record = LogEntry(start + 1, self.epoch, voters_record(self.voter_directories, endpoints), control=True)
            self.entries.append(record)
            self.voters_offset = record.offset
            self.record_endpoints = endpoints
            appended += (record,)
        self.progress[self._own_key()] = ReplicaProgress(self.log_end_offset, now_ms, now_ms)
        self._log.info(
            "raft_leader_elected",
            epoch=self.epoch,
            leader=self.node_id,
            voters=sorted(self.voters),
            epoch_start_offset=start,
        )
        effects: list[Effect] = [
            self._persist(),
            AppendToLog(appended),
            LeaderChanged(self.epoch, self.node_id, start),
        ]
        effects += [
            Send(
                v,
                BeginQuorumEpochRequest(
                    self.node_id, self.epoch, self.cluster_id, self.voter_directories[v], self.own_endpoint
                ),
            )
            for v in sorted(self.voters - {self.node_id})
        ]
        return effects + self._advance_leader_high_watermark(now_ms)

    def _resign(self, reason: str) -> None:
        self.role = Resigned()
        self._log.info("raft_resigned", epoch=self.epoch, reason=reason)

    # ---- public events ----

    def tick(self, now_ms: int) -> list[Effect]:
        role = self.role
        if isinstance(role, Leader):
            return self._check_quorum(now_ms) + self._maybe_update_own_endpoint(now_ms)
        effects: list[Effect] = []
        if self.timers.fetch_in_flight and now_ms >= self.timers.fetch_request_deadline_ms:
            self._log.info("raft_fetch_request_timed_out", epoch=self.epoch, leader=self._leader_or_none())
            self.timers = evolve(self.timers, fetch_in_flight=False, next_fetch_ms=now_ms)
        if isinstance(role, Follower):
            if now_ms >= self.timers.fetch_deadline_ms and self.is_voter:
                self._log.info("raft_fetch_timeout", epoch=self.epoch, leader=role.leader_id)
                return self._begin_election("fetch timeout", now_ms)
            if now_ms >= self.timers.fetch_deadline_ms:
                effects += self._observer_lost_leader(role.leader_id, now_ms)
        elif isinstance(role, Prospective) and now_ms >= self.timers.election_deadline_ms:
            return self._prevote_lost("election timeout", now_ms)
        elif self.is_voter and now_ms >= self.timers.election_deadline_ms:
            return self._begin_election("election timeout", now_ms)
        if not self.timers.fetch_in_flight and now_ms >= self.timers.next_fetch_ms:
            effects += self._send_fetch(now_ms)
        return effects

    def _observer_lost_leader(self, leader_id: int, now_ms: int) -> list[Effect]:
        """An observer heard nothing from its leader for the fetch timeout: it asks the voters for the leader now,
        abandoning a fetch still in flight to the old one (whose answer may never come)."""
        self._log.info("raft_fetch_timeout", epoch=self.epoch, leader=leader_id)
        self.leader_id = None
        self.role = Unattached()
        others = self._fetch_candidates()
        target = self.timers.fetch_target
        if others and others[target % len(others)] == leader_id:
            target += 1  # the old leader last: it is the one most likely gone
        self.timers = evolve(self.timers, fetch_in_flight=False, next_fetch_ms=now_ms, fetch_target=target)
        return [LeaderChanged(self.epoch, None, -1)]

    def _send_fetch(self, now_ms: int) -> list[Effect]:
        if isinstance(self.role, Follower):
            target = self.role.leader_id
        elif isinstance(self.role, Prospective | Candidate | Leader):
            return []
        else:  # no leader known: ask the voters in turn (observers, and voters after a restart)
            others = self._fetch_candidates()
            if not others:
                return []
            target = others[self.timers.fetch_target % len(others)]
            self.timers = evolve(self.timers, fetch_target=self.timers.fetch_target + 1)
        self._mark_fetch_sent(now_ms)
        request = FetchRequest(
            self.node_id, self.epoch, self.log_end_offset, self.last_epoch, self.cluster_id, self.directory_id
        )
        return [Send(target, request)]

    def _fetch_candidates(self) -> list[int]:
        """Whom a node without a leader asks: the voters it knows, else its bootstrap servers (KIP-853)."""
        others = sorted(self.voters - {self.node_id})
        reachable = [v for v in others if self.endpoint(v)]
        return reachable or sorted(self.bootstrap_servers, reverse=True) or others

    def _mark_fetch_sent(self, now_ms: int) -> None:
        # As in KafkaRaftClient, the node times its own requests out (the long poll plus a request timeout); the
        # shell's timer is the same, and whichever fires first, the node fetches again.
        deadline = now_ms + self.config.fetch_max_wait_ms + self.config.request_timeout_ms
        self.timers = evolve(self.timers, fetch_in_flight=True, fetch_request_deadline_ms=deadline)

    def propose(self, data: Sequence[bytes], now_ms: int) -> tuple[ProposeResult, list[Effect]]:
        if not isinstance(self.role, Leader):
            return ProposeResult(None, self.leader_id, self.epoch, ErrorCode.NOT_LEADER_OR_FOLLOWER), []
        base = self.log_end_offset
        new = tuple(LogEntry(base + i, self.epoch, item) for i, item in enumerate(data))
        self.entries.extend(new)
        self.progress[self._own_key()] = ReplicaProgress(self.log_end_offset, now_ms, now_ms)
        effects: list[Effect] = [AppendToLog(new)]
        return ProposeResult(base, self.node_id, self.epoch), effects + self._advance_leader_high_watermark(now_ms)

    # ---- voter set changes (KIP-853) ----

    def _leader_view(self) -> LeaderView:
        role = self.role
        return LeaderView(
            self.kraft_version,
            isinstance(role, Leader),
            self.voter_directories,
            self.voters_offset >= self.high_watermark,
            isinstance(role, Leader) and self.high_watermark > role.epoch_start_offset,
        )

    def add_voter(
        self, voter_id: int, directory_id: str, now_ms: int, endpoint: str = "", ack_when_committed: bool = True
    ) -> tuple[VoterChangeResult, list[Effect]]:
        """AddRaftVoter: append a VotersRecord with the replica added (reached at `endpoint`, else where the
        address book says), once it has caught up; answered on its commit, or without `ack_when_committed` at
        once."""
        progress = self.progress.get(ReplicaKey(voter_id, directory_id))
        caught_up = progress is not None and now_ms - progress.last_caught_up_ms <= self.config.fetch_timeout_ms
        refused = check_add(self._leader_view(), voter_id, directory_id, caught_up)
        if refused is not None:
            return refused, []
        if endpoint:
            self.learned_endpoints[voter_id] = endpoint
        voters = {**self.voter_directories, voter_id: directory_id}
        result, effects = self._change_voters(voters, "add", voter_id, now_ms)
        return evolve(result, awaits_commit=ack_when_committed), effects

    def _handle_update_voter(
        self, request: UpdateVoterRequest, now_ms: int
    ) -> tuple[UpdateVoterResponse, list[Effect]]:
        """UpdateRaftVoter at the leader: a voter's new endpoint goes into a new VotersRecord."""
        if isinstance(self.role, Leader) and request.current_leader_epoch != self.epoch:
            stale = request.current_leader_epoch < self.epoch
            code = ErrorCode.FENCED_LEADER_EPOCH if stale else ErrorCode.UNKNOWN_LEADER_EPOCH
            return UpdateVoterResponse(code, self._leader_or_none(), self.epoch), []
        voter, directory, endpoint = request.voter_id, request.voter_directory_id, request.endpoint
        refused = check_update(self._leader_view(), voter, directory, endpoint)
        if refused is not None:
            return UpdateVoterResponse(refused.error_code, self._leader_or_none(), self.epoch), []
        if self.record_endpoints.get(voter) == endpoint:
            return UpdateVoterResponse(ErrorCode.NONE, self.node_id, self.epoch), []
        self.learned_endpoints[voter] = endpoint
        _result, effects = self._change_voters(dict(self.voter_directories), "update", voter, now_ms)
        return UpdateVoterResponse(ErrorCode.NONE, self.node_id, self.epoch), effects

    def _maybe_update_voter(self, leader: int, now_ms: int) -> list[Effect]:
        """A voter reached elsewhere than its VotersRecord says (it restarted on another address) asks its leader
        to write the new endpoint (UpdateRaftVoter), at most once per request timeout."""
        stale = bool(self.own_endpoint) and self.record_endpoints.get(self.node_id) != self.own_endpoint
        if not stale or not self.is_voter or self.kraft_version < 1 or now_ms < self.timers.next_update_voter_ms:
            return []
        self.timers = evolve(self.timers, next_update_voter_ms=now_ms + self.config.request_timeout_ms)
        self._log.info(
            "raft_update_voter_sent",
            epoch=self.epoch,
            leader=leader,
            endpoint=self.own_endpoint,
            recorded_endpoint=self.record_endpoints.get(self.node_id),
        )
        request = UpdateVoterRequest(self.node_id, self.directory_id, self.own_endpoint, self.epoch, self.cluster_id)
        return [Send(leader, request)]

    def _maybe_update_own_endpoint(self, now_ms: int) -> list[Effect]:
        """A leader reached elsewhere than its VotersRecord says writes its own endpoint, once it may change the
        voter set (the followers reach it meanwhile at the endpoint its BeginQuorumEpoch announced)."""
        if not isinstance(self.role, Leader) or not self.is_voter or not self.own_endpoint:
            return []
        if self.record_endpoints.get(self.node_id) == self.own_endpoint:
            return []
        key = ReplicaKey(self.node_id, self.directory_id)
        if check_update(self._leader_view(), key.id, self.voter_directories[key.id], self.own_endpoint) is not None:
            return []
        return self._change_voters(dict(self.voter_directories), "update", self.node_id, now_ms)[1]

    def remove_voter(self, voter_id: int, directory_id: str, now_ms: int) -> tuple[VoterChangeResult, list[Effect]]:
        """RemoveRaftVoter: append a VotersRecord without the voter."""
        refused = check_remove(self._leader_view(), voter_id, directory_id)
        if refused is not None:
            return refused, []
        voters = {v: d for v, d in self.voter_directories.items() if v != voter_id}
        return self._change_voters(voters, "remove", voter_id, now_ms)

    def _change_voters(
        self, voters: VoterSet, change: str, voter_id: int, now_ms: int
    ) -> tuple[VoterChangeResult, list[Effect]]:
        offset = self.log_end_offset
        record = LogEntry(offset, self.epoch, voters_record(voters, self._voter_endpoints(voters)), control=True)
        self.entries.append(record)
        self._log.info(
            "raft_voter_change_appended", epoch=self.epoch, change=change, voter=voter_id, offset=offset,
            voters=describe(voters),
        )  # fmt: skip
        self._refresh_voter_set()
        effects: list[Effect] = [AppendToLog((record,))]
        return VoterChangeResult(ErrorCode.NONE, offset=offset), effects + self._advance_leader_high_watermark(now_ms)

    def upgrade_kraft_version(self, now_ms: int) -> tuple[VoterChangeResult, list[Effect]]:
        """kraft.version 0 -> 1 (KIP-853): a static quorum becomes dynamic. The leader names each voter by the
        directory its recent fetches carry and appends a KRaftVersionRecord and the first VotersRecord."""
        view = self._leader_view()
        if not view.is_leader:
            return VoterChangeResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, "not the leader"), []
        if self.kraft_version == 1:
            return VoterChangeResult(ErrorCode.NONE, "kraft.version is 1 already"), []
        if not view.committed_in_epoch:
            return VoterChangeResult(ErrorCode.REQUEST_TIMED_OUT, "the leader has not committed; retry"), []
        directories = {**self.fetched_directories, self.node_id: self.directory_id}
        unknown = sorted(
            v
            for v in self.voters
            if not directories.get(v)
            or (v != self.node_id and now_ms - (self.voter_progress(v) or ReplicaProgress()).last_fetch_ms
                > self.config.fetch_timeout_ms)
        )  # fmt: skip
        if unknown:
            message = f"voters {unknown} have not fetched with their directory ids lately"
            return VoterChangeResult(ErrorCode.INVALID_UPDATE_VERSION, message), []
        voters = {v: directories[v] for v in self.voters}
        version = LogEntry(self.log_end_offset, self.epoch, KRAFT_VERSION_RECORD + b'{"kraft_version":1}', True)
        self.entries.append(version)
        result, effects = self._change_voters(voters, "upgrade", self.node_id, now_ms)
        return result, [AppendToLog((version,)), *effects]

    def resign(self, now_ms: int, reason: str = "shutdown") -> list[Effect]:
        """Graceful shutdown of a leader: tell the voters so they elect a successor at once."""
        if not isinstance(self.role, Leader):
            return []
        successors = tuple(
            sorted(
                (v for v in self.voters if v != self.node_id),
                key=lambda v: -(self.voter_progress(v) or ReplicaProgress()).fetch_offset,
            )
        )
        self._resign(reason)
        request = EndQuorumEpochRequest(self.node_id, self.epoch, successors, self.cluster_id)
        return [LeaderChanged(self.epoch, None, -1), *(Send(v, request) for v in successors)]

    def take_snapshot(self, end_offset: int, data: bytes) -> list[Effect]:
        """The state machine's image of every entry below `end_offset` (committed) replaces that log prefix."""
        if end_offset > self.high_watermark or end_offset <= self.log_start_offset:
            return []
        snapshot_id = SnapshotId(end_offset, self.entry(end_offset - 1).epoch)
        voters = self._latest_voter_set(below=end_offset)[0] if self.kraft_version == 1 else None
        record = self._latest_voters_entry(below=end_offset)
        if record is not None:
            self.snapshot_endpoints = endpoints_of(record)
        self.entries = self.entries[end_offset - self.log_start_offset :]
        self.log_start_offset = end_offset
        self.snapshot_id = snapshot_id
        self.snapshot_data = data
        self.snapshot_voters = voters
        self._refresh_voter_set()
        return [SaveSnapshot(snapshot_id, data, voters, dict(self.snapshot_endpoints) or None)]

    # ---- requests ----

    def handle_request(self, sender: int, request: RaftRequest, now_ms: int) -> tuple[RaftResponse, list[Effect]]:
        """Answer a request; the effects (persistence first) must run before the response is sent."""
        response: RaftResponse
        effects: list[Effect] = []
        local = LocalQuorum(
            self.node_id,
            self.cluster_id,
            self.voters,
            self.epoch,
            self.directory_id,
            self.is_voter,
            self.voter_directories,
            self.leader_id,
        )
        rejection = validate_request(request, local)
        if rejection is not None:
            return self._refuse(sender, request, rejection), effects
        match request:
            case VoteRequest():
                response, effects = self._handle_vote(request, now_ms)
            case BeginQuorumEpochRequest():
                response, effects = self._handle_begin_epoch(request, now_ms)
            case EndQuorumEpochRequest():
                response, effects = self._handle_end_epoch(request, now_ms)
            case FetchRequest():
                response, effects = self._handle_fetch(request, now_ms)
            case FetchSnapshotRequest():
                response = self._handle_fetch_snapshot(request)
            case UpdateVoterRequest():
                response, effects = self._handle_update_voter(request, now_ms)
            case _:
                raise TypeError(f"unknown request {request!r}")
        if isinstance(response, FetchResponse | VoteResponse) and response.leader_id >= 0:
            response = evolve(response, leader_endpoint=self.endpoint(response.leader_id) or "")
        if response.error_code != ErrorCode.NONE:
            # Debug level: observers looking for the leader are refused by every non-leader, often.
            self._log.debug(
                "raft_request_rejected",
                request=type(request).__name__,
                sender=sender,
                error=response.error_code.name,
                expected_leader_epoch=self.epoch,
                actual_leader_epoch=_request_epoch(request),
                leader=response.leader_id,
            )
        return response, effects

    def _refuse(self, sender: int, request: RaftRequest, rejection: Rejection) -> RaftResponse:
        """Answer a request that failed validation; nothing of this node's state changes."""
        self._log.warning(
            "raft_request_invalid",
            request=type(request).__name__,
            sender=sender,
            error=rejection.error_code.name,
            field=rejection.field,
            expected=rejection.expected,
            actual=rejection.actual,
            epoch=self.epoch,
        )
        code = rejection.error_code
        # Another cluster learns nothing of this one (Kafka answers a bare error); a voter-set error carries ours.
        foreign = code == ErrorCode.INCONSISTENT_CLUSTER_ID
        leader = NO_LEADER if foreign else self._leader_or_none()
        epoch = -1 if foreign else self.epoch
        match request:
            case VoteRequest():
                return VoteResponse(code, leader, epoch, False)
            case BeginQuorumEpochRequest():
                return BeginQuorumEpochResponse(code, leader, epoch)
            case EndQuorumEpochRequest():
                return EndQuorumEpochResponse(code, leader, epoch)
            case FetchRequest():
                return FetchResponse(code, leader, epoch, -1, -1)
            case FetchSnapshotRequest():
                return FetchSnapshotResponse(code, leader, epoch, None)
            case UpdateVoterRequest():
                return UpdateVoterResponse(code, leader, epoch)
        raise TypeError(f"unknown request {request!r}")

    def _leader_or_none(self) -> int:
        return self.leader_id if self.leader_id is not None else NO_LEADER

    def _handle_vote(self, request: VoteRequest, now_ms: int) -> tuple[VoteResponse, list[Effect]]:
        effects: list[Effect] = []
        if request.candidate_epoch < self.epoch:
            return VoteResponse(ErrorCode.FENCED_LEADER_EPOCH, self._leader_or_none(), self.epoch, False), effects
        if request.candidate_epoch > self.epoch:
            # As in Kafka, a higher epoch is adopted from any Vote, a pre-vote's too; a real vote is then judged
            # as in any epoch without a leader, whatever leader this node followed before.
            effects += self._become_unattached(request.candidate_epoch, now_ms)
        if request.pre_vote:
            return self._handle_pre_vote(request), effects
        candidate_log = (request.last_offset_epoch, request.last_offset)
        our_log = (self.last_epoch, self.log_end_offset)
        if self.leader_id is not None:
            reason = f"leader {self.leader_id} is known in epoch {self.epoch}"
        elif self.voted_for is not None and self.voted_for != request.candidate_id:
            reason = f"already voted for {self.voted_for}"
        elif candidate_log < our_log:
            reason = "candidate log is behind"
        else:
            reason = ""
        if reason:
            # expected: the candidate's log must be at least (last_epoch, last_offset) of ours; actual: its own.
            self._log.info(
                "raft_vote_rejected",
                epoch=self.epoch,
                candidate=request.candidate_id,
                reason=reason,
                expected_min_last_epoch=self.last_epoch,
                expected_min_last_offset=self.log_end_offset,
                actual_last_epoch=request.last_offset_epoch,
                actual_last_offset=request.last_offset,
                voted_for=self.voted_for,
                leader=self.leader_id,
            )
            return VoteResponse(ErrorCode.NONE, self._leader_or_none(), self.epoch, False), effects
        if self.voted_for is None:
            self.voted_for = request.candidate_id
            self.role = Voted(request.candidate_id)
            effects.append(self._persist())  # durable before the grant leaves this node
        self._reset_election_timer(now_ms)
        self._log.info(
            "raft_vote_granted",
            epoch=self.epoch,
            candidate=request.candidate_id,
            candidate_last_epoch=request.last_offset_epoch,
            candidate_last_offset=request.last_offset,
            last_epoch=self.last_epoch,
            last_offset=self.log_end_offset,
        )
        return VoteResponse(ErrorCode.NONE, NO_LEADER, self.epoch, True), effects

    def _pre_vote_refusal(self, request: VoteRequest) -> str:
        """Why this node would not vote for the prospective (empty: it would), per Kafka's canGrantVote."""
        role = self.role
        if isinstance(role, Leader):
            return f"this node leads epoch {self.epoch}"
        if isinstance(role, Resigned):
            return f"this node resigned the leadership of epoch {self.epoch}"
        if isinstance(role, Follower) and role.fetched:
            return f"fetched from leader {role.leader_id} in epoch {self.epoch}"
        if (request.last_offset_epoch, request.last_offset) < (self.last_epoch, self.log_end_offset):
            return "prospective log is behind"
        return ""

    def _handle_pre_vote(self, request: VoteRequest) -> VoteResponse:
        """Answer a pre-vote: nothing of this node's state changes, nothing is persisted, no timer is reset."""
        reason = self._pre_vote_refusal(request)
        logged = dict(
            epoch=self.epoch,
            prospective=request.candidate_id,
            prospective_last_epoch=request.last_offset_epoch,
            prospective_last_offset=request.last_offset,
            last_epoch=self.last_epoch,
            last_offset=self.log_end_offset,
            leader=self.leader_id,
        )
        if reason:
            self._log.info("raft_prevote_rejected", reason=reason, **logged)
        else:
            self._log.info("raft_prevote_granted", **logged)
        return VoteResponse(ErrorCode.NONE, self._leader_or_none(), self.epoch, not reason)

    def _handle_begin_epoch(
        self, request: BeginQuorumEpochRequest, now_ms: int
    ) -> tuple[BeginQuorumEpochResponse, list[Effect]]:
        if request.leader_epoch < self.epoch:
            return BeginQuorumEpochResponse(ErrorCode.FENCED_LEADER_EPOCH, self._leader_or_none(), self.epoch), []
        if request.leader_endpoint:
            self.learned_endpoints[request.leader_id] = request.leader_endpoint
        effects: list[Effect] = []
        if (
            request.leader_epoch > self.epoch
            or self.leader_id != request.leader_id
            or isinstance(self.role, Prospective)
        ):
            effects = self._become_follower(request.leader_epoch, request.leader_id, now_ms)
        return BeginQuorumEpochResponse(ErrorCode.NONE, request.leader_id, self.epoch), effects

    def _handle_end_epoch(
        self, request: EndQuorumEpochRequest, now_ms: int
    ) -> tuple[EndQuorumEpochResponse, list[Effect]]:
        if request.leader_epoch < self.epoch:
            return EndQuorumEpochResponse(ErrorCode.FENCED_LEADER_EPOCH, self._leader_or_none(), self.epoch), []
        effects: list[Effect] = []
        if request.leader_epoch > self.epoch or self.leader_id == request.leader_id:
            # Stay a follower of the resigned leader in its epoch: forgetting the epoch's vote or leader here would
            # let a stale candidate of the same epoch win a second election in it. The election happens in the
            # next epoch, when the (shortened) fetch deadline passes.
            if request.leader_epoch > self.epoch or not isinstance(self.role, Follower):
                effects = self._become_follower(request.leader_epoch, request.leader_id, now_ms)
            # Its leader is gone: fetches from it no longer stand for a healthy leader, so pre-votes are granted.
            self.role = Follower(request.leader_id)
            # The preferred successors (most caught up first) time out first, so one of them usually wins.
            rank = (
                request.preferred_successors.index(self.node_id)
                if self.node_id in request.preferred_successors
                else len(request.preferred_successors)
            )
            self.timers = evolve(self.timers, fetch_deadline_ms=now_ms + rank * self.config.retry_backoff_ms * 4)
        return EndQuorumEpochResponse(ErrorCode.NONE, self._leader_or_none(), self.epoch), effects

    def _handle_fetch(self, request: FetchRequest, now_ms: int) -> tuple[FetchResponse, list[Effect]]:
        def error(code: ErrorCode) -> FetchResponse:
            return FetchResponse(code, self._leader_or_none(), self.epoch, self.high_watermark, self.log_start_offset)

        if not isinstance(self.role, Leader):
            return error(ErrorCode.NOT_LEADER_OR_FOLLOWER), []
        if request.current_leader_epoch > self.epoch:
            return error(ErrorCode.UNKNOWN_LEADER_EPOCH), []
        # A fetch from an older epoch (a restarted voter, an observer after a failover) is answered with our epoch
        # and id, so the requester follows us first and then fetches in this epoch.
        if request.current_leader_epoch < self.epoch:
            return error(ErrorCode.FENCED_LEADER_EPOCH), []
        # Below the log start, or at it with a history the snapshot cannot vouch for: start from the snapshot.
        if self.snapshot_id is not None and (
            request.fetch_offset < self.log_start_offset
            or (request.fetch_offset == self.log_start_offset and request.last_fetched_epoch != self.snapshot_id.epoch)
        ):
            return FetchResponse(
                ErrorCode.NONE,
                self.node_id,
                self.epoch,
                self.high_watermark,
                self.log_start_offset,
                snapshot_id=self.snapshot_id,
            ), []
        end = self.end_offset_for_epoch(request.last_fetched_epoch)
        if end.epoch != request.last_fetched_epoch or end.end_offset < request.fetch_offset:
            return FetchResponse(
                ErrorCode.NONE,
                self.node_id,
                self.epoch,
                self.high_watermark,
                self.log_start_offset,
                diverging_epoch=end,
            ), []
        key = self._progress_key(request.replica_id, request.replica_directory_id)
        previous = self.progress.get(key, ReplicaProgress())
        caught_up_ms = now_ms if request.fetch_offset >= self.log_end_offset else previous.last_caught_up_ms
        self.progress[key] = ReplicaProgress(request.fetch_offset, now_ms, caught_up_ms)
        # Only a voter's own directory counts: a wiped voter's empty log must not look like the voter's progress.
        counts = self.is_voter_key(key)
        if counts and request.replica_directory_id:
            self.fetched_directories[request.replica_id] = request.replica_directory_id
        effects = self._advance_leader_high_watermark(now_ms) if counts else []
        limit = self.log_end_offset if counts else self.high_watermark
        first = request.fetch_offset - self.log_start_offset
        count = max(0, min(limit - request.fetch_offset, MAX_ENTRIES_PER_FETCH))
        entries = tuple(self.entries[first : first + count])
        return FetchResponse(
            ErrorCode.NONE, self.node_id, self.epoch, self.high_watermark, self.log_start_offset, entries=entries
        ), effects

    def _handle_fetch_snapshot(self, request: FetchSnapshotRequest) -> FetchSnapshotResponse:
        if not isinstance(self.role, Leader):
            return FetchSnapshotResponse(ErrorCode.NOT_LEADER_OR_FOLLOWER, self._leader_or_none(), self.epoch, None)
        if request.snapshot_id != self.snapshot_id:
            return FetchSnapshotResponse(ErrorCode.SNAPSHOT_NOT_FOUND, self.node_id, self.epoch, self.snapshot_id)
        voters = None if self.snapshot_voters is None else tuple(sorted(self.snapshot_voters.items()))
        endpoints = tuple(sorted(self.snapshot_endpoints.items()))
        return FetchSnapshotResponse(
            ErrorCode.NONE, self.node_id, self.epoch, self.snapshot_id, self.snapshot_data, voters, endpoints
        )

    def _advance_leader_high_watermark(self, now_ms: int) -> list[Effect]:
        assert isinstance(self.role, Leader)
        self.progress[self._own_key()] = ReplicaProgress(self.log_end_offset, now_ms, now_ms)
        offsets = [p.fetch_offset for v in self.voters if (p := self.voter_progress(v)) is not None]
        candidate = majority_offset(offsets, len(self.voters))
        # Only once an entry of this epoch is committed may the HWM move (Raft's rule, KRaft's LeaderChange).
        if candidate <= self.role.epoch_start_offset:
            return []
        effects = self._set_high_watermark(candidate)
        if not self.is_voter and self.high_watermark > self.voters_offset:
            # KIP-853: a leader that removed itself leads until that change commits, then steps down.
            effects += self.resign(now_ms, reason="removed from the voter set")
        return effects

    def _set_high_watermark(self, offset: int) -> list[Effect]:
        offset = min(offset, self.log_end_offset)
        if offset <= self.high_watermark:
            return []
        first = max(self.high_watermark, self.log_start_offset)
        newly = tuple(self.entries[first - self.log_start_offset : offset - self.log_start_offset])
        self.high_watermark = offset
        logged_epoch, logged_offset = self._logged_high_watermark
        if logged_epoch != self.epoch or offset - logged_offset >= HIGH_WATERMARK_LOG_INTERVAL:
            self._logged_high_watermark = (self.epoch, offset)
            self._log.info(
                "raft_high_watermark_advanced", epoch=self.epoch, leader=self.leader_id, high_watermark=offset
            )
        return [CommitAdvanced(offset, newly)]

    def _check_quorum(self, now_ms: int) -> list[Effect]:
        """A leader that has not heard from a majority within the fetch timeout steps down (KRaft's check)."""
        assert isinstance(self.role, Leader)
        recent = ({self.node_id} if self.is_voter else set()) | {
            key.id
            for key, p in self.progress.items()
            if self.is_voter_key(key) and now_ms - p.last_fetch_ms <= self.config.fetch_timeout_ms
        }
        grace_until = self.timers.fetch_deadline_ms  # set when we became leader
        if has_majority(recent, self.voters) or now_ms < grace_until:
            return []
        self._resign("lost quorum")
        self._reset_election_timer(now_ms)
        return [LeaderChanged(self.epoch, None, -1)]

    # ---- responses ----

    def handle_response(
        self, sender: int, response: RaftResponse, now_ms: int, request: RaftRequest | None = None
    ) -> list[Effect]:
        """`request`: the one `response` answers, where the shell knows it (as Kafka's client matches an answer
        to its request): a Fetch answer about an earlier state of the log is then not applied to this one."""
        match response:
            case VoteResponse():
                return self._handle_vote_response(sender, response, now_ms)
            case FetchResponse():
                return self._handle_fetch_response(sender, response, now_ms, request)
            case FetchSnapshotResponse():
                return self._handle_fetch_snapshot_response(sender, response, now_ms)
            case BeginQuorumEpochResponse() | EndQuorumEpochResponse():
                return self._observe_epoch(response.leader_epoch, response.leader_id, now_ms)
            case UpdateVoterResponse():
                if response.error_code != ErrorCode.NONE:
                    self._log.info("raft_update_voter_refused", epoch=self.epoch, error=response.error_code.name)
                return self._observe_epoch(response.leader_epoch, response.leader_id, now_ms)
        raise TypeError(f"unknown response {response!r}")

    def handle_failure(self, destination: int, request: RaftRequest, now_ms: int) -> list[Effect]:
        """A request could not be delivered (connection refused, timeout)."""
        if isinstance(request, FetchRequest | FetchSnapshotRequest):
            self.timers = evolve(
                self.timers, fetch_in_flight=False, next_fetch_ms=now_ms + self.config.retry_backoff_ms
            )
        return []

    def _learn_leader_endpoint(self, response: FetchResponse | VoteResponse) -> None:
        if response.leader_endpoint and response.leader_id >= 0 and response.leader_id != self.node_id:
            self.learned_endpoints[response.leader_id] = response.leader_endpoint

    def _handle_vote_response(self, sender: int, response: VoteResponse, now_ms: int) -> list[Effect]:
        self._learn_leader_endpoint(response)
        effects = self._observe_epoch(response.leader_epoch, response.leader_id, now_ms)
        if not effects and isinstance(self.role, Prospective) and response.leader_epoch == self.epoch:
            # The answer carries no pre-vote flag (as in Kafka): a prospective's epoch is its pre-vote round.
            return self._handle_pre_vote_response(sender, response, now_ms)
        if effects or not isinstance(self.role, Candidate) or response.leader_epoch != self.epoch:
            return effects
        if not response.vote_granted:
            return []
        votes = self.role.votes | {sender}
        self.role = Candidate(votes)
        if has_majority(votes, self.voters):
            return self._become_leader(now_ms)
        return []

    def _handle_pre_vote_response(self, sender: int, response: VoteResponse, now_ms: int) -> list[Effect]:
        role = self.role
        assert isinstance(role, Prospective)
        if response.error_code != ErrorCode.NONE:
            return []
        if response.vote_granted:
            self.role = evolve(role, granted=role.granted | {sender})
            return self._prevote_won(now_ms) if has_majority(self.role.granted, self.voters) else []
        self.role = evolve(role, rejected=role.rejected | {sender})
        # Lost once the voters still unheard, all granting, could no longer make a majority.
        if not has_majority(self.voters - self.role.rejected, self.voters):
            return self._prevote_lost(f"refused by {sorted(self.role.rejected)}", now_ms)
        return []

    def _handle_fetch_response(
        self, sender: int, response: FetchResponse, now_ms: int, request: RaftRequest | None = None
    ) -> list[Effect]:
        self.timers = evolve(self.timers, fetch_in_flight=False)
        self._learn_leader_endpoint(response)
        effects = self._observe_epoch(response.leader_epoch, response.leader_id, now_ms)
        if response.error_code != ErrorCode.NONE:
            self.timers = evolve(self.timers, next_fetch_ms=now_ms + self.config.retry_backoff_ms)
            return effects
        if not isinstance(self.role, Follower) or self.role.leader_id != sender or response.leader_epoch != self.epoch:
            self.timers = evolve(self.timers, next_fetch_ms=now_ms + self.config.retry_backoff_ms)
            return effects
        self.timers = evolve(self.timers, fetch_deadline_ms=now_ms + self.config.fetch_timeout_ms, next_fetch_ms=now_ms)
        self.role = Follower(sender, fetched=True)
        if response.snapshot_id is not None:
            self._mark_fetch_sent(now_ms)
            request = FetchSnapshotRequest(self.node_id, self.epoch, response.snapshot_id, self.cluster_id)
            return effects + [Send(sender, request)]
        if response.diverging_epoch is not None:
            if isinstance(request, FetchRequest) and (request.fetch_offset, request.last_fetched_epoch) != (
                self.log_end_offset,
                self.last_epoch,
            ):
                return effects  # about a log this node no longer has (an earlier Fetch's); the next tick fetches
            truncation = self._truncate_to_diverging(response.diverging_epoch)
            if isinstance(truncation, DivergedBelowHighWatermark):
                return [*effects, truncation]  # no fetch again: it would be answered the same, at once, for ever
            return [*effects, *([truncation] if truncation else []), *self._send_fetch(now_ms)]
        if not response.entries:
            # Fetch again at once, as Kafka's followers do: the leader parks an empty fetch until it has entries
            # or a new high watermark (up to the fetch max wait). An answer that only moved the high watermark
            # came right after a commit, and the leader's next append would wait for this follower's next tick.
            effects += self._set_high_watermark(min(response.high_watermark, self.log_end_offset))
            return effects + self._send_fetch(now_ms) + self._maybe_update_voter(sender, now_ms)
        if response.entries[0].offset != self.log_end_offset:
            return effects  # a stale response; the next fetch asks again
        self.entries.extend(response.entries)
        effects.append(AppendToLog(response.entries))
        if any(voters_of(entry) is not None for entry in response.entries):
            self._refresh_voter_set()
        effects += self._set_high_watermark(min(response.high_watermark, self.log_end_offset))
        # Fetch again at once (after the append, so the offset it reports is durable): that fetch is what moves
        # the leader's high watermark, and waiting for the next tick would add up to a tick to every commit.
        return effects + self._send_fetch(now_ms) + self._maybe_update_voter(sender, now_ms)

    def _truncate_to_diverging(self, diverging: EpochEndOffset) -> TruncateLog | DivergedBelowHighWatermark | None:
        """The truncation a diverging epoch asks for; None when this log ends at or before that point already (an
        answer to an earlier Fetch, e.g. a duplicate: an answer to the current one always cuts something)."""
        local = self.end_offset_for_epoch(diverging.epoch)
        cut = min(local.end_offset, diverging.end_offset) if local.epoch == diverging.epoch else local.end_offset
        cut = max(cut, self.log_start_offset)
        if cut >= self.log_end_offset:
            return None
        if cut < self.high_watermark:
            self._log.error("raft_truncation_below_high_watermark", cut=cut, high_watermark=self.high_watermark)
            return DivergedBelowHighWatermark(cut, self.high_watermark)
        self._log.info(
            "raft_log_truncated",
            old_end_offset=self.log_end_offset,
            new_end_offset=cut,
            diverging_epoch=diverging.epoch,
            diverging_end_offset=diverging.end_offset,
        )
        del self.entries[cut - self.log_start_offset :]
        if cut <= self.voters_offset:
            self._refresh_voter_set()  # the VotersRecord is gone: the set before it applies again
        return TruncateLog(cut)

    def _handle_fetch_snapshot_response(
        self, sender: int, response: FetchSnapshotResponse, now_ms: int
    ) -> list[Effect]:
        self.timers = evolve(self.timers, fetch_in_flight=False)
        effects = self._observe_epoch(response.leader_epoch, response.leader_id, now_ms)
        if response.error_code != ErrorCode.NONE or response.snapshot_id is None:
            self.timers = evolve(self.timers, next_fetch_ms=now_ms + self.config.retry_backoff_ms)
            return effects
        snapshot = response.snapshot_id
        stale = (
            not isinstance(self.role, Follower) or self.role.leader_id != sender or response.leader_epoch != self.epoch
        )
        # A late or duplicated answer: nothing to install.
        if stale or snapshot == self.snapshot_id or snapshot.end_offset < self.high_watermark:
            self.timers = evolve(self.timers, next_fetch_ms=now_ms)
            return effects
        self.entries = []
        self.log_start_offset = snapshot.end_offset
        self.snapshot_id = snapshot
        self.snapshot_data = response.data
        self.snapshot_voters = None if response.voters is None else dict(response.voters)
        self.snapshot_endpoints = dict(response.voter_endpoints)
        self.high_watermark = max(self.high_watermark, snapshot.end_offset)
        self.timers = evolve(self.timers, next_fetch_ms=now_ms)
        self._refresh_voter_set()
        endpoints = dict(self.snapshot_endpoints) or None
        return effects + [InstallSnapshot(snapshot, response.data, self.snapshot_voters, endpoints)]

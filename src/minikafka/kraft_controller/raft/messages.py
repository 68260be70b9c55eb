"""KRaft (KIP-595) messages as plain frozen dataclasses; the shell maps them to protobuf (minikafka.pb.raft_pb2)."""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common.errors import ErrorCode

NO_LEADER = -1


@dataclass(frozen=True)
class LogEntry:
    offset: int
    epoch: int
    data: bytes
    control: bool = False  # e.g. the entry a new leader writes to start its epoch; not a metadata record


@dataclass(frozen=True)
class EpochEndOffset:
    epoch: int
    end_offset: int


@dataclass(frozen=True)
class SnapshotId:
    end_offset: int  # exclusive: the snapshot holds every entry below it
    epoch: int  # epoch of the entry at end_offset - 1


@dataclass(frozen=True)
class VoteRequest:
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int  # the candidate's log end offset
    cluster_id: str = ""  # the sender's cluster; a node answers INCONSISTENT_CLUSTER_ID unless it is its own
    # KIP-996: "would you vote for me?" at the sender's current epoch (Kafka's VoteRequest v2 PreVote); the answer
    # binds no one, and the receiver persists nothing for it.
    pre_vote: bool = False
    # KIP-853: the candidate's directory, and the receiver's as the candidate's voter set names it ("": unknown,
    # a static voter set of ids only).
    candidate_directory_id: str = ""
    voter_directory_id: str = ""


@dataclass(frozen=True)
class VoteResponse:
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    vote_granted: bool
    leader_endpoint: str = ""  # KIP-853 (NodeEndpoints): where the leader named is reached


@dataclass(frozen=True)
class BeginQuorumEpochRequest:
    leader_id: int
    leader_epoch: int
    cluster_id: str = ""  # the sender's cluster; a node answers INCONSISTENT_CLUSTER_ID unless it is its own
    voter_directory_id: str = ""  # KIP-853: the receiver's directory as the leader's voter set names it
    leader_endpoint: str = ""  # KIP-853 (Kafka's LeaderEndpoints): where the new leader is reached


@dataclass(frozen=True)
class BeginQuorumEpochResponse:
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True)
class EndQuorumEpochRequest:
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...]
    cluster_id: str = ""  # the sender's cluster; a node answers INCONSISTENT_CLUSTER_ID unless it is its own


@dataclass(frozen=True)
class EndQuorumEpochResponse:
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True)
class FetchRequest:
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    cluster_id: str = ""  # the sender's cluster; a node answers INCONSISTENT_CLUSTER_ID unless it is its own
    replica_directory_id: str = ""  # KIP-853: a voter's fetch counts only from the directory the voter set names


@dataclass(frozen=True)
class FetchResponse:
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    high_watermark: int
    log_start_offset: int
    diverging_epoch: EpochEndOffset | None = None
    snapshot_id: SnapshotId | None = None
    entries: tuple[LogEntry, ...] = ()
    # KIP-853 (Kafka's NodeEndpoints): where the leader named is reached, so a replica that found the quorum
    # through controller.quorum.bootstrap.servers can fetch from a leader it has no address of ("": unknown).
    leader_endpoint: str = ""


@dataclass(frozen=True)
class FetchSnapshotRequest:
    replica_id: int
    current_leader_epoch: int
    snapshot_id: SnapshotId
    cluster_id: str = ""  # the sender's cluster; a node answers INCONSISTENT_CLUSTER_ID unless it is its own


@dataclass(frozen=True)
class FetchSnapshotResponse:
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    snapshot_id: SnapshotId | None
    data: bytes = b""
    voters: tuple[tuple[int, str], ...] | None = None  # KIP-853: the voter set at the snapshot's end, if known
    voter_endpoints: tuple[tuple[int, str], ...] = ()  # and its voters' endpoints


@dataclass(frozen=True)
class UpdateVoterRequest:
    """KIP-853's UpdateRaftVoter: a voter tells its leader the endpoint it is reached at now (it restarted on
    another address), and the leader writes a VotersRecord with it."""

    voter_id: int
    voter_directory_id: str
    endpoint: str  # host:port of its controller listener
    current_leader_epoch: int
    cluster_id: str = ""


@dataclass(frozen=True)
class UpdateVoterResponse:
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int


RaftRequest = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
    | UpdateVoterRequest
)
RaftResponse = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
    | UpdateVoterResponse
)


# ---- events for `RaftNode.step` (its other public methods are the same entry points, one per event) ----


@dataclass(frozen=True)
class Tick:
    """Timers: election, fetch timeout, next fetch, the leader's quorum check."""


@dataclass(frozen=True)
class RequestReceived:
    sender: int
    request: RaftRequest


@dataclass(frozen=True)
class ResponseReceived:
    sender: int
    response: RaftResponse


@dataclass(frozen=True)
class RequestFailed:
    """A request could not be delivered or timed out."""

    destination: int
    request: RaftRequest


@dataclass(frozen=True)
class Propose:
    entries: tuple[bytes, ...]


@dataclass(frozen=True)
class Resign:
    """Graceful shutdown of the leader (EndQuorumEpoch)."""


@dataclass(frozen=True)
class SnapshotTaken:
    """The state machine's image of every entry below `end_offset` (which must be committed)."""

    end_offset: int
    data: bytes


@dataclass(frozen=True)
class AddVoter:
    """KIP-853's AddRaftVoter, at the leader: make the replica (id, directory) a voter, reached at `endpoint`."""

    voter_id: int
    directory_id: str
    endpoint: str = ""  # host:port of its controller listener ("": the leader's address book's, if any)
    ack_when_committed: bool = True  # AddRaftVoter v1's: false answers once the VotersRecord is appended


@dataclass(frozen=True)
class RemoveVoter:
    """KIP-853's RemoveRaftVoter, at the leader: the voter (id, directory) stops being one."""

    voter_id: int
    directory_id: str


@dataclass(frozen=True)
class UpgradeKRaftVersion:
    """kraft.version 0 -> 1 at the leader (Kafka's UpdateFeatures of kraft.version): the static quorum becomes
    dynamic."""


RaftEvent = (
    Tick
    | RequestReceived
    | ResponseReceived
    | RequestFailed
    | Propose
    | Resign
    | SnapshotTaken
    | AddVoter
    | RemoveVoter
    | UpgradeKRaftVersion
)

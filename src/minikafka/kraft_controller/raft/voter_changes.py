"""KIP-853's rules for changing the voter set, checked by the leader before it appends a VotersRecord: one change
at a time, each committed before the next; the leader has committed an entry of its own epoch; an added replica
is caught up (it fetched up to the log end within the fetch timeout); the last voter is never removed.
The error names and codes are Kafka's (AddRaftVoter and RemoveRaftVoter answers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minikafka.common.errors import ErrorCode


@dataclass(frozen=True)
class VoterChangeResult:
    """The leader's answer to AddRaftVoter or RemoveRaftVoter: the offset of the VotersRecord, or the error."""

    error_code: ErrorCode
    message: str = ""
    offset: int = -1  # of the VotersRecord appended
    # Answered once the VotersRecord commits; AddRaftVoter v1 with ack_when_committed=false is answered once it
    # is appended, so a new voter the quorum needs for the commit does not hold its own addition's answer.
    awaits_commit: bool = True


@dataclass(frozen=True)
class LeaderView:
    """What the leader knows when a change is asked for."""

    kraft_version: int
    is_leader: bool
    voters: Mapping[int, str]
    change_in_flight: bool  # its latest VotersRecord is above the high watermark
    committed_in_epoch: bool  # the high watermark passed the start of its epoch


def _common(view: LeaderView) -> VoterChangeResult | None:
    if not view.is_leader:
        return VoterChangeResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, "not the leader")
    if view.kraft_version < 1:
        return VoterChangeResult(
            ErrorCode.UNSUPPORTED_VERSION, "the voter set is static (kraft.version 0): it cannot change"
        )
    if view.change_in_flight or not view.committed_in_epoch:
        why = "a voter set change is not committed yet" if view.change_in_flight else "the leader has not committed"
        return VoterChangeResult(ErrorCode.REQUEST_TIMED_OUT, f"{why}; retry")
    return None


def check_add(view: LeaderView, voter_id: int, directory_id: str, caught_up: bool) -> VoterChangeResult | None:
    """The refusal of AddRaftVoter(voter_id, directory_id), or None when the leader may append it."""
    refused = _common(view)
    if refused is not None:
        return refused
    if not directory_id:
        return VoterChangeResult(ErrorCode.INVALID_REQUEST, "a voter to add needs its directory id")
    if voter_id in view.voters:
        current = view.voters[voter_id]
        return VoterChangeResult(ErrorCode.DUPLICATE_VOTER, f"voter {voter_id} is already one (directory {current})")
    if not caught_up:
        return VoterChangeResult(
            ErrorCode.REQUEST_TIMED_OUT, f"replica {voter_id} ({directory_id}) has not caught up with the leader"
        )
    return None


def check_remove(view: LeaderView, voter_id: int, directory_id: str) -> VoterChangeResult | None:
    """The refusal of RemoveRaftVoter(voter_id, directory_id), or None when the leader may append it."""
    refused = _common(view)
    if refused is not None:
        return refused
    if view.voters.get(voter_id) != directory_id:
        return VoterChangeResult(ErrorCode.VOTER_NOT_FOUND, f"no voter {voter_id} with directory {directory_id}")
    if len(view.voters) == 1:
        return VoterChangeResult(ErrorCode.INVALID_REQUEST, f"voter {voter_id} is the last one")
    return None


def valid_endpoint(endpoint: str) -> bool:
    host, _, port = endpoint.rpartition(":")
    return bool(host) and port.isdigit() and 0 < int(port) < 65536


def check_update(view: LeaderView, voter_id: int, directory_id: str, endpoint: str) -> VoterChangeResult | None:
    """The refusal of UpdateRaftVoter(voter_id, directory_id, endpoint), or None when the leader may append it."""
    if not view.is_leader:
        return VoterChangeResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, "not the leader")
    if view.kraft_version < 1:
        return VoterChangeResult(ErrorCode.UNSUPPORTED_VERSION, "the voter set is static (kraft.version 0)")
    if not valid_endpoint(endpoint):
        return VoterChangeResult(ErrorCode.INVALID_REQUEST, f"endpoint {endpoint!r} is not host:port")
    if view.voters.get(voter_id) != directory_id:
        return VoterChangeResult(ErrorCode.VOTER_NOT_FOUND, f"no voter {voter_id} with directory {directory_id}")
    return _common(view)

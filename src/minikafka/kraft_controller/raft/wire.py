"""Conversions between the Raft core's dataclasses and the protobuf messages of minikafka.pb.raft_pb2."""

from __future__ import annotations

from google.protobuf.message import Message

from minikafka.common.errors import ErrorCode, wire_code
from minikafka.kraft_controller.raft import messages as m
from minikafka.pb import common_pb2, raft_pb2


def entry_to_proto(entry: m.LogEntry) -> raft_pb2.RaftEntry:
    return raft_pb2.RaftEntry(offset=entry.offset, epoch=entry.epoch, data=entry.data, control=entry.control)


def entry_from_proto(entry: raft_pb2.RaftEntry) -> m.LogEntry:
    return m.LogEntry(entry.offset, entry.epoch, entry.data, entry.control)


def _snapshot_to_proto(snapshot: m.SnapshotId | None) -> raft_pb2.SnapshotId | None:
    return None if snapshot is None else raft_pb2.SnapshotId(end_offset=snapshot.end_offset, epoch=snapshot.epoch)


def _snapshot_from_proto(message: object, field: str) -> m.SnapshotId | None:
    if not message.HasField(field):  # type: ignore[attr-defined]
        return None
    snapshot = getattr(message, field)
    return m.SnapshotId(snapshot.end_offset, snapshot.epoch)


# ---- requests ----


def request_to_proto(request: m.RaftRequest) -> Message:
    match request:
        case m.VoteRequest():
            return raft_pb2.VoteRequest(
                cluster_id=request.cluster_id,
                candidate_epoch=request.candidate_epoch,
                candidate_id=request.candidate_id,
                last_offset_epoch=request.last_offset_epoch,
                last_offset=request.last_offset,
                pre_vote=request.pre_vote,
                candidate_directory_id=request.candidate_directory_id,
                voter_directory_id=request.voter_directory_id,
            )
        case m.BeginQuorumEpochRequest():
            return raft_pb2.BeginQuorumEpochRequest(
                cluster_id=request.cluster_id,
                leader_id=request.leader_id,
                leader_epoch=request.leader_epoch,
                voter_directory_id=request.voter_directory_id,
                leader_endpoint=request.leader_endpoint,
            )
        case m.EndQuorumEpochRequest():
            return raft_pb2.EndQuorumEpochRequest(
                cluster_id=request.cluster_id,
                leader_id=request.leader_id,
                leader_epoch=request.leader_epoch,
                preferred_successors=list(request.preferred_successors),
            )
        case m.FetchRequest():
            return raft_pb2.RaftFetchRequest(
                cluster_id=request.cluster_id,
                replica_id=request.replica_id,
                current_leader_epoch=request.current_leader_epoch,
                fetch_offset=request.fetch_offset,
                last_fetched_epoch=request.last_fetched_epoch,
                replica_directory_id=request.replica_directory_id,
            )
        case m.FetchSnapshotRequest():
            return raft_pb2.FetchSnapshotRequest(
                cluster_id=request.cluster_id,
                replica_id=request.replica_id,
                current_leader_epoch=request.current_leader_epoch,
                snapshot_id=_snapshot_to_proto(request.snapshot_id),
            )
        case m.UpdateVoterRequest():
            return raft_pb2.UpdateRaftVoterRequest(
                cluster_id=request.cluster_id,
                current_leader_epoch=request.current_leader_epoch,
                voter_id=request.voter_id,
                voter_directory_id=request.voter_directory_id,
                endpoint=request.endpoint,
            )
    raise TypeError(f"unknown request {request!r}")


def vote_request(message: raft_pb2.VoteRequest) -> m.VoteRequest:
    return m.VoteRequest(
        message.candidate_epoch,
        message.candidate_id,
        message.last_offset_epoch,
        message.last_offset,
        message.cluster_id,
        message.pre_vote,
        message.candidate_directory_id,
        message.voter_directory_id,
    )


def begin_epoch_request(message: raft_pb2.BeginQuorumEpochRequest) -> m.BeginQuorumEpochRequest:
    return m.BeginQuorumEpochRequest(
        message.leader_id, message.leader_epoch, message.cluster_id, message.voter_directory_id, message.leader_endpoint
    )


def update_voter_request(message: raft_pb2.UpdateRaftVoterRequest) -> m.UpdateVoterRequest:
    return m.UpdateVoterRequest(
        message.voter_id, message.voter_directory_id, message.endpoint, message.current_leader_epoch, message.cluster_id
    )


def end_epoch_request(message: raft_pb2.EndQuorumEpochRequest) -> m.EndQuorumEpochRequest:
    return m.EndQuorumEpochRequest(
        message.leader_id, message.leader_epoch, tuple(message.preferred_successors), message.cluster_id
    )


def fetch_request(message: raft_pb2.RaftFetchRequest) -> m.FetchRequest:
    return m.FetchRequest(
        message.replica_id,
        message.current_leader_epoch,
        message.fetch_offset,
        message.last_fetched_epoch,
        message.cluster_id,
        message.replica_directory_id,
    )


def fetch_snapshot_request(message: raft_pb2.FetchSnapshotRequest) -> m.FetchSnapshotRequest:
    snapshot = _snapshot_from_proto(message, "snapshot_id")
    return m.FetchSnapshotRequest(
        message.replica_id, message.current_leader_epoch, snapshot or m.SnapshotId(-1, -1), message.cluster_id
    )


# ---- responses ----


def response_to_proto(response: m.RaftResponse) -> object:
    match response:
        case m.VoteResponse():
            return raft_pb2.VoteResponse(
                error_code=wire_code(response.error_code),
                leader_id=response.leader_id,
                leader_epoch=response.leader_epoch,
                vote_granted=response.vote_granted,
                leader_endpoint=response.leader_endpoint,
            )
        case m.BeginQuorumEpochResponse():
            return raft_pb2.BeginQuorumEpochResponse(
                error_code=wire_code(response.error_code),
                leader_id=response.leader_id,
                leader_epoch=response.leader_epoch,
            )
        case m.EndQuorumEpochResponse():
            return raft_pb2.EndQuorumEpochResponse(
                error_code=wire_code(response.error_code),
                leader_id=response.leader_id,
                leader_epoch=response.leader_epoch,
            )
        case m.FetchResponse():
            message = raft_pb2.RaftFetchResponse(
                error_code=wire_code(response.error_code),
                leader_id=response.leader_id,
                leader_epoch=response.leader_epoch,
                high_watermark=response.high_watermark,
                log_start_offset=response.log_start_offset,
                entries=[entry_to_proto(e) for e in response.entries],
                leader_endpoint=response.leader_endpoint,
            )
            if response.diverging_epoch is not None:
                message.diverging_epoch.CopyFrom(
                    common_pb2.EpochEndOffset(
                        epoch=response.diverging_epoch.epoch, end_offset=response.diverging_epoch.end_offset
                    )
                )
            if (snapshot_id := _snapshot_to_proto(response.snapshot_id)) is not None:
                message.snapshot_id.CopyFrom(snapshot_id)
            return message
        case m.FetchSnapshotResponse():
            return raft_pb2.FetchSnapshotResponse(
                error_code=wire_code(response.error_code),
                leader_id=response.leader_id,
                leader_epoch=response.leader_epoch,
                snapshot_id=_snapshot_to_proto(response.snapshot_id),
                size=len(response.data),
                position=0,
                unaligned_records=response.data,
                has_voters=response.voters is not None,
                voters=[
                    raft_pb2.VoterKey(voter_id=i, directory_id=d, endpoint=dict(response.voter_endpoints).get(i, ""))
                    for i, d in response.voters or ()
                ],
            )
        case m.UpdateVoterResponse():
            return raft_pb2.UpdateRaftVoterResponse(
                error_code=wire_code(response.error_code),
                leader_id=response.leader_id,
                leader_epoch=response.leader_epoch,
            )
    raise TypeError(f"unknown response {response!r}")


def response_from_proto(message: object) -> m.RaftResponse:
    match message:
        case raft_pb2.VoteResponse():
            return m.VoteResponse(
                ErrorCode.of(message.error_code),
                message.leader_id,
                message.leader_epoch,
                message.vote_granted,
                message.leader_endpoint,
            )
        case raft_pb2.BeginQuorumEpochResponse():
            return m.BeginQuorumEpochResponse(ErrorCode.of(message.error_code), message.leader_id, message.leader_epoch)
        case raft_pb2.EndQuorumEpochResponse():
            return m.EndQuorumEpochResponse(ErrorCode.of(message.error_code), message.leader_id, message.leader_epoch)
        case raft_pb2.RaftFetchResponse():
            diverging = (
                m.EpochEndOffset(message.diverging_epoch.epoch, message.diverging_epoch.end_offset)
                if message.HasField("diverging_epoch")
                else None
            )
            return m.FetchResponse(
                ErrorCode.of(message.error_code),
                message.leader_id,
                message.leader_epoch,
                message.high_watermark,
                message.log_start_offset,
                diverging,
                _snapshot_from_proto(message, "snapshot_id"),
                tuple(entry_from_proto(e) for e in message.entries),
                message.leader_endpoint,
            )
        case raft_pb2.FetchSnapshotResponse():
            return m.FetchSnapshotResponse(
                ErrorCode.of(message.error_code),
                message.leader_id,
                message.leader_epoch,
                _snapshot_from_proto(message, "snapshot_id"),
                message.unaligned_records,
                tuple((v.voter_id, v.directory_id) for v in message.voters) if message.has_voters else None,
                tuple((v.voter_id, v.endpoint) for v in message.voters if v.endpoint),
            )
        case raft_pb2.UpdateRaftVoterResponse():
            return m.UpdateVoterResponse(ErrorCode.of(message.error_code), message.leader_id, message.leader_epoch)
    raise TypeError(f"unknown response {message!r}")

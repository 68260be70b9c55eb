"""OffsetCommit, OffsetFetch, DeleteGroups and the completion of __consumer_offsets writes (Kafka's
GroupMetadataManager / ClassicGroup.validateOffsetCommit). A commit is visible only once its record is stored with
acks=all; the generation fences commits from members a rebalance removed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from minikafka.broker.group.effects import Answer, Append, CommitResult, DeleteResult, Effect, GroupEvent, GroupStep
from minikafka.broker.group.membership import assignment_stored, static_join_stored, validate_member
from minikafka.broker.group.offset_delete import offsets_deleted
from minikafka.broker.group.offset_expiry import offsets_expired
from minikafka.broker.group.records import (
    NO_EXPIRE_TIMESTAMP,
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsRecord,
)
from minikafka.broker.group.state import (
    Group,
    GroupConfig,
    GroupState,
    OffsetAndMetadata,
    PendingAssignment,
    PendingCommit,
    PendingDelete,
    PendingOffsetDelete,
    PendingOffsetExpiry,
    PendingStaticJoin,
    TopicPartitionKey,
)
from minikafka.common.errors import ErrorCode

DEFAULT_RETENTION_TIME = -1


def expire_timestamp(request: CommitRequest) -> int | None:
    """Kafka's: an explicit retention makes the offset expire at the commit time plus it."""
    if request.retention_time_ms == DEFAULT_RETENTION_TIME:
        return None
    return request.commit_timestamp_ms + request.retention_time_ms


@dataclass(frozen=True)
class CommitEntry:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(frozen=True)
class CommitRequest:
    request_id: int
    member_id: str
    group_instance_id: str | None
    generation_id: int
    entries: tuple[CommitEntry, ...]
    api_version: int  # OffsetCommit's: from v9 a missing group is named GROUP_ID_NOT_FOUND
    # Epoch ms, as Kafka's OffsetCommitValue commitTimestamp: retention counts from it, across coordinators.
    commit_timestamp_ms: int = 0
    # OffsetCommit v2-v4's RetentionTimeMs; -1 (every other version): offsets.retention.minutes applies.
    retention_time_ms: int = DEFAULT_RETENTION_TIME


def validate_offset_commit(group: Group, request: CommitRequest, transactional: bool = False) -> ErrorCode:
    """Kafka's ClassicGroup.validateOffsetCommit. A transactional commit (TxnOffsetCommit) without a member id
    and generation, as its versions before 3 send, goes to a group with members too, and the group's rebalance
    does not hold it back."""
    if group.is_idle and request.generation_id >= 0:
        # No such group: a member of a generation cannot commit to it (named so before v9, for older clients).
        return ErrorCode.GROUP_ID_NOT_FOUND if request.api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
    if group.state == GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if request.generation_id < 0 and group.state == GroupState.EMPTY:
        return ErrorCode.NONE  # a consumer without group management (assign()) or an admin tool
    if request.generation_id >= 0 or request.member_id or request.group_instance_id is not None:
        error = validate_member(group, request.member_id, request.group_instance_id)
        if error != ErrorCode.NONE:
            return error
        if request.generation_id != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
    elif not transactional and group.state != GroupState.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and group.state == GroupState.COMPLETING_REBALANCE:
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


def commit_offsets(group: Group, request: CommitRequest, config: GroupConfig) -> GroupStep:
    error = validate_offset_commit(group, request)
    if error != ErrorCode.NONE:
        return GroupStep(group, (Answer(request.request_id, CommitResult(error)),))
    offsets, refused = [], []
    for entry in request.entries:
        key = TopicPartitionKey(entry.topic, entry.partition)
        if len((entry.metadata or "").encode()) > config.max_metadata_size:
            refused.append((key, ErrorCode.OFFSET_METADATA_TOO_LARGE))
        else:
            offsets.append(
                (
                    key,
                    OffsetAndMetadata(
                        entry.offset,
                        entry.leader_epoch,
                        entry.metadata or "",
                        request.commit_timestamp_ms,
                        expire_timestamp(request),
                    ),
                )
            )
    pending = PendingCommit(
        request.request_id, tuple(offsets), tuple(refused), request.member_id, request.generation_id
    )
    if not offsets:
        return GroupStep(group, (Answer(request.request_id, CommitResult(ErrorCode.NONE, tuple(refused))),))
    records = tuple(
        OffsetsRecord(OffsetCommitKey(group.group_id, key.topic, key.partition), offset_commit_value(value))
        for key, value in offsets
    )
    return GroupStep(group.with_pending(pending), (Append(request.request_id, records),))


def offset_commit_value(value: OffsetAndMetadata) -> OffsetCommitValue:
    expire = NO_EXPIRE_TIMESTAMP if value.expire_timestamp_ms is None else value.expire_timestamp_ms
    return OffsetCommitValue(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp_ms, expire)


def fetch_offsets(
    group: Group | None, partitions: Iterable[TopicPartitionKey] | None
) -> dict[TopicPartitionKey, OffsetAndMetadata | None]:
    """The committed offsets of `partitions` (None: every partition the group committed for)."""
    offsets = group.offsets if group is not None else {}
    if partitions is None:
        return dict(offsets)
    return {key: offsets.get(key) for key in partitions}


def delete_group(group: Group, request_id: int, consumer_group_tombstones: tuple[OffsetsRecord, ...] = ()) -> GroupStep:
    """Only an empty group can go: its metadata and every offset get tombstones. `consumer_group_tombstones`: an
    Empty KIP-848 group's records (its offsets are `group`'s), deleted instead of a classic group's metadata."""
    if group.state == GroupState.DEAD or (group.is_idle and not consumer_group_tombstones):
        return GroupStep(group, (Answer(request_id, DeleteResult(ErrorCode.GROUP_ID_NOT_FOUND)),))
    if group.state != GroupState.EMPTY:
        return GroupStep(group, (Answer(request_id, DeleteResult(ErrorCode.NON_EMPTY_GROUP)),))
    records = list(consumer_group_tombstones) or [OffsetsRecord(GroupMetadataKey(group.group_id), None)]
    records += [OffsetsRecord(OffsetCommitKey(group.group_id, k.topic, k.partition), None) for k in group.offsets]
    group = group.with_pending(PendingDelete(request_id)).evolve(state=GroupState.DEAD)
    return GroupStep(group, (Append(request_id, tuple(records)),))


def store_error(error: ErrorCode) -> ErrorCode:
    """A failed __consumer_offsets append as the group's client sees it (Kafka's mapping)."""
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return error if error == ErrorCode.NONE else ErrorCode.UNKNOWN_SERVER_ERROR


def metadata_store_error(error: ErrorCode) -> ErrorCode:
    """A failed group metadata write (SyncGroup's assignment, a static member's new id) as the member sees it:
    as a commit's, except that a record too large is the coordinator's fault, not the member's."""
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return store_error(error)


def append_done(group: Group, request_id: int, error: ErrorCode, config: GroupConfig, now: int) -> GroupStep:
    """A write to __consumer_offsets finished: apply and answer what waited for it."""
    pending = group.pending_writes.get(request_id)
    if pending is None:
        return GroupStep(group)
    group = group.evolve(pending_writes={k: v for k, v in group.pending_writes.items() if k != request_id})
    if isinstance(pending, PendingAssignment):
        return assignment_stored(group, pending, metadata_store_error(error), now, config)
    if isinstance(pending, PendingStaticJoin):
        return static_join_stored(group, pending, metadata_store_error(error), now)
    error = store_error(error)
    if isinstance(pending, PendingCommit):
        return _commit_stored(group, pending, error)
    if isinstance(pending, PendingOffsetDelete):
        return offsets_deleted(group, pending, error)
    if isinstance(pending, PendingOffsetExpiry):
        return offsets_expired(group, pending, error)
    if isinstance(pending, PendingDelete):
        if error != ErrorCode.NONE:
            return GroupStep(group.evolve(state=GroupState.EMPTY), (Answer(request_id, DeleteResult(error)),))
        event = GroupEvent("group_deleted", {"group": group.group_id})
        return GroupStep(group.evolve(offsets={}), (Answer(request_id, DeleteResult(ErrorCode.NONE)), event))
    return GroupStep(group)


def _commit_stored(group: Group, pending: PendingCommit, error: ErrorCode) -> GroupStep:
    partitions = tuple((key, error) for key, _ in pending.offsets) + pending.refused
    answer = Answer(pending.request_id, CommitResult(ErrorCode.NONE, partitions))
    if error != ErrorCode.NONE:
        return GroupStep(group, (answer,))
    effects: list[Effect] = []
    for key, value in pending.offsets:
        previous = group.offsets.get(key)
        effects.append(
            GroupEvent(
                "offset_committed",
                {
                    "group": group.group_id,
                    "topic": key.topic,
                    "partition": key.partition,
                    "offset": value.offset,
                    "previous_offset": previous.offset if previous is not None else None,
                    "member_id": pending.member_id,
                    "generation": pending.generation,
                },
            )
        )
    group = group.evolve(offsets={**group.offsets, **dict(pending.offsets)})
    return GroupStep(group, (answer, *effects))

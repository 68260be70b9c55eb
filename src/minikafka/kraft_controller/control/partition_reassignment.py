"""Kafka's partition reassignment in KRaft form (KIP-455; ReplicationControlManager with
PartitionReassignmentReplicas), pure: AlterPartitionReassignments and ListPartitionReassignments.

Starting one adds the new replicas to the partition (they fetch and join the ISR as any follower does) and marks
the leaving ones removing; it completes on the change that finds every target replica in the ISR (see
partition_change). Cancelling drops the adding replicas again.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.partition_change import (
    KAFKA_TOPIC_DEFAULTS,
    PartitionChangeOutcome,
    ReplicaSets,
    TopicDefaults,
    build_partition_change,
    elr_context,
    leader_eligibility,
)
from minikafka.kraft_controller.control.replication_control import (
    apply_records,
    log_election,
    log_reassignment_completed,
    unclean_enabled,
)
from minikafka.kraft_controller.control.requests import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    ReassignablePartition,
    ReassignablePartitionResult,
)
from minikafka.kraft_controller.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from minikafka.kraft_controller.metadata.records import Record

log = structlog.get_logger()


@dataclass(frozen=True)
class _Rejected:
    error: ErrorCode
    message: str


def _validate_target(image: MetadataImage, replicas: tuple[int, ...]) -> _Rejected | None:
    """Kafka's validateManualPartitionAssignment."""
    if not replicas:
        return _Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "the replica list is empty")
    duplicates = sorted({b for b in replicas if replicas.count(b) > 1})
    if duplicates:
        return _Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"broker(s) {duplicates} listed more than once")
    unknown = [b for b in replicas if image.broker(b) is None]
    if unknown:
        return _Rejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"broker(s) {unknown} are not registered")
    return None


def _started(partition: PartitionRegistration, target: tuple[int, ...]) -> ReplicaSets:
    """PartitionReassignmentReplicas: the target first, then the replicas leaving."""
    removing = tuple(r for r in partition.replicas if r not in target)
    adding = tuple(r for r in target if r not in partition.replicas)
    return ReplicaSets(target + removing, removing, adding)


def _cancel(
    image: MetadataImage,
    topic: TopicImage,
    partition_id: int,
    partition: PartitionRegistration,
    defaults: TopicDefaults,
) -> PartitionChangeOutcome | _Rejected:
    """Kafka's cancelPartitionReassignment: drop the adding replicas. Where only adding replicas are in sync, the
    reverted ISR is the first original replica: an unclean election, allowed only with
    unclean.leader.election.enable."""
    original = tuple(r for r in partition.replicas if r not in partition.adding_replicas)
    isr = tuple(b for b in partition.isr if b not in partition.adding_replicas)
    unclean = unclean_enabled(image, topic.name, defaults.unclean_leader_election_enable)
    if not isr:
        if not unclean:
            return _Rejected(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {topic.name}:{partition_id} because it would require an "
                "unclean leader election.",
            )
        isr = original[:1]
    return build_partition_change(
        topic.topic_id, partition_id, partition, leader_eligibility(image), "reassignment_cancelled", isr, None,
        ReplicaSets(original), unclean=unclean, elr=elr_context(image, topic.name, partition, defaults),
    )  # fmt: skip


def _change(
    image: MetadataImage,
    topic: TopicImage,
    request: ReassignablePartition,
    partition: PartitionRegistration,
    defaults: TopicDefaults,
) -> PartitionChangeOutcome | _Rejected:
    eligible = leader_eligibility(image)
    elr = elr_context(image, topic.name, partition, defaults)
    if request.replicas is None:
        if not partition.reassigning:
            return _Rejected(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment to cancel")
        return _cancel(image, topic, request.partition, partition, defaults)
    rejected = _validate_target(image, request.replicas)
    if rejected is not None:
        return rejected
    sets = _started(partition, request.replicas)
    return build_partition_change(
        topic.topic_id, request.partition, partition, eligible, "reassignment", target_replicas=sets, elr=elr
    )


def _log_outcome(
    topic: TopicImage, request: ReassignablePartition, partition: PartitionRegistration, outcome: PartitionChangeOutcome
) -> None:
    fields = {"topic": topic.name, "topic_id": str(topic.topic_id), "partition": request.partition}
    if request.replicas is None:
        log.info(
            "reassignment_cancelled",
            **fields,
            replicas=list(partition.replicas),
            adding=list(partition.adding_replicas),
        )
    elif outcome.record is not None:
        record = outcome.record
        log.info(
            "reassignment_started",
            **fields,
            target_replicas=list(request.replicas),
            original_replicas=list(partition.replicas),
            adding=list(record.adding_replicas or ()),
            removing=list(record.removing_replicas or ()),
        )
    reason = "reassignment_cancelled" if request.replicas is None else "reassignment"
    log_election(topic, request.partition, partition, outcome, reason, "UNCLEAN" if outcome.unclean else None)
    log_reassignment_completed(topic, request.partition, partition, outcome)


def alter_partition_reassignments(
    image: MetadataImage, request: AlterPartitionReassignmentsRequest, defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS
) -> ControllerResult[AlterPartitionReassignmentsResponse]:
    records: list[Record] = []
    results: list[ReassignablePartitionResult] = []
    scratch = image
    for item in request.partitions:
        topic = scratch.topics_by_name.get(item.topic)
        partition = None if topic is None else topic.partitions.get(item.partition)
        if topic is None or partition is None:
            outcome: PartitionChangeOutcome | _Rejected = _Rejected(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {item.topic}-{item.partition}"
            )
        else:
            outcome = _change(scratch, topic, item, partition, defaults)
        if isinstance(outcome, _Rejected):
            log.warning(
                "reassignment_rejected", topic=item.topic, partition=item.partition, error=outcome.error.name,
                message=outcome.message, replicas=None if item.replicas is None else list(item.replicas),
            )  # fmt: skip
            results.append(ReassignablePartitionResult(item.topic, item.partition, outcome.error, outcome.message))
            continue
        assert topic is not None and partition is not None
        _log_outcome(topic, item, partition, outcome)
        if outcome.record is not None:
            records.append(outcome.record)
            scratch = apply_records(scratch, [outcome.record])
        results.append(ReassignablePartitionResult(item.topic, item.partition, ErrorCode.NONE))
    return ControllerResult(tuple(records), AlterPartitionReassignmentsResponse(tuple(results)))


def list_partition_reassignments(image: MetadataImage) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(
        tuple(
            OngoingPartitionReassignment(topic.name, index, p.replicas, p.adding_replicas, p.removing_replicas)
            for topic, index, p in image.partitions()
            if p.reassigning
        )
    )

"""Kafka's ElectLeaders and automatic leader rebalancing (ReplicationControlManager.electLeaders and
maybeBalancePartitionLeaders), pure: preferred-replica elections as PartitionChange records.

The preferred replica is the first one. It may lead only while in the ISR and unfenced, so moving leadership to it
never loses an acknowledged write.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.errors import ErrorCode, KafkaError
from kraft_controller.control.controller_result import ControllerResult
from kraft_controller.control.partition_change import PartitionChangeOutcome, leader_eligibility
from kraft_controller.control.replication_control import apply_records, log_election
from kraft_controller.control.requests import (
    ElectionType,
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionElectionResult,
    TopicPartitionRef,
)
from kraft_controller.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from kraft_controller.metadata.records import PartitionChange, Record

# Kafka's maxElectionsPerImbalance: one check elects at most this many, so a returning broker's partitions do not
# all land in one metadata batch; the rest wait for the next check.
MAX_ELECTIONS_PER_IMBALANCE = 1000


@dataclass(frozen=True)
class PreferredElection:
    error_code: ErrorCode
    error_message: str = ""
    record: PartitionChange | None = None


def _elect_preferred(
    image: MetadataImage, topic: TopicImage | None, ref: TopicPartitionRef, reason: str
) -> PreferredElection:
    partition = None if topic is None else topic.partitions.get(ref.partition)
    if topic is None or partition is None:
        return PreferredElection(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {ref.topic}-{ref.partition}")
    preferred = partition.replicas[0]
    if partition.leader == preferred:
        return PreferredElection(ErrorCode.ELECTION_NOT_NEEDED)
    if preferred not in partition.isr or not leader_eligibility(image)(preferred):
        return PreferredElection(
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            f"preferred replica {preferred} is not in the ISR {list(partition.isr)} or not unfenced",
        )
    record = PartitionChange(topic.topic_id, ref.partition, leader=preferred, reason=reason)
    outcome = PartitionChangeOutcome(record, partition.leader, preferred)
    log_election(topic, ref.partition, partition, outcome, reason, election_type=ElectionType.PREFERRED.name)
    return PreferredElection(ErrorCode.NONE, record=record)


def _all_partitions(image: MetadataImage) -> tuple[TopicPartitionRef, ...]:
    return tuple(TopicPartitionRef(topic.name, index) for topic, index, _ in image.partitions())


def elect_leaders(image: MetadataImage, request: ElectLeadersRequest) -> ControllerResult[ElectLeadersResponse]:
    """A preferred election for each partition asked (every partition when None): ELECTION_NOT_NEEDED where the
    preferred replica leads, PREFERRED_LEADER_NOT_AVAILABLE where it may not."""
    if request.election_type is not ElectionType.PREFERRED:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{request.election_type.name} elections are not supported")
    refs = _all_partitions(image) if request.partitions is None else request.partitions
    records: list[Record] = []
    results: list[PartitionElectionResult] = []
    scratch = image
    for ref in refs:
        election = _elect_preferred(scratch, scratch.topics_by_name.get(ref.topic), ref, "preferred_election")
        if election.record is not None:
            records.append(election.record)
            scratch = apply_records(scratch, [election.record])
        results.append(PartitionElectionResult(ref.topic, ref.partition, election.error_code, election.error_message))
    return ControllerResult(tuple(records), ElectLeadersResponse(tuple(results)))


def _imbalanced(partition: PartitionRegistration) -> bool:
    return partition.leader != partition.replicas[0]


def balance_partition_leaders(image: MetadataImage) -> list[Record]:
    """auto.leader.rebalance.enable: a preferred election for every partition whose preferred replica does not
    lead but could; where it could not, the partition stays as it is until a later check."""
    records: list[Record] = []
    for topic, index, partition in image.partitions():
        if len(records) >= MAX_ELECTIONS_PER_IMBALANCE:
            break
        if not _imbalanced(partition):
            continue
        election = _elect_preferred(image, topic, TopicPartitionRef(topic.name, index), "auto_leader_rebalance")
        if election.record is not None:
            records.append(election.record)
    return records

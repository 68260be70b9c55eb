"""Kafka's ElectLeaders and automatic leader rebalancing (ReplicationControlManager.electLeaders and
maybeBalancePartitionLeaders), pure: preferred and unclean elections as PartitionChange records.

The preferred replica is the first one. It may lead only while in the ISR and unfenced, so moving leadership to it
never loses an acknowledged write. An unclean election, asked for explicitly, gives a leaderless partition any live
replica, in or out of the ISR (whatever that replica lacks is lost), as Kafka's ElectLeaders UNCLEAN does whatever
unclean.leader.election.enable says.
"""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.partition_change import (
    KAFKA_TOPIC_DEFAULTS,
    PartitionChangeOutcome,
    TopicDefaults,
    build_partition_change,
    elr_context,
    leader_eligibility,
)
from minikafka.kraft_controller.control.replication_control import apply_records, log_election
from minikafka.kraft_controller.control.requests import (
    ElectionType,
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionElectionResult,
    TopicPartitionRef,
)
from minikafka.kraft_controller.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from minikafka.kraft_controller.metadata.records import PartitionChange, Record

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


def _elect_unclean(
    image: MetadataImage, topic: TopicImage | None, ref: TopicPartitionRef, defaults: TopicDefaults
) -> PreferredElection:
    partition = None if topic is None else topic.partitions.get(ref.partition)
    if topic is None or partition is None:
        return PreferredElection(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {ref.topic}-{ref.partition}")
    if partition.has_leader:
        return PreferredElection(ErrorCode.ELECTION_NOT_NEEDED)
    elr = elr_context(image, topic.name, partition, defaults)
    outcome = build_partition_change(
        topic.topic_id, ref.partition, partition, leader_eligibility(image), "unclean_election", unclean=True, elr=elr
    )
    if outcome.record is None or not outcome.elected:
        return PreferredElection(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no live replica of the partition")
    election_type = ElectionType.UNCLEAN.name if outcome.unclean else None
    log_election(topic, ref.partition, partition, outcome, "unclean_election", election_type=election_type)
    return PreferredElection(ErrorCode.NONE, record=outcome.record)


def _all_partitions(image: MetadataImage) -> tuple[TopicPartitionRef, ...]:
    return tuple(TopicPartitionRef(topic.name, index) for topic, index, _ in image.partitions())


def elect_leaders(
    image: MetadataImage, request: ElectLeadersRequest, defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS
) -> ControllerResult[ElectLeadersResponse]:
    """An election of the type asked for each partition asked (every partition when None). PREFERRED:
    ELECTION_NOT_NEEDED where the preferred replica leads, PREFERRED_LEADER_NOT_AVAILABLE where it may not.
    UNCLEAN: ELECTION_NOT_NEEDED where there is a leader, ELIGIBLE_LEADERS_NOT_AVAILABLE where no replica is live.
    Asked for every partition, the answer leaves out those that needed no election, as Kafka's does."""
    refs = _all_partitions(image) if request.partitions is None else request.partitions
    records: list[Record] = []
    results: list[PartitionElectionResult] = []
    scratch = image
    for ref in refs:
        topic = scratch.topics_by_name.get(ref.topic)
        if request.election_type is ElectionType.UNCLEAN:
            election = _elect_unclean(scratch, topic, ref, defaults)
        else:
            election = _elect_preferred(scratch, topic, ref, "preferred_election")
        if election.record is not None:
            records.append(election.record)
            scratch = apply_records(scratch, [election.record])
        if request.partitions is None and election.error_code == ErrorCode.ELECTION_NOT_NEEDED:
            continue
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

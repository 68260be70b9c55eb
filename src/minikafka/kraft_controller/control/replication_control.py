"""Kafka's ReplicationControlManager, pure: topics, leader elections and ISR changes as records.

Every function takes the current image and returns records (and a response); nothing changes until the shell
commits and replays them. Rejections and elections are logged here, once, at generation time.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.topic import is_internal
from minikafka.common.topic_config import TOPIC_CONFIGS, config_problem
from minikafka.kraft_controller.control.alter_partition_validation import Accepted, validate_alter_partition
from minikafka.kraft_controller.control.brokers_to_isrs import BrokersToIsrs, PartitionKey
from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.operation_bound import OperationTooLarge, RecordBudget
from minikafka.kraft_controller.control.partition_change import (
    KAFKA_TOPIC_DEFAULTS,
    Eligible,
    PartitionChangeOutcome,
    TopicDefaults,
    build_partition_change,
    elr_context,
    isr_without,
    leader_eligibility,
)
from minikafka.kraft_controller.control.requests import (
    AlterPartitionPartition,
    AlterPartitionPartitionResult,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionTopicResult,
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from minikafka.kraft_controller.metadata.image import (
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from minikafka.kraft_controller.metadata.records import (
    NO_LEADER,
    BrokerRegistrationChange,
    BrokerStatus,
    ConfigRecord,
    ConfigResourceType,
    FenceBroker,
    Partition,
    PartitionChange,
    Record,
    RemoveTopic,
    Topic,
    UnfenceBroker,
)

log = structlog.get_logger()

MAX_TOPIC_NAME_LENGTH = 249
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


class RandomSource(Protocol):
    """What the caller injects (e.g. a seeded `random.Random`): the core never imports `random`."""

    def randint(self, a: int, b: int) -> int: ...

    def randbytes(self, n: int) -> bytes: ...


def apply_records(image: MetadataImage, records: Iterable[Record]) -> MetadataImage:
    """A scratch image with `records` applied, to generate later records of the same batch against.
    Offsets are not real here, so this is never used for a RegisterBroker that takes its offset as epoch."""
    for record in records:
        image = image.replay(record, image.offset)
    return image


# ---- leader and ISR updates on broker state changes ----


def unclean_enabled(image: MetadataImage, topic_name: str, default: bool) -> bool:
    """unclean.leader.election.enable: the topic's own, else the cluster-wide dynamic one, else the controller's."""
    value = image.topic_config(topic_name, UNCLEAN_LEADER_ELECTION_ENABLE)
    if value is None:
        value = image.dynamic_broker_config(UNCLEAN_LEADER_ELECTION_ENABLE)
    return default if value is None else value.strip().lower() == "true"


# Partitions examined, and partition changes generated, per slice of a change over a broker's partitions: about
# 50 us a change here, so a slice stays within milliseconds where a fencing of 10,000 took seconds on a loaded machine.
PARTITIONS_PER_SLICE = 2000
CHANGES_PER_SLICE = 200


def partitions_under(index: BrokersToIsrs | None, broker_id: int) -> list[PartitionKey] | None:
    """The partitions `index` files under `broker_id` now (NO_LEADER: the leaderless ones); None without an
    index, for a scan of every partition."""
    return None if index is None else index.partitions_of(broker_id)


def _candidates(
    image: MetadataImage, keys: Sequence[PartitionKey] | None
) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    """The partitions of `keys` in `image` (every partition when None), in `image.partitions()`'s order."""
    if keys is None:
        yield from image.partitions()
        return
    for name, partition_id in keys:
        topic = image.topics_by_name.get(name)
        partition = None if topic is None else topic.partitions.get(partition_id)
        if topic is not None and partition is not None:
            yield topic, partition_id, partition


def _update_partitions(
    image: MetadataImage,
    keys: Sequence[PartitionKey] | None,
    select: Callable[[TopicImage, PartitionRegistration], bool],
    target_isr: Callable[[PartitionRegistration], tuple[int, ...] | None],
    eligible: Eligible,
    reason: str,
    defaults: TopicDefaults,
    unclean_shutdown_replicas: frozenset[int] = frozenset(),
) -> list[Record]:
    slices = _partition_changes(image, keys, select, target_isr, eligible, reason, defaults, unclean_shutdown_replicas)
    return [record for part in slices for record in part]


def _partition_changes(
    image: MetadataImage,
    keys: Sequence[PartitionKey] | None,
    select: Callable[[TopicImage, PartitionRegistration], bool],
    target_isr: Callable[[PartitionRegistration], tuple[int, ...] | None],
    eligible: Eligible,
    reason: str,
    defaults: TopicDefaults,
    unclean_shutdown_replicas: frozenset[int] = frozenset(),
) -> Iterator[list[Record]]:
    """The partition changes of those `keys` name (every partition when None) that `select` picks, a slice at a
    time: at most CHANGES_PER_SLICE changes or PARTITIONS_PER_SLICE partitions examined a slice (a slice may be
    empty), all generated against `image`."""
    records: list[Record] = []
    examined = 0
    for topic, partition_id, partition in _candidates(image, keys):
        examined += 1
        if examined == PARTITIONS_PER_SLICE or len(records) == CHANGES_PER_SLICE:
            yield records
            records, examined = [], 0
        if not select(topic, partition):
            continue
        unclean = unclean_enabled(image, topic.name, defaults.unclean_leader_election_enable)
        elr = elr_context(image, topic.name, partition, defaults, unclean_shutdown_replicas)
        outcome = build_partition_change(
            topic.topic_id, partition_id, partition, eligible, reason, target_isr(partition), unclean=unclean, elr=elr
        )
        if outcome.record is not None:
            records.append(outcome.record)
            log_election(topic, partition_id, partition, outcome, reason, "UNCLEAN" if outcome.unclean else None)
            log_reassignment_completed(topic, partition_id, partition, outcome)
            log_elr_change(topic, partition_id, partition, outcome.record)
    yield records


def log_elr_change(topic: TopicImage, partition_id: int, partition: PartitionRegistration, record: Record) -> None:
    """One event per change of a partition's ELR or LastKnownElr (KIP-966)."""
    assert isinstance(record, PartitionChange)
    if record.elr is None and record.last_known_elr is None:
        return
    log.info(
        "elr_changed",
        topic=topic.name,
        topic_id=str(topic.topic_id),
        partition=partition_id,
        elr=list(partition.elr if record.elr is None else record.elr),
        previous_elr=list(partition.elr),
        last_known_elr=list(partition.last_known_elr if record.last_known_elr is None else record.last_known_elr),
        isr=list(partition.isr if record.isr is None else record.isr),
        reason=record.reason,
    )


def log_election(
    topic: TopicImage,
    partition_id: int,
    partition: PartitionRegistration,
    outcome: PartitionChangeOutcome,
    reason: str,
    election_type: str | None = None,
) -> None:
    """`election_type`: Kafka's PREFERRED or UNCLEAN for an asked-for election; None when a broker's state
    change forced it."""
    if outcome.leader != outcome.previous_leader:
        log.info(
            "leader_elected",
            topic=topic.name,
            topic_id=str(topic.topic_id),
            partition=partition_id,
            leader=outcome.leader,
            previous_leader=outcome.previous_leader,
            leader_epoch=partition.leader_epoch + 1,
            reason=reason,
            election_type=election_type,
            unclean=election_type == "UNCLEAN",
        )


def log_reassignment_completed(
    topic: TopicImage, partition_id: int, partition: PartitionRegistration, outcome: PartitionChangeOutcome
) -> None:
    if outcome.reassignment_completed and outcome.record is not None:
        log.info(
            "reassignment_completed",
            topic=topic.name,
            topic_id=str(topic.topic_id),
            partition=partition_id,
            replicas=list(outcome.record.replicas or partition.replicas),
            removed=list(partition.removing_replicas),
            added=list(partition.adding_replicas),
            leader=outcome.leader,
            reason=outcome.record.reason,
        )


def fence_broker(
    image: MetadataImage,
    broker_id: int,
    reason: str,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> list[Record]:
    """Move leadership off `broker_id`, drop it from every ISR (with the ELR off, not where it is the last member),
    then fence it. `index`: `image`'s (or an earlier image's that files the broker's partitions at least as widely),
    else every partition is read."""
    return [record for part in fence_broker_slices(image, broker_id, reason, defaults, index) for record in part]


def fence_broker_slices(
    image: MetadataImage,
    broker_id: int,
    reason: str,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> Iterator[list[Record]]:
    """`fence_broker`'s records a slice at a time (see `_partition_changes`), the FenceBroker record last; the
    broker's partitions are taken from `index` now, not when the slices are generated."""
    return _fence_slices(image, broker_id, reason, defaults, partitions_under(index, broker_id))


def _fence_slices(
    image: MetadataImage, broker_id: int, reason: str, defaults: TopicDefaults, keys: list[PartitionKey] | None
) -> Iterator[list[Record]]:
    registration = image.broker(broker_id)
    if registration is None or registration.status is BrokerStatus.FENCED:
        return
    yield from _partition_changes(
        image,
        keys,
        select=lambda t, p: broker_id in p.isr or p.leader == broker_id,
        target_isr=lambda p: isr_without(p, broker_id),
        eligible=leader_eligibility(image, excluded={broker_id}),
        reason=f"fence:{reason}",
        defaults=defaults,
    )
    yield [FenceBroker(broker_id=broker_id, broker_epoch=registration.broker_epoch, reason=reason)]


def unfence_broker(
    image: MetadataImage,
    broker_id: int,
    reason: str,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> list[Record]:
    """Unfence, then give a leader to every leaderless partition the broker can now lead: as its ISR or ELR
    member, as its last known leader, or, where unclean.leader.election.enable holds, as any replica."""
    return [record for part in unfence_broker_slices(image, broker_id, reason, defaults, index) for record in part]


def unfence_broker_slices(
    image: MetadataImage,
    broker_id: int,
    reason: str,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> Iterator[list[Record]]:
    """`unfence_broker`'s records a slice at a time, the UnfenceBroker record first; the leaderless partitions are
    taken from `index` now."""
    return _unfence_slices(image, broker_id, reason, defaults, partitions_under(index, NO_LEADER))


def _unfence_slices(
    image: MetadataImage, broker_id: int, reason: str, defaults: TopicDefaults, keys: list[PartitionKey] | None
) -> Iterator[list[Record]]:
    registration = image.broker(broker_id)
    if registration is None or registration.status is not BrokerStatus.FENCED:
        return
    yield [UnfenceBroker(broker_id=broker_id, broker_epoch=registration.broker_epoch, reason=reason)]
    yield from _partition_changes(
        image,
        keys,
        select=lambda t, p: (
            p.leader == NO_LEADER
            and (
                broker_id in p.isr
                or broker_id in p.elr
                or broker_id in p.last_known_elr
                or (broker_id in p.replicas and unclean_enabled(image, t.name, defaults.unclean_leader_election_enable))
            )
        ),
        target_isr=lambda p: None,
        eligible=leader_eligibility(image, included={broker_id}),
        reason="unfence",
        defaults=defaults,
    )


def enter_controlled_shutdown(
    image: MetadataImage,
    broker_id: int,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> list[Record]:
    """Mark the broker shutting down and move its leaderships and ISR memberships away first (with the ELR off the
    last member stays; with it on, a member leaving an ISR below min ISR joins the ELR)."""
    return [record for part in controlled_shutdown_slices(image, broker_id, defaults, index) for record in part]


def controlled_shutdown_slices(
    image: MetadataImage,
    broker_id: int,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> Iterator[list[Record]]:
    """`enter_controlled_shutdown`'s records a slice at a time, the BrokerRegistrationChange record first; the
    broker's partitions are taken from `index` now."""
    return _controlled_shutdown_slices(image, broker_id, defaults, partitions_under(index, broker_id))


def _controlled_shutdown_slices(
    image: MetadataImage, broker_id: int, defaults: TopicDefaults, keys: list[PartitionKey] | None
) -> Iterator[list[Record]]:
    registration = image.broker(broker_id)
    if registration is None or registration.status is not BrokerStatus.UNFENCED:
        return
    yield [
        BrokerRegistrationChange(
            broker_id=broker_id, broker_epoch=registration.broker_epoch, in_controlled_shutdown=True
        )
    ]
    yield from _partition_changes(
        image,
        keys,
        select=lambda t, p: broker_id in p.isr or p.leader == broker_id,
        target_isr=lambda p: isr_without(p, broker_id),
        eligible=leader_eligibility(image, excluded={broker_id}),
        reason="controlled_shutdown",
        defaults=defaults,
    )


def handle_broker_shutdown(
    image: MetadataImage,
    broker_id: int,
    clean: bool,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> list[Record]:
    """A new incarnation registers (Kafka's handleBrokerShutdown, KAFKA-15586/KAFKA-18106). After an unclean
    shutdown with the ELR on it may have lost its unflushed tail: it leaves every ISR and ELR and may not lead.
    Otherwise it leaves the ISRs as a fenced broker does (an ELR member that stopped cleanly stays one)."""
    unclean = image.elr_enabled and not clean
    return _update_partitions(
        image,
        partitions_under(index, broker_id),
        select=lambda t, p: broker_id in p.isr or p.leader == broker_id or (unclean and broker_id in p.elr),
        target_isr=lambda p: isr_without(p, broker_id),
        eligible=leader_eligibility(image, excluded={broker_id}),
        reason="unclean_shutdown" if unclean else "re_registration",
        defaults=defaults,
        unclean_shutdown_replicas=frozenset({broker_id}) if unclean else frozenset(),
    )


def clear_elrs(image: MetadataImage) -> list[Record]:
    """eligible.leader.replicas.version back to 0: no partition keeps an ELR or a LastKnownElr."""
    return [
        PartitionChange(topic.topic_id, index, elr=(), last_known_elr=(), reason="elr_disabled")
        for topic, index, p in image.partitions()
        if p.elr or p.last_known_elr
    ]


def leaderships(image: MetadataImage, broker_id: int, index: BrokersToIsrs | None = None) -> int:
    """How many partitions `broker_id` leads: of those `index` files under it, else of every partition."""
    if index is None:
        return sum(1 for t in image.topics_by_id.values() for p in t.partitions.values() if p.leader == broker_id)
    keys = index.partitions_of(broker_id)
    return sum(1 for _, _, p in _candidates(image, keys) if p.leader == broker_id)


# ---- AlterPartition ----


def alter_partition(
    image: MetadataImage, request: AlterPartitionRequest, config: ControlConfig
) -> ControllerResult[AlterPartitionResponse]:
    requester = image.broker(request.broker_id)
    if requester is None or requester.broker_epoch != request.broker_epoch:
        log.warning(
            "alter_partition_rejected",
            error=ErrorCode.STALE_BROKER_EPOCH.name,
            broker_id=request.broker_id,
            expected_broker_epoch=None if requester is None else requester.broker_epoch,
            actual_broker_epoch=request.broker_epoch,
        )
        raise KafkaError(ErrorCode.STALE_BROKER_EPOCH, f"broker {request.broker_id} epoch {request.broker_epoch}")
    records: list[Record] = []
    scratch = image
    topic_results = []
    for topic_request in request.topics:
        results = []
        for partition_request in topic_request.partitions:
            altered = _alter_one_partition(
                scratch, request.broker_id, topic_request.topic_id, partition_request, config
            )
            if altered.record is not None:
                records.append(altered.record)
                scratch = altered.image
            results.append(altered.result)
        topic_results.append(AlterPartitionTopicResult(topic_request.topic_id, tuple(results)))
    return ControllerResult(tuple(records), AlterPartitionResponse(ErrorCode.NONE, tuple(topic_results)))


@dataclass(frozen=True)
class _PartitionAltered:
    image: MetadataImage  # with the record applied
    record: Record | None
    result: AlterPartitionPartitionResult


def _alter_one_partition(
    scratch: MetadataImage,
    broker_id: int,
    topic_id: uuid.UUID,
    partition_request: AlterPartitionPartition,
    config: ControlConfig,
) -> _PartitionAltered:
    index = partition_request.partition_index
    proposed = [(s.broker_id, s.broker_epoch) for s in partition_request.new_isr_with_epochs]
    topic = scratch.topic(topic_id)
    verdict = validate_alter_partition(
        scratch,
        broker_id,
        topic,
        partition_request,
        config.alter_partition_broker_epoch_check,
        config.alter_partition_partition_epoch_check,
    )
    if not isinstance(verdict, Accepted):
        log.warning(
            "alter_partition_rejected",
            error=verdict.error.name,
            broker_id=broker_id,
            topic=None if topic is None else topic.name,
            topic_id=str(topic_id),
            partition=index,
            proposed_isr=proposed,
            **verdict.details,
        )
        return _PartitionAltered(scratch, None, AlterPartitionPartitionResult(index, verdict.error))
    assert topic is not None
    current = topic.partitions[index]
    outcome = build_partition_change(
        topic.topic_id,
        index,
        current,
        leader_eligibility(scratch),
        reason="alter_partition",
        target_isr=verdict.new_isr,
        target_leader_recovery_state=partition_request.leader_recovery_state,
        elr=elr_context(scratch, topic.name, current, config.topic_defaults),
    )
    if outcome.record is not None:
        scratch = apply_records(scratch, [outcome.record])
        log_election(topic, index, current, outcome, "alter_partition")
        log_reassignment_completed(topic, index, current, outcome)
        log_elr_change(topic, index, current, outcome.record)
    after = scratch.partition(topic.topic_id, index)
    assert after is not None
    log.info(
        "alter_partition_accepted",
        broker_id=broker_id,
        topic=topic.name,
        topic_id=str(topic.topic_id),
        partition=index,
        isr=list(after.isr),
        proposed_isr=proposed,
        leader_epoch=after.leader_epoch,
        partition_epoch=after.partition_epoch,
        changed=outcome.record is not None,
    )
    result = AlterPartitionPartitionResult(
        partition_index=index,
        error_code=ErrorCode.NONE,
        leader_id=after.leader,
        leader_epoch=after.leader_epoch,
        isr=after.isr,
        leader_recovery_state=after.leader_recovery_state,
        partition_epoch=after.partition_epoch,
    )
    return _PartitionAltered(scratch, outcome.record, result)


# ---- CreateTopics ----


class _TopicRejected(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _validate_name(name: str) -> None:
    if not name or name in {".", ".."} or len(name) > MAX_TOPIC_NAME_LENGTH or not _TOPIC_NAME.match(name):
        raise _TopicRejected(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic name {name!r} must be 1-{MAX_TOPIC_NAME_LENGTH} of [a-zA-Z0-9._-] and not '.' or '..'",
        )


def _validate_configs(configs: Mapping[str, str]) -> None:
    """The same declarations IncrementalAlterConfigs checks with (common.topic_config), Kafka's messages."""
    for key, value in configs.items():
        problem = config_problem(TOPIC_CONFIGS, key, value)
        if problem is not None:
            raise _TopicRejected(ErrorCode.INVALID_CONFIG, problem)


def _usable_brokers(image: MetadataImage) -> list[int]:
    return sorted(b.broker_id for b in image.brokers.values() if b.status is BrokerStatus.UNFENCED)


def _assignment(
    image: MetadataImage, topic: CreatableTopic, config: ControlConfig, rng: RandomSource
) -> list[tuple[int, ...]]:
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise _TopicRejected(
                ErrorCode.INVALID_REQUEST, "replica assignments given with num_partitions or replication_factor"
            )
        by_index = {a.partition_index: a.broker_ids for a in topic.assignments}
        if sorted(by_index) != list(range(len(topic.assignments))):
            raise _TopicRejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partition indexes must be 0..N-1, each once")
        lengths = {len(replicas) for replicas in by_index.values()}
        if len(lengths) != 1:
            raise _TopicRejected(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "all partitions must have the same length")
        for index, replicas in sorted(by_index.items()):
            if not replicas or len(set(replicas)) != len(replicas):
                raise _TopicRejected(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"partition {index}: empty or duplicate replicas {replicas}"
                )
            unknown = [b for b in replicas if image.broker(b) is None]
            if unknown:
                raise _TopicRejected(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"partition {index}: unregistered brokers {unknown}"
                )
        return [tuple(by_index[i]) for i in range(len(by_index))]
    partitions = config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    factor = config.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
    if partitions <= 0:
        raise _TopicRejected(ErrorCode.INVALID_PARTITIONS, f"number of partitions must be positive, got {partitions}")
    if factor <= 0:
        raise _TopicRejected(ErrorCode.INVALID_REPLICATION_FACTOR, f"replication factor must be positive, got {factor}")
    usable = _usable_brokers(image)
    if len(usable) < factor:
        raise _TopicRejected(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {factor} is larger than the {len(usable)} unfenced broker(s)",
        )
    # Round robin from a random start, so partition leaders (first replicas) spread over the brokers.
    start = rng.randint(0, len(usable) - 1)
    return [tuple(usable[(start + p + r) % len(usable)] for r in range(factor)) for p in range(partitions)]


def _new_topic_id(image: MetadataImage, taken: set[uuid.UUID], rng: RandomSource) -> uuid.UUID:
    while True:
        topic_id = uuid.UUID(bytes=rng.randbytes(16), version=4)
        if topic_id not in image.topics_by_id and topic_id not in taken:
            return topic_id


def create_topics(
    image: MetadataImage, request: CreateTopicsRequest, config: ControlConfig, rng: RandomSource
) -> ControllerResult[CreateTopicsResponse]:
    """All or nothing past Kafka's bound: an operation of more than MAX_RECORDS_PER_USER_OP records is refused
    whole with POLICY_VIOLATION (validate-only too, as Kafka builds the records either way)."""
    try:
        return _create_topics(image, request, config, rng, RecordBudget())
    except OperationTooLarge as too_large:
        log.warning("create_topics_rejected", error=ErrorCode.POLICY_VIOLATION.name, message=str(too_large))
        refused = tuple(
            CreatableTopicResult(t.name, None, ErrorCode.POLICY_VIOLATION, str(too_large)) for t in request.topics
        )
        return ControllerResult((), CreateTopicsResponse(refused))


def _records_of(topic: CreatableTopic, config: ControlConfig) -> int:
    """The records creating `topic` writes: its Topic record, one per config, one per partition."""
    partitions = len(topic.assignments) if topic.assignments else topic.num_partitions
    if partitions == -1:
        partitions = config.num_partitions
    return 1 + len(topic.configs) + max(partitions, 0)


def _create_topics(
    image: MetadataImage, request: CreateTopicsRequest, config: ControlConfig, rng: RandomSource, budget: RecordBudget
) -> ControllerResult[CreateTopicsResponse]:
    names = [t.name for t in request.topics]
    records: list[Record] = []
    results: list[CreatableTopicResult] = []
    taken: set[uuid.UUID] = set()
    for topic in request.topics:
        try:
            if names.count(topic.name) > 1:
                raise _TopicRejected(ErrorCode.INVALID_REQUEST, f"topic {topic.name!r} appears more than once")
            _validate_name(topic.name)
            if topic.name in image.topics_by_name:
                raise _TopicRejected(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {topic.name!r} already exists")
            _validate_configs(topic.configs)
            budget.take(_records_of(topic, config))
            assignment = _assignment(image, topic, config, rng)
            isrs = []
            for index, replicas in enumerate(assignment):
                isr = tuple(b for b in replicas if image.brokers[b].status is BrokerStatus.UNFENCED)
                if not isr:
                    raise _TopicRejected(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"partition {index}: every replica in {replicas} is fenced or shutting down",
                    )
                isrs.append(isr)
        except _TopicRejected as rejection:
            log.warning("create_topic_rejected", topic=topic.name, error=rejection.code.name, message=rejection.message)
            results.append(CreatableTopicResult(topic.name, None, rejection.code, rejection.message))
            continue
        topic_id = _new_topic_id(image, taken, rng)
        taken.add(topic_id)
        results.append(
            CreatableTopicResult(topic.name, topic_id, ErrorCode.NONE, "", len(assignment), len(assignment[0]))
        )
        if request.validate_only:
            continue
        records.append(Topic(name=topic.name, topic_id=topic_id))
        # Only the configs given: a topic without one follows the brokers' own value (their default), as in Kafka;
        # Kafka's ConfigRecords, between the TopicRecord and the PartitionRecords.
        records += [
            ConfigRecord(ConfigResourceType.TOPIC, topic.name, key, value)
            for key, value in sorted(topic.configs.items())
        ]
        records += [
            Partition(topic_id=topic_id, partition_id=index, replicas=replicas, isr=isr, leader=isr[0])
            for index, (replicas, isr) in enumerate(zip(assignment, isrs, strict=True))
        ]
    return ControllerResult(tuple(records), CreateTopicsResponse(tuple(results)))


# ---- DeleteTopics ----


def delete_topics(image: MetadataImage, request: DeleteTopicsRequest) -> ControllerResult[DeleteTopicsResponse]:
    """One RemoveTopic record per existing topic named; an unknown name is UNKNOWN_TOPIC_OR_PARTITION (Kafka's
    answer when deleting by name), an internal topic INVALID_TOPIC_EXCEPTION. A name given more than once is not
    deleted and gets one INVALID_REQUEST "Duplicate topic name." answer, as Kafka's ControllerApis answers."""
    records: list[Record] = []
    results: list[DeletableTopicResult] = []
    counts = Counter(request.names)
    for name in dict.fromkeys(request.names):
        topic = image.topics_by_name.get(name)
        if counts[name] > 1:
            log.warning("delete_topic_rejected", topic=name, error=ErrorCode.INVALID_REQUEST.name)
            results.append(DeletableTopicResult(name, None, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
            continue
        if topic is None:
            message = f"topic {name!r} does not exist"
            log.warning("delete_topic_rejected", topic=name, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.name)
            results.append(DeletableTopicResult(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message))
            continue
        if is_internal(name):
            # Its coordinator's state lives there: whatever path asks, the controller refuses.
            message = f"Cannot delete internal topic {name}"
            log.warning("delete_topic_rejected", topic=name, error=ErrorCode.INVALID_TOPIC_EXCEPTION.name)
            results.append(DeletableTopicResult(name, topic.topic_id, ErrorCode.INVALID_TOPIC_EXCEPTION, message))
            continue
        records.append(RemoveTopic(topic.topic_id))
        results.append(DeletableTopicResult(name, topic.topic_id, ErrorCode.NONE))
    return ControllerResult(tuple(records), DeleteTopicsResponse(tuple(results)))

"""Kafka's ClusterControlManager, pure: broker registration, broker epochs, and heartbeat handling.

A broker's epoch is the offset of its RegisterBroker record, and every registration writes one (as Kafka's does): the
same incarnation registering again (a retry whose answer was lost, or a broker told STALE_BROKER_EPOCH) gets a new
epoch that is committed before it is answered. A new incarnation is refused while the old session is live
(DUPLICATE_BROKER_REGISTRATION), else it gets a new epoch; an unfenced registration is fenced first. A new
incarnation that names the previous one's epoch stopped cleanly (KAFKA-15586); any other had an unclean shutdown.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import structlog

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control.brokers_to_isrs import BrokersToIsrs
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.heartbeat_manager import (
    AwaitShutdownPropagation,
    EnterControlledShutdown,
    Fence,
    HeartbeatDecision,
    HeartbeatManager,
    ShutdownNow,
    StayFenced,
    StayUnfenced,
    Unfence,
    next_broker_state,
)
from minikafka.kraft_controller.control.partition_change import KAFKA_TOPIC_DEFAULTS, TopicDefaults
from minikafka.kraft_controller.control.replication_control import (
    apply_records,
    controlled_shutdown_slices,
    fence_broker,
    fence_broker_slices,
    handle_broker_shutdown,
    leaderships,
    unfence_broker_slices,
)
from minikafka.kraft_controller.control.requests import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from minikafka.kraft_controller.metadata.image import BrokerRegistration, MetadataImage
from minikafka.kraft_controller.metadata.records import BrokerStatus, Record, RegisterBroker

log = structlog.get_logger()

PENDING_BROKER_EPOCH = -1


def register_broker(
    image: MetadataImage,
    heartbeats: HeartbeatManager,
    request: BrokerRegistrationRequest,
    now_ms: int,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> ControllerResult[BrokerRegistrationResponse]:
    """`index`: `image`'s partitions by broker (else every partition is read)."""
    if request.broker_id < 0 or not request.incarnation_id:
        log.warning(
            "broker_registration_rejected",
            error=ErrorCode.INVALID_REQUEST.name,
            broker_id=request.broker_id,
            actual_incarnation_id=request.incarnation_id,
            why="broker id must be >= 0 and incarnation id non-empty",
        )
        raise KafkaError(ErrorCode.INVALID_REQUEST, "broker id must be >= 0 and incarnation id non-empty")
    existing = image.broker(request.broker_id)
    records: list[Record] = []
    if existing is not None and existing.status is not BrokerStatus.FENCED:
        same_process = existing.incarnation_id == request.incarnation_id
        if not same_process and heartbeats.is_live(request.broker_id, now_ms):
            session = heartbeats.sessions[request.broker_id]
            log.warning(
                "broker_registration_rejected",
                error=ErrorCode.DUPLICATE_BROKER_REGISTRATION.name,
                broker_id=request.broker_id,
                expected_incarnation_id=existing.incarnation_id,
                actual_incarnation_id=request.incarnation_id,
                broker_epoch=existing.broker_epoch,
                session_expires_in_ms=session.last_contact_ms + heartbeats.session_timeout_ms - now_ms,
            )
            raise KafkaError(
                ErrorCode.DUPLICATE_BROKER_REGISTRATION,
                f"broker {request.broker_id} is still registered with incarnation {existing.incarnation_id}",
            )
        # The old incarnation's session ran out (or the same process registers again): the new registration
        # starts fenced, so its leaderships move first, in this batch.
        records += fence_broker(image, request.broker_id, "re_registration", defaults, index)
    if existing is not None and existing.incarnation_id != request.incarnation_id:
        # The fencing only took the broker out of partitions: `index` still files all it is left in.
        records += _shutdown_records(apply_records(image, records), existing, request, defaults, index)
    records.append(
        RegisterBroker(
            broker_id=request.broker_id,
            incarnation_id=request.incarnation_id,
            endpoints=request.listeners,
            rack=request.rack,
            status=BrokerStatus.FENCED,  # unfenced once its metadata catches up to this record
        )
    )
    return ControllerResult(
        tuple(records),
        BrokerRegistrationResponse(ErrorCode.NONE, PENDING_BROKER_EPOCH),
        broker_epoch_record_index=len(records) - 1,
    )


def _shutdown_records(
    image: MetadataImage,
    existing: BrokerRegistration,
    request: BrokerRegistrationRequest,
    defaults: TopicDefaults,
    index: BrokersToIsrs | None,
) -> list[Record]:
    clean = request.previous_broker_epoch == existing.broker_epoch
    records = handle_broker_shutdown(image, request.broker_id, clean, defaults, index)
    log.info(
        "broker_shutdown_detected",
        broker_id=request.broker_id,
        clean=clean,
        expected_broker_epoch=existing.broker_epoch,
        actual_previous_broker_epoch=request.previous_broker_epoch,
        partition_changes=len(records),
    )
    return records


def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int, event: str) -> BrokerRegistration:
    """The registration the request's epoch names, or STALE_BROKER_EPOCH (logged once as `event`)."""
    registration = image.broker(broker_id)
    if registration is None or registration.broker_epoch != broker_epoch:
        log.warning(
            event,
            error=ErrorCode.STALE_BROKER_EPOCH.name,
            broker_id=broker_id,
            expected_broker_epoch=None if registration is None else registration.broker_epoch,
            actual_broker_epoch=broker_epoch,
        )
        raise KafkaError(ErrorCode.STALE_BROKER_EPOCH, f"broker {broker_id} epoch {broker_epoch}")
    return registration


@dataclass(frozen=True)
class HeartbeatOutcome:
    result: ControllerResult[BrokerHeartbeatResponse]
    decision: HeartbeatDecision
    controlled_shutdown_offset: int  # to keep in the broker's session (-1: none)


def broker_heartbeat(
    image: MetadataImage,
    heartbeats: HeartbeatManager,
    request: BrokerHeartbeatRequest,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> HeartbeatOutcome:
    """Records and response for one heartbeat. The caller records the contact in the soft heartbeat state.
    `defaults`: the controller's values for topics without their own; `index`: `image`'s partitions by broker."""
    registration = check_broker_epoch(image, request.broker_id, request.broker_epoch, "broker_heartbeat_rejected")
    # Only a broker in controlled shutdown waits on its leaderships: counting them reads every partition.
    in_shutdown = registration.status is BrokerStatus.CONTROLLED_SHUTDOWN
    led = leaderships(image, request.broker_id, index) if in_shutdown else 0
    shutdown_offset = -1
    if in_shutdown and led == 0:
        # Set once, when its last leadership has moved: every record so far, the moves included, must reach the
        # active brokers before this one may go.
        shutdown_offset = heartbeats.controlled_shutdown_offset(request.broker_id)
        shutdown_offset = shutdown_offset if shutdown_offset >= 0 else image.offset
    lowest_active = heartbeats.lowest_active_offset(image)
    decision = next_broker_state(registration, request, led, shutdown_offset, lowest_active)
    later: Iterator[Sequence[Record]] | None = None
    should_shutdown = False
    match decision:
        case Unfence():
            later = unfence_broker_slices(image, request.broker_id, "caught_up", defaults, index)
        case Fence(reason=reason):
            if request.offline_log_dirs:
                log.warning(
                    "broker_log_dirs_offline", broker_id=request.broker_id, log_dirs=list(request.offline_log_dirs)
                )
            later = fence_broker_slices(image, request.broker_id, reason, defaults, index)
        case EnterControlledShutdown():
            later = controlled_shutdown_slices(image, request.broker_id, defaults, index)
        case ShutdownNow():
            should_shutdown = True
            later = fence_broker_slices(image, request.broker_id, "controlled_shutdown_complete", defaults, index)
        case AwaitShutdownPropagation(controlled_shutdown_offset=wanted, lowest_active_offset=lowest):
            log.info(
                "controlled_shutdown_awaiting_metadata",
                broker_id=request.broker_id,
                expected_lowest_active_offset=wanted,
                actual_lowest_active_offset=lowest,
            )
    # Its state once the records commit, known from the decision: the records themselves are generated later.
    fenced = isinstance(decision, Fence | ShutdownNow) or (
        registration.status is BrokerStatus.FENCED and not isinstance(decision, Unfence)
    )
    response = BrokerHeartbeatResponse(
        error_code=ErrorCode.NONE,
        is_caught_up=request.current_metadata_offset >= registration.broker_epoch,
        is_fenced=fenced,
        should_shutdown=should_shutdown,
    )
    return HeartbeatOutcome(ControllerResult((), response, later=later), decision, shutdown_offset)


def unchanged_heartbeat_response(
    committed: BrokerRegistration | None, proposed: BrokerRegistration | None, request: BrokerHeartbeatRequest
) -> BrokerHeartbeatResponse | None:
    """The answer to a heartbeat that changes nothing and reads only committed state, or None when the heartbeat
    must go through the event queue: its broker's registration differs between the committed and the proposed
    image (a change of it is pending), it is in controlled shutdown (its answer counts leaderships and offsets),
    its epoch is stale (the queue logs the rejection), or it asks for a state change (records to write)."""
    if committed is None or committed is not proposed or committed.broker_epoch != request.broker_epoch:
        return None
    if committed.status is BrokerStatus.CONTROLLED_SHUTDOWN:
        return None
    if not isinstance(next_broker_state(committed, request, 0), StayUnfenced | StayFenced):
        return None
    return BrokerHeartbeatResponse(
        error_code=ErrorCode.NONE,
        is_caught_up=request.current_metadata_offset >= committed.broker_epoch,
        is_fenced=committed.status is BrokerStatus.FENCED,
        should_shutdown=False,
    )


def fence_one_stale_broker(
    image: MetadataImage,
    heartbeats: HeartbeatManager,
    now_ms: int,
    defaults: TopicDefaults = KAFKA_TOPIC_DEFAULTS,
    index: BrokersToIsrs | None = None,
) -> Iterator[list[Record]] | None:
    """The fencing, a slice at a time, of the broker whose session ran out longest ago; None when none has (Kafka's
    maybeFenceOneStaleBroker): one broker an event, so each fencing is seen before the next is generated. The
    next tick fences the next."""
    broker_id = heartbeats.one_stale(image, now_ms)
    if broker_id is None:
        return None
    session = heartbeats.sessions[broker_id]
    log.warning(
        "broker_session_expired",
        broker_id=broker_id,
        last_contact_ms=session.last_contact_ms,
        now_ms=now_ms,
        session_timeout_ms=heartbeats.session_timeout_ms,
    )
    return fence_broker_slices(image, broker_id, "session_timeout", defaults, index)

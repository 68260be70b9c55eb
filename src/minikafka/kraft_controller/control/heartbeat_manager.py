"""Kafka's BrokerHeartbeatManager: soft liveness state (never in the log) and the next-state decision.

Sessions are rebuilt on failover (`reset_all`: every broker's last contact becomes now), so a new active controller
gives every broker a full session timeout before fencing it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from immutables import Map

from minikafka.kraft_controller.control.requests import BrokerHeartbeatRequest
from minikafka.kraft_controller.metadata.image import BrokerRegistration, MetadataImage
from minikafka.kraft_controller.metadata.records import BrokerStatus


@dataclass(frozen=True)
class BrokerSession:
    broker_id: int
    last_contact_ms: int
    metadata_offset: int = -1
    # In controlled shutdown with no leaderships left: the metadata offset every active broker must have replayed
    # (the moves of its leaderships) before it may go; -1 until then.
    controlled_shutdown_offset: int = -1


@dataclass(frozen=True)
class HeartbeatManager:
    session_timeout_ms: int
    sessions: Map[int, BrokerSession] = field(default_factory=Map)  # persistent: a heartbeat is O(log brokers)
    # Heartbeats generated and not yet answered (their answer waits for earlier writes to commit), by broker: the
    # broker sends no other meanwhile, so that wait is the controller's silence, not the broker's.
    awaiting_answer: Map[int, int] = field(default_factory=Map)

    def touch(self, broker_id: int, now_ms: int, metadata_offset: int = -1) -> HeartbeatManager:
        previous = self.sessions.get(broker_id)
        shutdown_offset = previous.controlled_shutdown_offset if previous is not None else -1
        session = BrokerSession(broker_id, now_ms, metadata_offset, shutdown_offset)
        return replace(self, sessions=self.sessions.set(broker_id, session))

    def answer_pending(self, broker_id: int, change: int) -> HeartbeatManager:
        """One more (+1) or one fewer (-1) heartbeat of the broker awaiting its answer."""
        count = max(0, self.awaiting_answer.get(broker_id, 0) + change)
        if count:
            return replace(self, awaiting_answer=self.awaiting_answer.set(broker_id, count))
        if broker_id in self.awaiting_answer:
            return replace(self, awaiting_answer=self.awaiting_answer.delete(broker_id))
        return self

    def with_controlled_shutdown_offset(self, broker_id: int, offset: int) -> HeartbeatManager:
        session = self.sessions.get(broker_id)
        if session is None or session.controlled_shutdown_offset == offset:
            return self
        updated = replace(session, controlled_shutdown_offset=offset)
        return replace(self, sessions=self.sessions.set(broker_id, updated))

    def controlled_shutdown_offset(self, broker_id: int) -> int:
        session = self.sessions.get(broker_id)
        return session.controlled_shutdown_offset if session is not None else -1

    def lowest_active_offset(self, image: MetadataImage) -> int | None:
        """The lowest metadata offset an active broker (unfenced, not shutting down) reported in its heartbeats;
        None when there is no active broker. An active broker without a session here (none since this controller
        became active) counts as -1: nothing is known to have reached it."""
        offsets = [
            self.sessions[broker_id].metadata_offset if broker_id in self.sessions else -1
            for broker_id, registration in image.brokers.items()
            if registration.status is BrokerStatus.UNFENCED
        ]
        return min(offsets) if offsets else None

    def remove(self, broker_id: int) -> HeartbeatManager:
        sessions = self.sessions.delete(broker_id) if broker_id in self.sessions else self.sessions
        return replace(self, sessions=sessions)

    def extended(self, by_ms: int) -> HeartbeatManager:
        """Every session moved on by `by_ms`: time this controller could not hear heartbeats does not count."""
        if by_ms <= 0 or not self.sessions:
            return self
        sessions = Map({b: replace(s, last_contact_ms=s.last_contact_ms + by_ms) for b, s in self.sessions.items()})
        return replace(self, sessions=sessions)

    def reset_all(self, broker_ids: Iterable[int], now_ms: int) -> HeartbeatManager:
        return HeartbeatManager(self.session_timeout_ms, Map({b: BrokerSession(b, now_ms) for b in broker_ids}))

    def is_live(self, broker_id: int, now_ms: int) -> bool:
        """Kafka fences once last contact + timeout < now; until then the session stands."""
        session = self.sessions.get(broker_id)
        return session is not None and session.last_contact_ms + self.session_timeout_ms >= now_ms

    def one_stale(self, image: MetadataImage, now_ms: int) -> int | None:
        """Kafka's findOneStaleBroker: of the brokers whose session ran out, the one heard from longest ago (the
        lowest id on a tie); None when none has."""
        stale = self.expired(image, now_ms)
        return min(stale, key=lambda b: (self.sessions[b].last_contact_ms, b)) if stale else None

    def expired(self, image: MetadataImage, now_ms: int) -> list[int]:
        """Unfenced (or shutting-down) brokers whose session ran out. A broker without a session has not been
        seen by this controller yet; `reset_all` on activation gives it one."""
        return sorted(
            broker_id
            for broker_id, registration in image.brokers.items()
            if registration.status is not BrokerStatus.FENCED
            and broker_id in self.sessions
            and broker_id not in self.awaiting_answer
            and not self.is_live(broker_id, now_ms)
        )


# ---- the next state a heartbeat asks for (Kafka's calculateNextBrokerState), as a sum type ----


@dataclass(frozen=True)
class StayFenced:
    pass


@dataclass(frozen=True)
class Unfence:
    pass


@dataclass(frozen=True)
class StayUnfenced:
    pass


@dataclass(frozen=True)
class Fence:
    """The broker asked to be fenced (want_fence), or its log directory failed (offline_log_dirs): a broker has one
    log dir, so none of its replicas can serve and all its leaderships move."""

    reason: str = "want_fence"


@dataclass(frozen=True)
class EnterControlledShutdown:
    pass


@dataclass(frozen=True)
class StayInControlledShutdown:
    leaderships: int


@dataclass(frozen=True)
class AwaitShutdownPropagation:
    """No leaderships left, but an active broker has not yet replayed the records that moved them (Kafka's lowest
    active offset below the broker's controlled shutdown offset): its clients would still be sent here."""

    controlled_shutdown_offset: int
    lowest_active_offset: int


@dataclass(frozen=True)
class ShutdownNow:
    pass


HeartbeatDecision = (
    StayFenced
    | Unfence
    | StayUnfenced
    | Fence
    | EnterControlledShutdown
    | StayInControlledShutdown
    | AwaitShutdownPropagation
    | ShutdownNow
)


def next_broker_state(
    registration: BrokerRegistration,
    request: BrokerHeartbeatRequest,
    leaderships: int,
    controlled_shutdown_offset: int = -1,
    lowest_active_offset: int | None = None,
) -> HeartbeatDecision:
    """`controlled_shutdown_offset`: for a broker in controlled shutdown with no leaderships left, the offset the
    other brokers must reach; `lowest_active_offset`: the lowest metadata offset an active broker reported (None:
    no active broker)."""
    match registration.status:
        case BrokerStatus.FENCED:
            if request.want_shutdown:
                return ShutdownNow()  # nothing to move: a fenced broker leads nothing
            if request.offline_log_dirs:
                return StayFenced()  # no replica of it can serve
            if not request.want_fence and request.current_metadata_offset >= registration.broker_epoch:
                return Unfence()  # caught up to its own registration
            return StayFenced()
        case BrokerStatus.UNFENCED:
            if request.offline_log_dirs:
                return Fence("offline_log_dirs")
            if request.want_shutdown:
                return EnterControlledShutdown()
            if request.want_fence:
                return Fence()
            return StayUnfenced()
        case BrokerStatus.CONTROLLED_SHUTDOWN:
            # Shut down only once every leadership has moved away and the active brokers have replayed the moves,
            # so the new leaders act as leaders before the old one goes.
            if leaderships:
                return StayInControlledShutdown(leaderships)
            if lowest_active_offset is None or lowest_active_offset >= controlled_shutdown_offset:
                return ShutdownNow()
            return AwaitShutdownPropagation(controlled_shutdown_offset, lowest_active_offset)
    raise AssertionError(f"unknown broker status {registration.status!r}")

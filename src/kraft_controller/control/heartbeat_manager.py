"""Kafka's BrokerHeartbeatManager: soft liveness state (never in the log) and the next-state decision.

Sessions are rebuilt on failover (`reset_all`: every broker's last contact becomes now), so a new active controller
gives every broker a full session timeout before fencing it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from immutables import Map

from kraft_controller.control.requests import BrokerHeartbeatRequest
from kraft_controller.metadata.image import BrokerRegistration, MetadataImage
from kraft_controller.metadata.records import BrokerStatus


@dataclass(frozen=True)
class BrokerSession:
    broker_id: int
    last_contact_ms: int
    metadata_offset: int = -1


@dataclass(frozen=True)
class HeartbeatManager:
    session_timeout_ms: int
    sessions: Map[int, BrokerSession] = field(default_factory=Map)  # persistent: a heartbeat is O(log brokers)

    def touch(self, broker_id: int, now_ms: int, metadata_offset: int = -1) -> HeartbeatManager:
        session = BrokerSession(broker_id, now_ms, metadata_offset)
        return HeartbeatManager(self.session_timeout_ms, self.sessions.set(broker_id, session))

    def remove(self, broker_id: int) -> HeartbeatManager:
        sessions = self.sessions.delete(broker_id) if broker_id in self.sessions else self.sessions
        return HeartbeatManager(self.session_timeout_ms, sessions)

    def reset_all(self, broker_ids: Iterable[int], now_ms: int) -> HeartbeatManager:
        return HeartbeatManager(self.session_timeout_ms, Map({b: BrokerSession(b, now_ms) for b in broker_ids}))

    def is_live(self, broker_id: int, now_ms: int) -> bool:
        """Kafka fences once last contact + timeout < now; until then the session stands."""
        session = self.sessions.get(broker_id)
        return session is not None and session.last_contact_ms + self.session_timeout_ms >= now_ms

    def expired(self, image: MetadataImage, now_ms: int) -> list[int]:
        """Unfenced (or shutting-down) brokers whose session ran out. A broker without a session has not been
        seen by this controller yet; `reset_all` on activation gives it one."""
        return sorted(
            broker_id
            for broker_id, registration in image.brokers.items()
            if registration.status is not BrokerStatus.FENCED
            and broker_id in self.sessions
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
    """The broker asked to be fenced (want_fence)."""


@dataclass(frozen=True)
class EnterControlledShutdown:
    pass


@dataclass(frozen=True)
class StayInControlledShutdown:
    leaderships: int


@dataclass(frozen=True)
class ShutdownNow:
    pass


HeartbeatDecision = (
    StayFenced | Unfence | StayUnfenced | Fence | EnterControlledShutdown | StayInControlledShutdown | ShutdownNow
)


def next_broker_state(
    registration: BrokerRegistration, request: BrokerHeartbeatRequest, leaderships: int
) -> HeartbeatDecision:
    match registration.status:
        case BrokerStatus.FENCED:
            if request.want_shutdown:
                return ShutdownNow()  # nothing to move: a fenced broker leads nothing
            if not request.want_fence and request.current_metadata_offset >= registration.broker_epoch:
                return Unfence()  # caught up to its own registration
            return StayFenced()
        case BrokerStatus.UNFENCED:
            if request.want_shutdown:
                return EnterControlledShutdown()
            if request.want_fence:
                return Fence()
            return StayUnfenced()
        case BrokerStatus.CONTROLLED_SHUTDOWN:
            # Shut down only once every leadership has moved away (committed and replayed into the image).
            return ShutdownNow() if leaderships == 0 else StayInControlledShutdown(leaderships)
    raise AssertionError(f"unknown broker status {registration.status!r}")

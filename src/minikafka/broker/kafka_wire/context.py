"""What the API modules of one listener share: the replica manager, the listener's name, the group coordinator."""

from __future__ import annotations

from dataclasses import dataclass, field

from minikafka.broker.fetch_session import FetchSessionCache
from minikafka.broker.group.coordinator import GroupCoordinator
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.transaction.coordinator import TransactionCoordinator
from minikafka.broker.transaction.verification import ProduceVerifier


@dataclass(frozen=True)
class WireContext:
    manager: ReplicaManager
    listener_name: str  # Metadata answers with each broker's endpoint on this listener
    groups: GroupCoordinator | None = None  # the group APIs answer COORDINATOR_NOT_AVAILABLE without one
    client_host: str = ""  # one connection's peer as Kafka shows a group member's host: "/127.0.0.1"
    # The broker's KIP-227 sessions, shared with its gRPC listeners; the default holds none (every Fetch is full).
    fetch_sessions: FetchSessionCache = field(default_factory=lambda: FetchSessionCache(0, lambda: 1))
    hidden_apis: frozenset[int] = frozenset()  # keys the broker's config turns off: neither advertised nor answered
    transactions: TransactionCoordinator | None = None  # the transaction APIs answer COORDINATOR_NOT_AVAILABLE without
    verifier: ProduceVerifier | None = None  # KIP-890 part 1's check of a producer's first transactional batch

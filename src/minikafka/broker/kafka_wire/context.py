"""What the API modules of one listener share: the replica manager and the listener's name."""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.broker.replica_manager import ReplicaManager


@dataclass(frozen=True)
class WireContext:
    manager: ReplicaManager
    listener_name: str  # Metadata answers with each broker's endpoint on this listener

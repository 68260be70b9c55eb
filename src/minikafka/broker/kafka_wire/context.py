"""What the API modules of one listener share: the replica manager, the listener's name, the group coordinator."""

from __future__ import annotations

from dataclasses import dataclass, field

from immutables import Map

from minikafka.broker.client_authorizer import Caller, ClientAuthorizer
from minikafka.broker.fetch_session import FetchSessionCache
from minikafka.broker.group.coordinator import GroupCoordinator
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.transaction.coordinator import TransactionCoordinator
from minikafka.broker.transaction.verification import ProduceVerifier
from minikafka.common.acl import CLUSTER_NAME, AclOperation, ResourceType
from minikafka.common.standard_authorizer import AuthorizerSettings


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
    caller: Caller = Caller()  # one connection's principal and host, which the authorizer checks
    # The broker's (the replica manager's, which the request layer asks); the default allows everything.
    authorizer: ClientAuthorizer = field(default_factory=lambda: ClientAuthorizer(AuthorizerSettings(), Map))

    def allowed(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return self.authorizer.allowed(self.caller, operation, resource_type, name)

    def allowed_on_cluster(self, operation: AclOperation) -> bool:
        return self.authorizer.allowed_on_cluster(self.caller, operation)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        return self.authorizer.authorized_operations(self.caller, resource_type, name)

    def cluster_authorized_operations(self) -> int:
        """As Kafka's Metadata and DescribeCluster answer it: the bit field when the caller may DESCRIBE the
        cluster, else 0."""
        if not self.allowed_on_cluster(AclOperation.DESCRIBE):
            return 0
        return self.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)

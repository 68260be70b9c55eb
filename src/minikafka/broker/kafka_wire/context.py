"""What the API modules of one listener share: the replica manager, the listener's name, the group coordinator."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from immutables import Map

from minikafka.broker.client_authorizer import Caller, ClientAuthorizer
from minikafka.broker.fetch_session import FetchSessionCache
from minikafka.broker.group.coordinator import GroupCoordinator
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.transaction.coordinator import TransactionCoordinator
from minikafka.broker.transaction.verification import ProduceVerifier
from minikafka.common.acl import CLUSTER_NAME, AclOperation, ResourceType
from minikafka.common.authorizer import MappingRule
from minikafka.common.scram import ScramCredential, ScramMechanism
from minikafka.common.standard_authorizer import AuthorizerSettings


class ControllerCalls(Protocol):
    """The active controller's answer to one call, or None when none answered within `timeout_s`."""

    async def call_within(self, method: str, request: Any, timeout_s: float) -> Any | None: ...


@dataclass(frozen=True)
class QuorumAccess:
    """What the quorum APIs (DescribeQuorum, AddRaftVoter, RemoveRaftVoter) need, on a broker's listener or a
    controller's: a way to the active controller and the configured quorum."""

    controller: ControllerCalls
    cluster_id: str
    request_timeout_ms: int
    voters: Mapping[int, tuple[str, int]]  # controller.quorum.voters, the endpoints shown when the leader has none


class QuorumContext(Protocol):
    """A listener context the quorum APIs can answer on."""

    @property
    def quorum(self) -> QuorumAccess: ...

    def allowed_on_cluster(self, operation: AclOperation) -> bool: ...


class ListenerContext(Protocol):
    """What a Kafka listener's connections need of the node behind it: a broker's WireContext, or a controller's."""

    @property
    def listener_name(self) -> str: ...

    @property
    def caller(self) -> Caller: ...

    @property
    def mapping_rules(self) -> tuple[MappingRule, ...]: ...

    @property
    def plain_users(self) -> Mapping[str, str]: ...

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None: ...

    def for_connection(self, caller: Caller, client_host: str | None = None) -> ListenerContext: ...


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

    @property
    def quorum(self) -> QuorumAccess:
        config = self.manager.config
        return QuorumAccess(self.manager.controller, config.cluster_id, config.request_timeout_ms, config.voters)

    @property
    def mapping_rules(self) -> tuple[MappingRule, ...]:
        return tuple(self.manager.config.authorizer_config.mapping_rules)

    @property
    def plain_users(self) -> Mapping[str, str]:
        return self.manager.config.plain_users

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self.manager.metadata.image.scram_credential(user, mechanism)

    def for_connection(self, caller: Caller, client_host: str | None = None) -> WireContext:
        if client_host is None:
            return dataclasses.replace(self, caller=caller)
        return dataclasses.replace(self, caller=caller, client_host=client_host)

    def allowed(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return self.authorizer.allowed(self.caller, operation, resource_type, name)

    def allowed_on_cluster(self, operation: AclOperation) -> bool:
        return self.authorizer.allowed_on_cluster(self.caller, operation)

    def describable_topics(self) -> Callable[[str], bool] | None:
        """Whether the caller may DESCRIBE a topic, asked without logging denials; None without an authorizer."""
        if not self.authorizer.enabled:
            return None
        authorizer, caller = self.authorizer, self.caller
        return lambda topic: authorizer.allowed_quietly(caller, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        return self.authorizer.authorized_operations(self.caller, resource_type, name)

    def cluster_authorized_operations(self) -> int:
        """As Kafka's Metadata and DescribeCluster answer it: the bit field when the caller may DESCRIBE the
        cluster, else 0."""
        if not self.allowed_on_cluster(AclOperation.DESCRIBE):
            return 0
        return self.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)

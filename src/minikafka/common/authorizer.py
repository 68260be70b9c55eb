"""Who may send which node-to-node request: Kafka's CLUSTER_ACTION rule, made strict.

Pure: a request's method, the node id it claims and the caller's principal go in, a decision comes out; the gRPC
shell (`authorization_interceptor`) reads the principal from the TLS peer certificate and answers a refusal.

- A certificate's CN is its principal (`User:broker-1`); `broker-<id>` and `controller-<id>` name cluster nodes.
- BrokerRegistration, BrokerHeartbeat, AlterPartition, AllocateProducerIds: only the broker they name may send them.
- Vote, BeginQuorumEpoch, EndQuorumEpoch: only the controller they name. Raft Fetch and FetchSnapshot: only the
  node (controller, or broker observing the metadata log) they name.
- A follower Fetch (one with a replica id): only the broker it names, and only on the inter-broker listener.
- The fault service: only a super user (`super.users`), and only with `fault.injection.enable`.
- On an inter-node listener without TLS (`security.inter.broker.protocol=PLAINTEXT`) no one is authenticated:
  everything but the fault service's rule passes, as in Kafka without an authorizer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

USER_TYPE = "User"
_NODE_NAME = re.compile(r"^(broker|controller)-(\d+)$")


@dataclass(frozen=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


def principal_from_common_name(common_name: str | None) -> KafkaPrincipal:
    """The principal of a TLS peer: its certificate's CN (the mapping `RULE:^CN=(.*)$/$1/`); none: ANONYMOUS."""
    return KafkaPrincipal(USER_TYPE, common_name) if common_name else ANONYMOUS


def parse_super_users(text: str) -> frozenset[KafkaPrincipal]:
    """`super.users`: `User:admin;User:ops` as principals; raises ValueError naming a malformed entry."""
    principals = set()
    for item in (part.strip() for part in text.split(";")):
        if not item:
            continue
        principal_type, sep, name = item.partition(":")
        if not sep or not name or principal_type != USER_TYPE:
            raise ValueError(f"expected {USER_TYPE}:NAME, got {item!r}")
        principals.add(KafkaPrincipal(principal_type, name))
    return frozenset(principals)


@dataclass(frozen=True)
class NodeIdentity:
    role: str  # "broker" | "controller"
    node_id: int


def node_identity(principal: KafkaPrincipal) -> NodeIdentity | None:
    match = _NODE_NAME.match(principal.name) if principal.principal_type == USER_TYPE else None
    return NodeIdentity(match.group(1), int(match.group(2))) if match else None


# ---- what a request asks for ----


@dataclass(frozen=True)
class ActAsNode:
    """A request sent on behalf of node `node_id`, which must be one of `roles`."""

    node_id: int
    roles: frozenset[str]
    inter_node_listener_only: bool = False


@dataclass(frozen=True)
class InjectFault:
    """A fault-service call."""


@dataclass(frozen=True)
class ClientRequest:
    """Anything a client may send (topics, produce, consume, describe)."""


Action = ActAsNode | InjectFault | ClientRequest

BROKER = frozenset({"broker"})
CONTROLLER = frozenset({"controller"})
ANY_NODE = frozenset({"broker", "controller"})


def _field(name: str, roles: frozenset[str]) -> Callable[[Any], Action]:
    return lambda request: ActAsNode(getattr(request, name), roles)


def _broker_fetch(request: Any) -> Action:
    if request.HasField("replica_state") and request.replica_state.replica_id >= 0:
        return ActAsNode(request.replica_state.replica_id, BROKER, inter_node_listener_only=True)
    return ClientRequest()


def _offsets_for_leader_epoch(request: Any) -> Action:
    if request.replica_id >= 0:
        return ActAsNode(request.replica_id, BROKER, inter_node_listener_only=True)
    return ClientRequest()


_ACTIONS: Mapping[str, Callable[[Any], Action]] = {
    "/minikafka.Controller/BrokerRegistration": _field("broker_id", BROKER),
    "/minikafka.Controller/BrokerHeartbeat": _field("broker_id", BROKER),
    "/minikafka.Controller/AlterPartition": _field("broker_id", BROKER),
    "/minikafka.Controller/AllocateProducerIds": _field("broker_id", BROKER),
    "/minikafka.Raft/Vote": _field("candidate_id", CONTROLLER),
    "/minikafka.Raft/BeginQuorumEpoch": _field("leader_id", CONTROLLER),
    "/minikafka.Raft/EndQuorumEpoch": _field("leader_id", CONTROLLER),
    "/minikafka.Raft/Fetch": _field("replica_id", ANY_NODE),
    "/minikafka.Raft/FetchStream": _field("replica_id", ANY_NODE),
    "/minikafka.Raft/FetchSnapshot": _field("replica_id", ANY_NODE),
    "/minikafka.Broker/Fetch": _broker_fetch,
    "/minikafka.Broker/FetchStream": _broker_fetch,
    "/minikafka.Broker/OffsetsForLeaderEpoch": _offsets_for_leader_epoch,
}
_FAULT_SERVICE = "/minikafka.Fault/"


def action_of(method: str, request: Any) -> Action:
    """What a request to `method` (gRPC's full method name) asks to do."""
    if method.startswith(_FAULT_SERVICE):
        return InjectFault()
    derive = _ACTIONS.get(method)
    return derive(request) if derive is not None else ClientRequest()


def is_guarded(method: str) -> bool:
    """Whether requests to `method` are ever refused (the others need not be looked at)."""
    return method in _ACTIONS or method.startswith(_FAULT_SERVICE)


# ---- the decision ----


@dataclass(frozen=True)
class ListenerSecurity:
    """What a listener is: inter-node (controller or inter-broker) or a client's; authenticated by mutual TLS."""

    inter_node: bool
    authenticated: bool


@dataclass(frozen=True)
class AuthorizerConfig:
    super_users: frozenset[KafkaPrincipal]
    fault_injection_enable: bool


@dataclass(frozen=True)
class Allowed:
    pass


@dataclass(frozen=True)
class Refused:
    reason: str


Decision = Allowed | Refused


def authorize(
    action: Action, principal: KafkaPrincipal, listener: ListenerSecurity, config: AuthorizerConfig
) -> Decision:
    if isinstance(action, ClientRequest):
        return Allowed()
    if isinstance(action, InjectFault):
        return _authorize_fault(principal, listener, config)
    if action.inter_node_listener_only and not listener.inter_node:
        return Refused(f"node {action.node_id}'s replica requests are not accepted on a client listener")
    if not listener.authenticated:
        return Allowed() if listener.inter_node else Refused("inter-node requests need the inter-node listener")
    identity = node_identity(principal)
    if identity is None or identity.role not in action.roles:
        wanted = " or ".join(sorted(action.roles))
        return Refused(f"{principal} is not a {wanted} and cannot act as node {action.node_id}")
    if identity.node_id != action.node_id:
        return Refused(f"{principal} is node {identity.node_id} and cannot act as node {action.node_id}")
    return Allowed()


def _authorize_fault(principal: KafkaPrincipal, listener: ListenerSecurity, config: AuthorizerConfig) -> Decision:
    if not config.fault_injection_enable:
        return Refused("fault injection is disabled (fault.injection.enable=false)")
    if not listener.inter_node:
        return Refused("the fault service is served on the inter-node listener only")
    if listener.authenticated and principal not in config.super_users:
        return Refused(f"{principal} is not a super user (super.users)")
    return Allowed()

"""Who may send which node-to-node request: Kafka's CLUSTER_ACTION rule, made strict.

Pure: a request's method, the node id it claims and the caller's principal go in, a decision comes out; the gRPC
shell (`authorization_interceptor`) reads the principal from the TLS peer certificate and answers a refusal.

- A certificate's subject maps to its principal by `ssl.principal.mapping.rules` (by default its CN:
  `User:broker-1`); `broker-<id>` and `controller-<id>` name cluster nodes.
- BrokerRegistration, BrokerHeartbeat, AlterPartition, AllocateProducerIds: only the broker they name may send them.
- Vote, BeginQuorumEpoch, EndQuorumEpoch, ControllerRegistration: only the controller they name. Raft Fetch and
  FetchSnapshot: only the node (controller, or broker observing the metadata log) they name.
- A follower Fetch (one with a replica id): only the broker it names, and only on the inter-broker listener.
- The fault service: only a super user (`super.users`), and only with `fault.injection.enable`.
- CreateAcls and DeleteAcls on a controller: a node (a broker forwards a client's, having authorized it) or a super
  user.
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
DEFAULT_MAPPING_RULES = "RULE:^CN=([^,]+)$/$1/,DEFAULT"
_MAPPING_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:([^/]*)/([^/]*)/([LU]?))\s*(?:,|$)")


@dataclass(frozen=True)
class MappingRule:
    """One of `ssl.principal.mapping.rules`: DEFAULT (the subject as it is) or RULE:pattern/replacement/[LU]."""

    pattern: str | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        match = re.fullmatch(self.pattern, subject)
        if match is None:
            return None
        name = match.expand(re.sub(r"\$(\d)", r"\\\1", self.replacement))
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


def parse_mapping_rules(text: str) -> tuple[MappingRule, ...]:
    """Kafka's `ssl.principal.mapping.rules` (a pattern holds no '/'); raises ValueError naming what is wrong."""
    rules, position = [], 0
    while position < len(text.rstrip()):
        found = _MAPPING_RULE.match(text, position)
        if found is None or found.end() == position:
            raise ValueError(f"expected DEFAULT or RULE:pattern/replacement/[LU] at {text[position:]!r}")
        default, pattern, replacement, case = found.groups()
        if default is None:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"bad pattern {pattern!r}: {error}") from None
        rules.append(MappingRule(None) if default else MappingRule(pattern, replacement, case))
        position = found.end()
    if not rules:
        raise ValueError("no rule given")
    return tuple(rules)


def principal_from_subject(subject: str | None, rules: tuple[MappingRule, ...]) -> KafkaPrincipal:
    """The principal of a TLS peer: the first rule matching its certificate's subject (`CN=broker-1`) names it;
    no subject, or no matching rule (Kafka refuses such a peer): ANONYMOUS, which no rule here lets act as a node."""
    for rule in rules if subject else ():
        name = rule.apply(subject)  # type: ignore[arg-type]
        if name:
            return KafkaPrincipal(USER_TYPE, name)
    return ANONYMOUS


def principal_from_common_name(common_name: str | None) -> KafkaPrincipal:
    """The principal a certificate with this CN maps to under the default rules."""
    return principal_from_subject(
        f"CN={common_name}" if common_name else None, parse_mapping_rules(DEFAULT_MAPPING_RULES)
    )


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
class AlterAcls:
    """CreateAcls or DeleteAcls on a controller: from a broker forwarding a client's (which it has authorized), or
    from a super user (minikafka acls with the admin's certificate)."""


@dataclass(frozen=True)
class ClientRequest:
    """Anything a client may send (topics, produce, consume, describe)."""


Action = ActAsNode | InjectFault | AlterAcls | ClientRequest

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
    "/minikafka.Controller/ControllerRegistration": _field("controller_id", CONTROLLER),
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
    "/minikafka.Controller/CreateAcls": lambda _request: AlterAcls(),
    "/minikafka.Controller/DeleteAcls": lambda _request: AlterAcls(),
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
    mapping_rules: tuple[MappingRule, ...] = parse_mapping_rules(DEFAULT_MAPPING_RULES)


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
    if isinstance(action, AlterAcls):
        if not listener.authenticated or principal in config.super_users or node_identity(principal) is not None:
            return Allowed()
        return Refused(f"{principal} may not alter ACLs on a controller: it is neither a node nor a super user")
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

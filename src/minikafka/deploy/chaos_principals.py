"""`chaos --acls`: the run with Kafka's StandardAuthorizer on and several principals, each a SASL PLAIN user on
the brokers' GRPC_SASL_SSL client listener.

- `admin` (a super user: super.users' default) is the harness: it creates the topics and the ACLs, and reads.
- `writer-N`, the acks=all producers: WRITE on the chaos topic (even ones by a LITERAL ACL, odd ones by a PREFIXED
  one) and IDEMPOTENT_WRITE on the cluster. Their acknowledged writes must all be kept.
- the denied producers, each refused in its own way, in turn: `describe-only-N` (DESCRIBE on the topic and
  IDEMPOTENT_WRITE on the cluster, no WRITE: TOPIC_AUTHORIZATION_FAILED), `write-denied-N` (a PREFIXED ALLOW of
  WRITE that a LITERAL DENY beats: DENY wins, TOPIC_AUTHORIZATION_FAILED), `no-idempotent-write-N` (WRITE on the
  topic, no IDEMPOTENT_WRITE for its idempotent batches: CLUSTER_AUTHORIZATION_FAILED). None of their records may
  ever be acknowledged or read.
- the Kafka listener stays PLAINTEXT: its clients (the transactional producers, the group members' group requests:
  minikafka's Kafka-wire tools have no SASL) are User:ANONYMOUS, granted only what they need.

`grant` creates the ACLs through the active controller before the workload starts, and waits until every broker
applies them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minikafka.client.admin import AdminClient
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.acl import CLUSTER_NAME, AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.acl_proto import binding_to_proto
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.standard_authorizer import STANDARD_AUTHORIZER
from minikafka.common.tls import TlsFiles
from minikafka.deploy.local_cluster import ClusterError, wait_until

ADMIN = SaslLogin("PLAIN", "admin", "admin-secret")
ANONYMOUS = "User:ANONYMOUS"
DENIAL_KINDS = ("describe-only", "write-denied", "no-idempotent-write")
# What each kind of denied producer's Produce is refused with (its history lines' `error`).
REFUSALS = {
    "describe-only": "TOPIC_AUTHORIZATION_FAILED",
    "write-denied": "TOPIC_AUTHORIZATION_FAILED",
    "no-idempotent-write": "CLUSTER_AUTHORIZATION_FAILED",
}
DENIED_RATE_PER_S = 20.0  # each denied producer's records/s: enough attempts, little load


@dataclass(frozen=True)
class Principal:
    name: str  # its SASL PLAIN user name
    kind: str  # "writer", or one of DENIAL_KINDS

    @property
    def login(self) -> SaslLogin:
        return SaslLogin("PLAIN", self.name, f"{self.name}-secret")

    @property
    def principal(self) -> str:
        return f"User:{self.name}"

    @property
    def denied(self) -> bool:
        return self.kind != "writer"


def writers(count: int) -> list[Principal]:
    return [Principal(f"writer-{n}", "writer") for n in range(count)]


def denied_producers(count: int) -> list[Principal]:
    """`count` denied principals, the kinds in turn."""
    kinds = [DENIAL_KINDS[n % len(DENIAL_KINDS)] for n in range(count)]
    return [Principal(f"{kind}-{n}", kind) for n, kind in enumerate(kinds)]


def acl_settings(principals: list[Principal]) -> dict[str, str]:
    """The cluster's settings: SASL PLAIN on the gRPC client listener with every principal's login (the admin's
    first: RUN/client.properties, what `consume --dir` uses, is the admin's), and the StandardAuthorizer."""
    users = [ADMIN, *(p.login for p in principals)]
    return {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,GRPC:GRPC_SASL_SSL,BROKER:GRPC,CONTROLLER:GRPC",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.plain.users": ",".join(f"{u.username}:{u.password}" for u in users),
        "authorizer.class.name": STANDARD_AUTHORIZER,
    }


@dataclass(frozen=True)
class ChaosResources:
    topic: str
    txn_topic: str
    txn_prefix: str  # the transactional producers' transactional ids start with it
    group: str


def _acl(
    principal: str,
    operation: AclOperation,
    resource_type: ResourceType,
    name: str,
    pattern: PatternType = PatternType.LITERAL,
    permission: AclPermissionType = AclPermissionType.ALLOW,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, "*", operation, permission)


def principal_bindings(principal: Principal, topic: str, index: int) -> list[AclBinding]:
    """What one chaos principal is granted (and denied) on the chaos topic; `index` alternates the writers'
    pattern types."""
    who, topic_type, cluster = principal.principal, ResourceType.TOPIC, ResourceType.CLUSTER
    idempotent = _acl(who, AclOperation.IDEMPOTENT_WRITE, cluster, CLUSTER_NAME)
    prefixed_write = _acl(who, AclOperation.WRITE, topic_type, topic, PatternType.PREFIXED)
    # The ALLOW that lets it describe the topic comes last: `grant` waits for it on every broker, and a broker
    # replays one CreateAcls' records in their order.
    match principal.kind:
        case "writer":
            return [idempotent, prefixed_write if index % 2 else _acl(who, AclOperation.WRITE, topic_type, topic)]
        case "describe-only":  # IDEMPOTENT_WRITE too: the topic's WRITE is what refuses it
            return [idempotent, _acl(who, AclOperation.DESCRIBE, topic_type, topic)]
        case "write-denied":
            deny = _acl(who, AclOperation.WRITE, topic_type, topic, permission=AclPermissionType.DENY)
            return [deny, idempotent, prefixed_write]
        case _:  # no-idempotent-write
            return [_acl(who, AclOperation.WRITE, topic_type, topic)]


def anonymous_bindings(resources: ChaosResources) -> list[AclBinding]:
    """The Kafka listener's User:ANONYMOUS: the transactional producers' WRITE on their transactional ids and topic
    (and IDEMPOTENT_WRITE: their batches carry a producer id), the group members' READ on the group and topic."""
    return [
        _acl(ANONYMOUS, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, resources.txn_prefix, PatternType.PREFIXED),
        _acl(ANONYMOUS, AclOperation.WRITE, ResourceType.TOPIC, resources.txn_topic),
        _acl(ANONYMOUS, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME),
        _acl(ANONYMOUS, AclOperation.READ, ResourceType.GROUP, resources.group),
        _acl(ANONYMOUS, AclOperation.READ, ResourceType.TOPIC, resources.topic),
    ]


def chaos_bindings(principals: list[Principal], resources: ChaosResources) -> list[AclBinding]:
    """Every binding of the run: the DENYs first (their own CreateAcls, so no broker ever has an ALLOW without the
    DENY that beats it), then the ALLOWs."""
    every = anonymous_bindings(resources) + [
        b for n, p in enumerate(principals) for b in principal_bindings(p, resources.topic, n)
    ]
    deny = AclPermissionType.DENY
    return [b for b in every if b.permission_type is deny] + [b for b in every if b.permission_type is not deny]


APPLIED_TIMEOUT_S = 60.0


def grant(
    admin: AdminClient, brokers: Sequence[str], ca: TlsFiles, principals: list[Principal], resources: ChaosResources
) -> int:
    """Create the run's ACLs (DENYs, then ALLOWs) and wait until every broker lets each principal describe the
    topic: then it has replayed all of them (a principal's ALLOW that gives it DESCRIBE is its last record). Returns
    how many bindings were created."""
    bindings = chaos_bindings(principals, resources)
    denies = [b for b in bindings if b.permission_type is AclPermissionType.DENY]
    for batch in (denies, bindings[len(denies) :]):
        if not batch:
            continue
        outcomes = admin.create_acls([binding_to_proto(b) for b in batch])
        refused = [o.error_message or ErrorCode.of(o.error_code).name for o in outcomes if o.error_code]
        if refused:
            raise ClusterError(f"the chaos run's ACLs were refused: {'; '.join(refused)}")
    for principal in principals:
        for broker in brokers:
            if not _applied(broker, ca, principal, resources.topic):
                raise ClusterError(f"broker {broker} did not apply {principal.principal}'s ACLs")
    return len(bindings)


def _applied(broker: str, ca: TlsFiles, principal: Principal, topic: str) -> bool:
    """Whether `broker` lets the principal describe `topic` within APPLIED_TIMEOUT_S."""
    with AdminClient((), [broker], timeout_s=5, broker_tls=ca, broker_sasl=principal.login) as client:

        def describes() -> bool:
            try:
                client.describe_topics([topic], servers=[broker])
            except KafkaError:
                return False
            return True

        return wait_until(describes, APPLIED_TIMEOUT_S)

"""A controller's Kafka listener (KIP-919), as Kafka's ControllerApis answers admin clients that bootstrap from the
controllers (`kafka-metadata-quorum --bootstrap-controller`, the admin client's bootstrap.controllers): ApiVersions,
DescribeCluster for the CONTROLLER endpoint type, DescribeQuorum, AddRaftVoter, RemoveRaftVoter and UpdateFeatures
(kraft.version), through the same handlers as a broker's listener. Every other API (Metadata, Produce, ...) is
neither advertised nor answered.

DescribeCluster on a controller lists every controller registered with a listener of the asked listener's name
(KIP-919's registrations, which each controller sends when its listeners start: kraft_controller/registration_manager)
and names the active controller when it is among them (else -1), as Kafka's. A controller passes the quorum
requests on to the active controller over the quorum's RPCs, as minikafka's brokers do."""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.static.primitive import i16, i64

from minikafka.broker.client_authorizer import Caller, ClientAuthorizer
from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.kafka_wire import api_versions, describe_quorum, raft_voters, update_features
from minikafka.broker.kafka_wire.apis import dispatch_to
from minikafka.broker.kafka_wire.context import QuorumAccess
from minikafka.broker.kafka_wire.describe import (
    BROKER_ENDPOINT,
    CONTROLLER_ENDPOINT,
    NO_AUTHORIZED_OPERATIONS,
    describe_cluster_error,
    endpoint_type_problem,
)
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import API_VERSIONS_KEY, ApiHeader, Request, response_class
from minikafka.broker.kafka_wire.listener import KafkaListener, ListenerLimits
from minikafka.broker.kafka_wire.listener_security import PLAINTEXT, ListenerSecurity
from minikafka.common.acl import CLUSTER_NAME, AclOperation, ResourceType
from minikafka.common.authorizer import MappingRule
from minikafka.common.endpoints import Listener
from minikafka.common.errors import ErrorCode
from minikafka.common.scram import ScramCredential, ScramMechanism
from minikafka.common.tls import TlsFiles
from minikafka.kraft_controller.metadata.records import Endpoint, RegisterController
from minikafka.kraft_controller.registration_manager import ControllerRegistrationManager

if TYPE_CHECKING:
    from minikafka.kraft_controller.process import ControllerNode

KRAFT_VERSION = "kraft.version"
# Kafka's defaults for the limits a controller's listener shares with a broker's.
LIMITS = ListenerLimits(max_request_bytes=100 * 1024 * 1024, max_idle_ms=600_000)


def describe_cluster(ctx: ControllerWireContext, request: Request) -> Any:
    """KIP-919 on a controller, as Kafka's ControllerApis: ALTER on the cluster is required
    (CLUSTER_AUTHORIZATION_FAILED), and only the CONTROLLER endpoint type (2) is served (endpoint_type_problem)."""
    cls = response_class(api_versions.DESCRIBE_CLUSTER, request.header.api_version)
    if not ctx.allowed_on_cluster(AclOperation.ALTER):
        return describe_cluster_error(
            cls, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "DescribeCluster on a controller needs ALTER on the cluster"
        )
    endpoint_type = getattr(request.body, "endpoint_type", BROKER_ENDPOINT)
    problem = endpoint_type_problem(CONTROLLER_ENDPOINT, endpoint_type, request.header.api_version)
    if problem is not None:
        return describe_cluster_error(cls, problem.code, problem.message)
    entry = sibling(cls, "DescribeClusterBroker")
    registered = _registered_on(ctx)
    controllers = tuple(
        build(entry, broker_id=node_id, host=host, port=port, rack=None, is_fenced=False)
        for node_id, (host, port) in sorted(registered.items())
    )
    leader = ctx.leader_id()
    operations = NO_AUTHORIZED_OPERATIONS
    if request.body.include_cluster_authorized_operations:
        operations = ctx.cluster_authorized_operations()
    return build(
        cls,
        throttle_time=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=CONTROLLER_ENDPOINT,
        cluster_id=ctx.quorum.cluster_id,
        controller_id=leader if leader in registered else -1,
        brokers=controllers,
        cluster_authorized_operations=operations,
    )


def _registered_on(ctx: ControllerWireContext) -> dict[int, tuple[str, int]]:
    """Each registered controller's endpoint named as this listener; this controller's own endpoint until its
    registration is committed (it answers here, so it is reachable here)."""
    found = {
        node_id: (endpoint.host, endpoint.port)
        for node_id, registration in ctx.registrations().items()
        for endpoint in registration.endpoints
        if endpoint.name == ctx.listener_name
    }
    return found if ctx.node_id in found else {**found, ctx.node_id: ctx.advertised}


def answer_api_versions(ctx: ControllerWireContext, request: Request) -> Any:
    """The controller APIs, and from v3 the kraft.version feature: supported 0-1 and finalized at the quorum's level
    (as Kafka, v3 leaves out a feature whose lowest version or level is 0)."""
    response = api_versions.response(request.header.api_version, hidden=HIDDEN)
    if not hasattr(response, "finalized_features"):
        return response
    level, epoch = ctx.kraft_version()
    cls = type(response)
    supported = build(sibling(cls, "SupportedFeatureKey"), name=KRAFT_VERSION, min_version=i16(0), max_version=i16(1))
    finalized_key, at = sibling(cls, "FinalizedFeatureKey"), i16(level)
    finalized = build(finalized_key, name=KRAFT_VERSION, max_version_level=at, min_version_level=at)
    v3 = request.header.api_version < 4
    return dataclasses.replace(
        response,
        supported_features=() if v3 else (supported,),
        finalized_features=() if v3 and level == 0 else (finalized,),
        finalized_features_epoch=i64(epoch),
    )


HANDLERS: dict[int, Any] = {
    API_VERSIONS_KEY: answer_api_versions,
    api_versions.DESCRIBE_CLUSTER: describe_cluster,
    **describe_quorum.HANDLERS,
    **raft_voters.HANDLERS,
    **update_features.HANDLERS,
}
HIDDEN: frozenset[int] = frozenset(api_versions.SUPPORTED) - set(HANDLERS)  # neither advertised nor answered


@dataclass(frozen=True)
class ControllerWireContext:
    """A controller listener's context: what its connections and the quorum APIs need."""

    listener_name: str
    node_id: int
    advertised: tuple[str, int]  # this controller's host and port on this listener
    quorum: QuorumAccess
    authorizer: ClientAuthorizer
    mapping_rules: tuple[MappingRule, ...]
    caller: Caller = Caller()
    client_host: str = ""
    kraft_version: Callable[[], tuple[int, int]] = lambda: (0, -1)  # the quorum's level and the offset it is at
    registrations: Callable[[], Mapping[int, RegisterController]] = lambda: {}  # the committed ones (KIP-919)
    leader_id: Callable[[], int] = lambda: -1  # the quorum's leader, -1 when none is known

    @property
    def plain_users(self) -> Mapping[str, str]:
        return {}  # the listener is PLAINTEXT or SSL: no SASL

    def scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return None

    def for_connection(self, caller: Caller, client_host: str | None = None) -> ControllerWireContext:
        if client_host is None:
            return dataclasses.replace(self, caller=caller)
        return dataclasses.replace(self, caller=caller, client_host=client_host)

    def allowed_on_cluster(self, operation: AclOperation) -> bool:
        return self.authorizer.allowed_on_cluster(self.caller, operation)

    def cluster_authorized_operations(self) -> int:
        if not self.allowed_on_cluster(AclOperation.DESCRIBE):
            return 0
        return self.authorizer.authorized_operations(self.caller, ResourceType.CLUSTER, CLUSTER_NAME)


class ControllerListeners:
    """The controller's Kafka listeners and the client that carries their quorum requests to the active one."""

    def __init__(
        self,
        listeners: Sequence[KafkaListener],
        client: ControllerClient,
        registering: asyncio.Task[None] | None = None,
    ) -> None:
        self.listeners = list(listeners)
        self.client = client
        self.registering = registering

    @property
    def addresses(self) -> list[str]:
        return [listener.address for listener in self.listeners]

    async def stop(self) -> None:
        if self.registering is not None:
            self.registering.cancel()
            await asyncio.gather(self.registering, return_exceptions=True)
        for listener in self.listeners:
            await listener.stop()
        await self.client.close()


def _advertised(node: ControllerNode, listener: Listener, port: int) -> tuple[str, int]:
    """Where clients reach `listener`: advertised.listeners' entry of that name, else where it is bound."""
    shown = next((a for a in node.config.advertised if a.name == listener.name), None)
    if shown is not None:
        return shown.host, shown.port
    return listener.host, port


def listener_security(tls: TlsFiles | None) -> ListenerSecurity:
    """PLAINTEXT, or under security.inter.broker.protocol=SSL mutual TLS as the quorum's listener asks: the node's
    certificate, and a client certificate of the cluster CA required (the principal its CN, as on gRPC)."""
    if tls is None or tls.certificate is None:
        return PLAINTEXT
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(tls.certificate, tls.key)
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cafile=tls.ca)
    return ListenerSecurity("SSL", context)


def dispatch(ctx: ControllerWireContext, frame: bytes | memoryview, header: ApiHeader) -> Awaitable[Any | None]:
    """A frame answered from the controller's table: what it does not serve is neither advertised nor answered."""
    return dispatch_to(HANDLERS, ctx, HIDDEN, frame, header)


async def start_listeners(node: ControllerNode) -> Sequence[ControllerListeners]:
    """Start every Kafka listener of the controller (controller.listener.names but the quorum's)."""
    config = node.config
    client = ControllerClient(config)
    client.follow(node.controller_addresses)
    quorum = QuorumAccess(client, config.cluster_id, config.request_timeout_ms, config.voters)
    authorizer = ClientAuthorizer(config.authorizer_settings, node.acls)
    rules = tuple(config.authorizer_config.mapping_rules)
    security = listener_security(config.inter_node_tls)
    started: list[KafkaListener] = []
    endpoints: list[Endpoint] = []
    try:
        for listener in config.kafka_listeners:
            ctx = ControllerWireContext(
                listener.name,
                config.node_id,
                ("", 0),
                quorum,
                authorizer,
                rules,
                kraft_version=node.kraft_version,
                registrations=node.registrations,
                leader_id=node.leader_id,
            )
            kafka_listener = KafkaListener(ctx, dispatch, listener.host, listener.port, LIMITS, security)
            await kafka_listener.start()
            advertised = _advertised(node, listener, kafka_listener.port)
            kafka_listener.ctx = dataclasses.replace(ctx, advertised=advertised)
            started.append(kafka_listener)
            endpoints.append(Endpoint(listener.name, *advertised))
    except BaseException:
        await ControllerListeners(started, client).stop()
        raise
    manager = ControllerRegistrationManager(config.node_id, tuple(endpoints), client.call_within, node.registrations)
    registering = asyncio.create_task(manager.run(), name="controller-registration")
    return [ControllerListeners(started, client, registering)]

"""The gRPC shell of node authentication, in one process: a TLS server requiring client certificates of the CA, the
identity read from the peer certificate, refusals answered with CLUSTER_AUTHORIZATION_FAILED."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.common.authorization_interceptor import AuthorizationInterceptor
from minikafka.common.authorizer import AuthorizerConfig, ListenerSecurity, parse_super_users
from minikafka.common.certificates import CertificateRequest, ca_certificate_path, create_certificates, files_for
from minikafka.common.config import ConfigError, load_config
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import insecure_channel, start_server
from minikafka.common.tls import ServerSecurity, TlsFiles
from minikafka.pb import controller_pb2, controller_pb2_grpc, raft_pb2, raft_pb2_grpc


class Heartbeats(controller_pb2_grpc.ControllerServicer):
    def __init__(self) -> None:
        self.seen: list[int] = []

    def register(self, server: grpc.aio.Server) -> None:
        controller_pb2_grpc.add_ControllerServicer_to_server(self, server)

    async def BrokerHeartbeat(self, request, context):  # noqa: ANN001, ANN201
        self.seen.append(request.broker_id)
        return controller_pb2.BrokerHeartbeatResponse(error_code=ErrorCode.NONE)


def tls_of(directory: Path, name: str | None) -> TlsFiles:
    if name is None:
        return TlsFiles(ca_certificate_path(directory))
    own = files_for(directory, name)
    return TlsFiles(ca_certificate_path(directory), own.certificate, own.key)


@pytest.fixture
def certs(tmp_path: Path) -> Path:
    requests = [CertificateRequest("controller-101", ("127.0.0.1",)), CertificateRequest("broker-1", ("127.0.0.1",))]
    create_certificates(tmp_path / "certs", [*requests, CertificateRequest("broker-2")])
    create_certificates(tmp_path / "other", [CertificateRequest("broker-1")])  # a CA the cluster does not trust
    return tmp_path


async def test_only_the_broker_named_in_a_heartbeat_may_send_it(certs: Path) -> None:
    directory = certs / "certs"
    servicer = Heartbeats()
    config = AuthorizerConfig(parse_super_users("User:admin"), fault_injection_enable=False)
    interceptor = AuthorizationInterceptor("CONTROLLER", ListenerSecurity(inter_node=True, authenticated=True), config)
    security = ServerSecurity(tls_of(directory, "controller-101"), require_client_auth=True)
    bound = await start_server("127.0.0.1", 0, [servicer.register], security, [interceptor])
    try:

        async def heartbeat(tls: TlsFiles | None) -> controller_pb2.BrokerHeartbeatResponse:
            async with insecure_channel(bound.address, tls) as channel:
                stub = controller_pb2_grpc.ControllerStub(channel)
                return await stub.BrokerHeartbeat(controller_pb2.BrokerHeartbeatRequest(broker_id=1), timeout=5)

        assert (await heartbeat(tls_of(directory, "broker-1"))).error_code == ErrorCode.NONE
        refused = await heartbeat(tls_of(directory, "broker-2"))
        assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert "User:broker-2 is node 2 and cannot act as node 1" in refused.error_message
        untrusted = TlsFiles(ca_certificate_path(directory), *vars(files_for(certs / "other", "broker-1")).values())
        for tls in (None, tls_of(directory, None), untrusted):
            with pytest.raises(grpc.aio.AioRpcError) as failure:
                await heartbeat(tls)
            assert failure.value.code() == grpc.StatusCode.UNAVAILABLE
        assert servicer.seen == [1]
    finally:
        await bound.server.stop(None)


class RaftFetches(raft_pb2_grpc.RaftServicer):
    def register(self, server: grpc.aio.Server) -> None:
        raft_pb2_grpc.add_RaftServicer_to_server(self, server)

    async def FetchStream(self, requests, context):  # noqa: ANN001, ANN201
        async for _request in requests:
            yield raft_pb2.RaftFetchResponse(error_code=ErrorCode.NONE)


async def test_a_stream_of_fetches_ends_at_the_first_one_naming_another_node(certs: Path) -> None:
    directory = certs / "certs"
    config = AuthorizerConfig(parse_super_users("User:admin"), fault_injection_enable=False)
    interceptor = AuthorizationInterceptor("CONTROLLER", ListenerSecurity(inter_node=True, authenticated=True), config)
    security = ServerSecurity(tls_of(directory, "controller-101"), require_client_auth=True)
    bound = await start_server("127.0.0.1", 0, [RaftFetches().register], security, [interceptor])
    try:
        async with insecure_channel(bound.address, tls_of(directory, "broker-1")) as channel:
            call = raft_pb2_grpc.RaftStub(channel).FetchStream()
            for _ in range(2):  # a repeat of the allowed action reuses its decision
                await call.write(raft_pb2.RaftFetchRequest(replica_id=1))
                assert (await call.read()).error_code == ErrorCode.NONE
            await call.write(raft_pb2.RaftFetchRequest(replica_id=2))
            with pytest.raises(grpc.aio.AioRpcError) as failure:
                await call.read()
            assert failure.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert failure.value.details().startswith("CLUSTER_AUTHORIZATION_FAILED (31): User:broker-1 is node 1")
    finally:
        await bound.server.stop(None)


async def test_an_ssl_client_listener_needs_only_the_ca_from_clients(certs: Path) -> None:
    directory = certs / "certs"
    servicer = Heartbeats()
    security = ServerSecurity(tls_of(directory, "controller-101"), require_client_auth=False)
    bound = await start_server("127.0.0.1", 0, [servicer.register], security)
    try:
        async with insecure_channel(bound.address, tls_of(directory, None)) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)
            answer = await stub.BrokerHeartbeat(controller_pb2.BrokerHeartbeatRequest(broker_id=1), timeout=5)
        assert answer.error_code == ErrorCode.NONE
        async with insecure_channel(bound.address) as channel:  # plaintext to a TLS listener: no connection
            with pytest.raises(grpc.aio.AioRpcError):
                await controller_pb2_grpc.ControllerStub(channel).BrokerHeartbeat(
                    controller_pb2.BrokerHeartbeatRequest(), timeout=5
                )
    finally:
        await bound.server.stop(None)


# A broker with a gRPC client listener and a gRPC inter-broker one; each test secures the client listener its way.
CLIENT_AND_BROKER_LISTENERS = {
    "node.id": "1",
    "process.roles": "broker",
    "listeners": "GRPC://127.0.0.1:9092,BROKER://127.0.0.1:9093",
    "controller.quorum.voters": "101@127.0.0.1:9094",
    "log.dirs": "/tmp/unused",
    "inter.broker.listener.name": "BROKER",
}


def test_a_grpc_ssl_client_listener_needs_the_nodes_certificate() -> None:
    props = {**CLIENT_AND_BROKER_LISTENERS, "listener.security.protocol.map": "GRPC:GRPC_SSL,BROKER:GRPC"}
    with pytest.raises(ConfigError, match="minikafka.node.ssl.certificate.location.*a GRPC_SSL listener"):
        load_config(BrokerConfig, {**props, "ssl.truststore.location": "/c/ca.pem"}, "test")
    keys = {"ssl.truststore.location": "/c/ca.pem"} | {
        f"minikafka.node.ssl.{kind}.location": f"/c/broker-1.{kind}" for kind in ("certificate", "key")
    }
    config = load_config(BrokerConfig, {**props, **keys}, "test")
    assert config.is_ssl_client_listener("GRPC") and not config.is_ssl_client_listener("BROKER")
    assert config.inter_node_tls is None  # security.inter.broker.protocol stays PLAINTEXT


def test_a_grpc_sasl_ssl_listener_needs_tls_and_a_mechanism_and_is_never_inter_broker() -> None:
    base = {**CLIENT_AND_BROKER_LISTENERS, "listener.security.protocol.map": "GRPC:GRPC_SASL_SSL,BROKER:GRPC"}
    with pytest.raises(ConfigError, match="'ssl.truststore.location': a GRPC_SASL_SSL listener needs it"):
        load_config(BrokerConfig, base)
    tls = {
        "ssl.truststore.location": "/c/ca.pem",
        "minikafka.node.ssl.certificate.location": "/c/b.pem",
        "minikafka.node.ssl.key.location": "/c/b.key",
    }
    config = load_config(BrokerConfig, {**base, **tls})
    assert config.is_sasl_client_listener("GRPC") and config.is_ssl_client_listener("GRPC")
    assert [listener.name for listener in config.grpc_listeners] == ["GRPC", "BROKER"]
    with pytest.raises(ConfigError, match="'sasl.enabled.mechanisms': SASL listeners need at least one"):
        load_config(BrokerConfig, {**base, **tls, "sasl.enabled.mechanisms": ""})
    inter_broker = {**base, **tls, "inter.broker.listener.name": "GRPC"}
    with pytest.raises(ConfigError, match="inter-broker listener GRPC cannot be GRPC_SASL_SSL"):
        load_config(BrokerConfig, inter_broker)

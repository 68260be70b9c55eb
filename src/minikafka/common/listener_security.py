"""How a node serves each gRPC listener: TLS or not, and the authorizer in front of its servicers."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from minikafka.common.authorization_interceptor import AuthorizationInterceptor
from minikafka.common.authorizer import ListenerSecurity
from minikafka.common.node_config import NodeConfig
from minikafka.common.tls import ServerSecurity


@dataclass(frozen=True)
class ServedListener:
    """`start_server`'s security and interceptors for one listener."""

    security: ServerSecurity | None
    interceptors: tuple[grpc.aio.ServerInterceptor, ...]


def inter_node_security(config: NodeConfig, listener_name: str) -> ServedListener:
    """A controller listener or the inter-broker listener: mutual TLS under security.inter.broker.protocol=SSL."""
    tls = config.inter_node_tls
    listener = ListenerSecurity(inter_node=True, authenticated=tls is not None)
    interceptor = AuthorizationInterceptor(listener_name, listener, config.authorizer_config)
    return ServedListener(None if tls is None else ServerSecurity(tls, require_client_auth=True), (interceptor,))


def client_security(config: NodeConfig, listener_name: str, ssl: bool) -> ServedListener:
    """A client listener: plaintext, or with `ssl` TLS showing the node's certificate (clients show none); the
    authorizer refuses the inter-node requests that arrive on it."""
    listener = ListenerSecurity(inter_node=False, authenticated=False)
    security = ServerSecurity(config.node_tls, require_client_auth=False) if ssl and config.node_tls else None
    return ServedListener(security, (AuthorizationInterceptor(listener_name, listener, config.authorizer_config),))

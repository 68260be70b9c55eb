"""The error for a client that reached no broker, with a hint when a secured listener is the likely reason."""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.common.errors import ErrorCode, KafkaError

PLAINTEXT_HINT = (
    "; a plaintext client gets UNAVAILABLE from a GRPC_SSL or GRPC_SASL_SSL listener too: if the brokers' gRPC "
    "listener is secured, give --command-config FILE with its security.protocol, ssl.ca.location and login"
)


def no_broker_reachable(problems: Sequence[str], plaintext: bool) -> KafkaError:
    """BROKER_NOT_AVAILABLE naming each address's gRPC status; a plaintext client refused everywhere with
    UNAVAILABLE is told that a TLS listener answers plaintext that way too (gRPC gives no other sign)."""
    hint = PLAINTEXT_HINT if plaintext and problems and all(p.endswith("UNAVAILABLE") for p in problems) else ""
    return KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no broker reachable ({'; '.join(problems)}){hint}")

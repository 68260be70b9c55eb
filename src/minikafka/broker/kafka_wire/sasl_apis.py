"""SaslHandshake (17) and SaslAuthenticate (36): answered by the connection while it authenticates (see
sasl_authenticator), and with ILLEGAL_SASL_STATE once it has, or on a listener without SASL, as Kafka's KafkaApis
does."""

from __future__ import annotations

import datetime
from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.kafka_wire.sasl_authenticator import SASL_AUTHENTICATE, SASL_HANDSHAKE, SaslAnswer
from minikafka.common.errors import ErrorCode

# librdkafka uses SASL only with a broker whose SaslHandshake range holds 0 (clients that handshake at v0 then send
# bare tokens); at v1 they send SaslAuthenticate requests.
VERSIONS = {SASL_HANDSHAKE: (0, 1), SASL_AUTHENTICATE: (0, 2)}


def handshake_response(api_version: int, answer: SaslAnswer, mechanisms: tuple[str, ...]) -> Any:
    cls = response_class(SASL_HANDSHAKE, api_version)
    return build(cls, error_code=answer.error, mechanisms=mechanisms)


def authenticate_response(api_version: int, answer: SaslAnswer) -> Any:
    cls = response_class(SASL_AUTHENTICATE, api_version)
    return build(
        cls,
        error_code=answer.error,
        error_message=answer.error_message,
        auth_bytes=answer.auth_bytes,
        session_lifetime=datetime.timedelta(0),  # no re-authentication (connections.max.reauth.ms=0)
    )


def handshake_after_authentication(_ctx: WireContext, request: Request) -> Any:
    return build(response_class(SASL_HANDSHAKE, request.header.api_version), error_code=ErrorCode.ILLEGAL_SASL_STATE)


def authenticate_after_authentication(_ctx: WireContext, request: Request) -> Any:
    cls = response_class(SASL_AUTHENTICATE, request.header.api_version)
    return build(
        cls,
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"",
        session_lifetime=datetime.timedelta(0),
    )


HANDLERS = {SASL_HANDSHAKE: handshake_after_authentication, SASL_AUTHENTICATE: authenticate_after_authentication}

"""The shell of SASL on a GRPC_SASL_SSL listener: one SaslAuthenticate stream runs the Kafka listener's SASL state
machine (sasl_authenticator: the same phases, mechanisms, messages and errors) and, once it completes, grants a
session token; the listener's interceptor then admits the calls that carry a live one."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
import structlog

from minikafka.broker.grpc_sasl import session as sessions
from minikafka.broker.kafka_wire import sasl_authenticator
from minikafka.broker.kafka_wire.sasl_authenticator import (
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    Phase,
    SaslAnswer,
    SaslCredentials,
    SaslSession,
)
from minikafka.common.clock import monotonic_ms
from minikafka.common.errors import ErrorCode
from minikafka.common.scram import ScramCredential, ScramMechanism
from minikafka.pb import broker_pb2

# Sessions kept at most: with connections.max.reauth.ms=0 nothing expires, so the oldest go first (their clients
# are refused once and authenticate again, as after a broker restart).
MAX_SESSIONS = 10000
_ABORT_STATUS = {
    ErrorCode.INVALID_REQUEST: grpc.StatusCode.INVALID_ARGUMENT,
    ErrorCode.ILLEGAL_SASL_STATE: grpc.StatusCode.FAILED_PRECONDITION,
}


@dataclass(frozen=True)
class GrpcSaslSettings:
    """A GRPC_SASL_SSL listener's SASL settings (the broker's sasl.* keys, shared with its Kafka listeners)."""

    listener_name: str
    mechanisms: tuple[str, ...]  # sasl.enabled.mechanisms
    plain_users: Mapping[str, str]  # sasl.plain.users
    scram_nonce_suffix_ok: bool  # sasl.scram.final.nonce.match=suffix
    reauth_ms: int  # connections.max.reauth.ms
    failed_authentication_delay_ms: int  # connection.failed.authentication.delay.ms
    max_receive_bytes: int = 524288  # sasl.server.max.receive.size: the largest SaslRequest read


@dataclass(frozen=True)
class OversizedSaslRequest:
    """A SaslRequest larger than sasl.server.max.receive.size, left unparsed (its bytes are dropped at once)."""

    size: int


def bounded_sasl_request(max_bytes: int) -> Callable[[bytes], broker_pb2.SaslRequest | OversizedSaslRequest]:
    """SaslAuthenticate's request deserializer: an oversized message is not parsed into a second and third copy of
    its token (the protobuf and its bytes field); the exchange refuses it."""

    def parse(raw: bytes) -> broker_pb2.SaslRequest | OversizedSaslRequest:
        if len(raw) > max_bytes:
            return OversizedSaslRequest(len(raw))
        return broker_pb2.SaslRequest.FromString(raw)

    return parse


@dataclass(frozen=True)
class Grant:
    token: str  # what the client sends as minikafka-sasl-session
    session: sessions.Session


class GrpcSaslAuthenticator:
    """Runs SaslAuthenticate streams and keeps the sessions they grant (in memory: a restarted broker has none)."""

    def __init__(
        self,
        settings: GrpcSaslSettings,
        scram: Callable[[str, ScramMechanism], ScramCredential | None],
        clock: Callable[[], int] = monotonic_ms,
    ) -> None:
        self.settings = settings
        self.clock = clock  # milliseconds; the interceptor judges sessions by it too
        self.credentials = SaslCredentials(settings.plain_users, scram)
        self._sessions: dict[str, sessions.Session] = {}

    def session_of(self, token: str | None) -> sessions.Session | None:
        return self._sessions.get(token) if token else None

    def _grant(self, principal: str, mechanism: str, now_ms: int) -> Grant:
        expired = [t for t, s in self._sessions.items() if s.expires_at_ms is not None and s.expires_at_ms <= now_ms]
        for token in expired:
            del self._sessions[token]
        while len(self._sessions) >= MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]
        granted = sessions.Session(principal, mechanism, sessions.expiry(now_ms, self.settings.reauth_ms))
        token = secrets.token_urlsafe(32)
        self._sessions[token] = granted
        return Grant(token, granted)

    async def exchange(
        self, requests: AsyncIterator[broker_pb2.SaslRequest], context: Any
    ) -> AsyncIterator[broker_pb2.SaslResponse]:
        """One SASL exchange: answers each request; ends after success, failure or a request out of order."""
        state = SaslSession()
        async for request in requests:
            if isinstance(request, OversizedSaslRequest):  # Kafka's listener closes such a connection unanswered
                limit = self.settings.max_receive_bytes
                reason = f"INVALID_REQUEST: SASL request of {request.size} bytes is larger than {limit}"
                await self._abort(context, state, reason)
            kind = request.WhichOneof("body")
            refused = sasl_authenticator.refusal(state, SASL_HANDSHAKE if kind == "handshake" else SASL_AUTHENTICATE)
            if kind is None:
                refused = "INVALID_REQUEST: SaslRequest without a handshake or authenticate body"
            if refused is not None:
                await self._abort(context, state, refused)
            if kind == "handshake":
                answer = sasl_authenticator.handshake(
                    state, request.handshake.mechanism, self.settings.mechanisms, 1, self.settings.scram_nonce_suffix_ok
                )
                response = broker_pb2.SaslResponse(
                    handshake=broker_pb2.SaslHandshakeResponse(
                        error_code=answer.error, mechanisms=list(self.settings.mechanisms)
                    )
                )
            else:
                answer = sasl_authenticator.authenticate(
                    state, request.authenticate.auth_bytes, self.credentials, secrets.token_urlsafe(18)
                )
                response = self._authenticate_response(answer, context, state.mechanism)
            if answer.close_reason is not None:  # logged before the client can see the answer
                self._log_failure(
                    context, state.mechanism or request.handshake.mechanism, answer.error, answer.close_reason
                )
            yield response
            if answer.close_reason is not None:
                if answer.error is ErrorCode.SASL_AUTHENTICATION_FAILED:  # Kafka delays the close likewise
                    await asyncio.sleep(self.settings.failed_authentication_delay_ms / 1000)
                return
            state = answer.session
            if state.phase is Phase.COMPLETE:
                return

    def _authenticate_response(self, answer: SaslAnswer, context: Any, mechanism: str) -> broker_pb2.SaslResponse:
        response = broker_pb2.SaslAuthenticateResponse(
            error_code=answer.error, error_message=answer.error_message or "", auth_bytes=answer.auth_bytes
        )
        if answer.session.phase is Phase.COMPLETE:
            now_ms = self.clock()
            grant = self._grant(answer.session.principal, mechanism, now_ms)
            granted = grant.session
            response.session_token = grant.token
            response.session_lifetime_ms = sessions.lifetime_ms(granted, now_ms)
            structlog.get_logger().info(
                "grpc_sasl_authenticated",
                listener=self.settings.listener_name,
                peer=context.peer(),
                principal=granted.principal,
                mechanism=mechanism,
                session_lifetime_ms=response.session_lifetime_ms,
            )
        return broker_pb2.SaslResponse(authenticate=response)

    async def _abort(self, context: Any, state: SaslSession, reason: str) -> None:
        """A request out of order: Kafka closes the connection unanswered; the stream ends with the reason."""
        name, _, message = reason.partition(": ")
        error = ErrorCode[name]
        self._log_failure(context, state.mechanism, error, reason)
        await context.abort(_ABORT_STATUS[error], f"{error.name} ({int(error)}): {message}")

    def _log_failure(self, context: Any, mechanism: str, error: ErrorCode, reason: str) -> None:
        structlog.get_logger().warning(
            "grpc_sasl_authentication_failed",
            listener=self.settings.listener_name,
            peer=context.peer(),
            mechanism=mechanism,
            error=error.name,
            reason=reason,
        )


async def not_sasl_listener(
    requests: AsyncIterator[broker_pb2.SaslRequest], _context: Any
) -> AsyncIterator[broker_pb2.SaslResponse]:
    """SaslAuthenticate on a listener without SASL: ILLEGAL_SASL_STATE, as Kafka answers SaslHandshake there."""
    async for request in requests:
        if request.WhichOneof("body") == "handshake":
            yield broker_pb2.SaslResponse(
                handshake=broker_pb2.SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE)
            )
        else:
            answer = broker_pb2.SaslAuthenticateResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE,
                error_message="SaslAuthenticate request received on a listener without SASL",
            )
            yield broker_pb2.SaslResponse(authenticate=answer)
        return

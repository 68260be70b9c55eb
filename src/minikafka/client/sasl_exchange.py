"""The client side of SASL on a GRPC_SASL_SSL listener, pure: the SaslAuthenticate stream's requests from the
login (librdkafka's sasl.mechanism, sasl.username, sasl.password) and each answer, ending with the session token or
Kafka's error. The shell (sasl_channel) draws the nonce and runs the stream."""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common.errors import ErrorCode
from minikafka.common.scram import ScramMechanism
from minikafka.common.scram_client import ScramClientFinal, ScramClientFirst, client_final, server_signature_ok
from minikafka.pb import broker_pb2

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str


@dataclass(frozen=True)
class AwaitingHandshake:
    login: SaslLogin
    scram: ScramClientFirst | None  # None for PLAIN


@dataclass(frozen=True)
class AwaitingChallenge:
    login: SaslLogin
    scram: ScramClientFirst | None
    final: ScramClientFinal | None = None  # sent: the server-final message is awaited


@dataclass(frozen=True)
class Authenticated:
    token: str
    lifetime_ms: int  # 0: the session does not expire


@dataclass(frozen=True)
class Failed:
    error: ErrorCode
    message: str


ExchangeState = AwaitingHandshake | AwaitingChallenge | Authenticated | Failed


@dataclass(frozen=True)
class ExchangeStep:
    state: ExchangeState
    request: broker_pb2.SaslRequest | None  # None: the exchange is over (Authenticated or Failed)


def start(login: SaslLogin, client_nonce: str) -> ExchangeStep:
    scram = ScramMechanism.of_name(login.mechanism)
    first = ScramClientFirst(scram, login.username, login.password, client_nonce) if scram is not None else None
    request = broker_pb2.SaslRequest(handshake=broker_pb2.SaslHandshakeRequest(mechanism=login.mechanism))
    return ExchangeStep(AwaitingHandshake(login, first), request)


def _authenticate(auth_bytes: bytes) -> broker_pb2.SaslRequest:
    return broker_pb2.SaslRequest(authenticate=broker_pb2.SaslAuthenticateRequest(auth_bytes=auth_bytes))


def on_response(state: ExchangeState, response: broker_pb2.SaslResponse) -> ExchangeStep:
    if isinstance(state, AwaitingHandshake) and response.WhichOneof("body") == "handshake":
        return _on_handshake(state, response.handshake)
    if isinstance(state, AwaitingChallenge) and response.WhichOneof("body") == "authenticate":
        return _on_authenticate(state, response.authenticate)
    return ExchangeStep(Failed(ErrorCode.ILLEGAL_SASL_STATE, f"unexpected SASL answer in {type(state).__name__}"), None)


def _on_handshake(state: AwaitingHandshake, answer: broker_pb2.SaslHandshakeResponse) -> ExchangeStep:
    error = ErrorCode.of(answer.error_code)
    if error is ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        offered = ", ".join(answer.mechanisms) or "none"
        message = f"Unsupported SASL mechanism {state.login.mechanism} (the listener offers {offered})"
        return ExchangeStep(Failed(error, message), None)
    if error is ErrorCode.ILLEGAL_SASL_STATE:
        return ExchangeStep(Failed(error, "the listener has no SASL (its protocol is not GRPC_SASL_SSL)"), None)
    if error is not ErrorCode.NONE:
        return ExchangeStep(Failed(error, "SaslHandshake refused"), None)
    login = state.login
    first = state.scram.message if state.scram is not None else f"\0{login.username}\0{login.password}".encode()
    return ExchangeStep(AwaitingChallenge(login, state.scram), _authenticate(first))


def _on_authenticate(state: AwaitingChallenge, answer: broker_pb2.SaslAuthenticateResponse) -> ExchangeStep:
    error = ErrorCode.of(answer.error_code)
    if error is not ErrorCode.NONE:
        return ExchangeStep(Failed(error, answer.error_message or error.name), None)
    if state.scram is not None and state.final is None:
        final = client_final(state.scram, answer.auth_bytes)
        if isinstance(final, ScramClientFinal):
            return ExchangeStep(AwaitingChallenge(state.login, state.scram, final), _authenticate(final.message))
        return ExchangeStep(Failed(ErrorCode.SASL_AUTHENTICATION_FAILED, final.reason), None)
    if not answer.session_token:
        return ExchangeStep(Failed(ErrorCode.ILLEGAL_SASL_STATE, "the exchange ended without a session token"), None)
    if state.final is not None and not server_signature_ok(state.final, answer.auth_bytes):
        message = "Invalid server signature in the SCRAM server-final message"
        return ExchangeStep(Failed(ErrorCode.SASL_AUTHENTICATION_FAILED, message), None)
    return ExchangeStep(Authenticated(answer.session_token, answer.session_lifetime_ms), None)

"""Kafka's SaslServerAuthenticator for one connection of a SASL_PLAINTEXT or SASL_SSL listener, as a pure state
machine: before authentication only ApiVersions, SaslHandshake and then SaslAuthenticate (after a v0 handshake,
bare tokens) are accepted; any other request closes the connection unanswered, as Kafka does. A failed
authentication is answered (Kafka's error and message) and then the connection closes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum

from kio.schema.index import api_key_map

from minikafka.broker.kafka_wire import scram_server
from minikafka.broker.kafka_wire.sasl_plain import PlainAccepted, check_plain
from minikafka.common.errors import ErrorCode
from minikafka.common.scram import ScramCredential, ScramMechanism

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
INVALID_CREDENTIALS = "Authentication failed during authentication due to invalid credentials with SASL mechanism"


class Phase(Enum):
    HANDSHAKE = "handshake"  # ApiVersions or SaslHandshake expected
    AUTHENTICATE = "authenticate"  # SaslAuthenticate expected (a mechanism was chosen)
    COMPLETE = "complete"  # authenticated: every request is served


@dataclass(frozen=True)
class SaslSession:
    phase: Phase = Phase.HANDSHAKE
    mechanism: str = ""
    scram: scram_server.ScramState | None = None
    principal: str = ""  # Kafka's principal once authenticated: "User:alice"
    # After a v0 SaslHandshake the client sends bare size-prefixed SASL tokens, not SaslAuthenticate requests.
    raw_tokens: bool = False


@dataclass(frozen=True)
class SaslCredentials:
    """What the listener checks against: PLAIN's configured users, SCRAM's credentials from the metadata."""

    plain_users: Mapping[str, str]
    scram: Callable[[str, ScramMechanism], ScramCredential | None]


@dataclass(frozen=True)
class SaslAnswer:
    session: SaslSession
    error: ErrorCode
    error_message: str | None = None
    auth_bytes: bytes = b""
    close_reason: str | None = None  # set: the answer is sent, then the connection is closed
    failure_detail: str = ""  # why, for the broker's log only


def refusal(session: SaslSession, api_key: int) -> str | None:
    """Why a request with `api_key` closes the connection in this phase; None if it may be served."""
    name = api_key_map[api_key].upper() if api_key in api_key_map else f"API key {api_key}"  # Kafka's ApiKeys name
    if session.phase is Phase.HANDSHAKE and api_key not in (API_VERSIONS, SASL_HANDSHAKE):
        return f"INVALID_REQUEST: Unexpected Kafka request of type {name} during SASL handshake."
    if session.phase is Phase.AUTHENTICATE and session.raw_tokens:
        return None  # a bare token, not a request
    if session.phase is Phase.AUTHENTICATE and api_key != SASL_AUTHENTICATE:
        return f"ILLEGAL_SASL_STATE: Unexpected Kafka request of type {name} during SASL authentication."
    return None


def handshake(
    session: SaslSession, mechanism: str, enabled: tuple[str, ...], version: int = 1, nonce_suffix_ok: bool = False
) -> SaslAnswer:
    if mechanism not in enabled:
        reason = f"UNSUPPORTED_SASL_MECHANISM: Unsupported SASL mechanism {mechanism}"
        return SaslAnswer(session, ErrorCode.UNSUPPORTED_SASL_MECHANISM, close_reason=reason)
    scram = ScramMechanism.of_name(mechanism)
    start = scram_server.AwaitingClientFirst(scram, nonce_suffix_ok) if scram is not None else None
    return SaslAnswer(SaslSession(Phase.AUTHENTICATE, mechanism, start, raw_tokens=version == 0), ErrorCode.NONE)


def authenticate(session: SaslSession, token: bytes, credentials: SaslCredentials, server_nonce: str) -> SaslAnswer:
    """One SaslAuthenticate token; `server_nonce` is the fresh random part of a SCRAM server-first message."""
    if session.mechanism == "PLAIN":
        outcome = check_plain(token, credentials.plain_users)
        if isinstance(outcome, PlainAccepted):
            return SaslAnswer(_complete(session, outcome.username), ErrorCode.NONE)
        return _failed(session, outcome.message, outcome.reason)
    scram = ScramMechanism.of_name(session.mechanism)
    if session.scram is None or scram is None:
        return _failed(session, None, f"no exchange in progress for {session.mechanism}")
    step = scram_server.step(session.scram, token, lambda user: credentials.scram(user, scram), server_nonce)
    if isinstance(step.state, scram_server.ScramFailed):
        return _failed(session, None, step.state.reason)
    if isinstance(step.state, scram_server.ScramComplete):
        return SaslAnswer(_complete(session, step.state.username), ErrorCode.NONE, auth_bytes=step.challenge)
    return SaslAnswer(replace(session, scram=step.state), ErrorCode.NONE, auth_bytes=step.challenge)


def _complete(session: SaslSession, username: str) -> SaslSession:
    return SaslSession(Phase.COMPLETE, session.mechanism, None, f"User:{username}", session.raw_tokens)


def _failed(session: SaslSession, message: str | None, detail: str) -> SaslAnswer:
    """Kafka sends a SaslAuthenticationException's own message, and for any other SASL failure a generic one that
    does not tell whether the user exists."""
    text = message or f"{INVALID_CREDENTIALS} {session.mechanism}"
    return SaslAnswer(
        session,
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        error_message=text,
        close_reason=f"SASL_AUTHENTICATION_FAILED: {text} ({detail})",
        failure_detail=detail,
    )

"""The sessions a GRPC_SASL_SSL listener has granted, as a pure decision: which session a call's token names and
whether it is still valid (Kafka's connections.max.reauth.ms bounds a session; 0 means it does not expire).

A Kafka connection is its own session; a gRPC call carries none, so a completed SASL exchange grants a random
token that every later call sends as metadata, and a call without a valid one is refused as Kafka refuses a
request before authentication."""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_sasl import SESSION_METADATA_KEY


@dataclass(frozen=True)
class Session:
    principal: str  # Kafka's principal: "User:alice"
    mechanism: str
    expires_at_ms: int | None  # monotonic; None: no expiry (connections.max.reauth.ms=0)


@dataclass(frozen=True)
class SessionValid:
    session: Session


@dataclass(frozen=True)
class SessionRefused:
    error: ErrorCode
    reason: str  # one line, without the token; the same for every caller with the same problem


SessionCheck = SessionValid | SessionRefused


def expiry(now_ms: int, reauth_ms: int) -> int | None:
    """When a session granted now ends: after connections.max.reauth.ms, or never when it is 0."""
    return now_ms + reauth_ms if reauth_ms > 0 else None


def lifetime_ms(session: Session, now_ms: int) -> int:
    """SaslAuthenticate's session_lifetime_ms: what is left of the session, 0 when it does not expire."""
    return 0 if session.expires_at_ms is None else max(1, session.expires_at_ms - now_ms)


def check(token: str | None, session: Session | None, now_ms: int) -> SessionCheck:
    """Whether a call carrying `token` (None: no metadata) may proceed; `session` is what the token names."""
    if not token:
        return SessionRefused(
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            f"no SASL session: authenticate with SaslAuthenticate and send its token as {SESSION_METADATA_KEY}",
        )
    if session is None:
        return SessionRefused(ErrorCode.SASL_AUTHENTICATION_FAILED, "unknown SASL session (authenticate again)")
    if session.expires_at_ms is not None and now_ms >= session.expires_at_ms:
        return SessionRefused(
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            "SASL session expired (connections.max.reauth.ms): authenticate again",
        )
    return SessionValid(session)

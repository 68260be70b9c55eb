"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer checks it: one message `authzid NUL authcid NUL password`,
the password compared with the configured user's in constant time. Pure."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class PlainAccepted:
    username: str


@dataclass(frozen=True)
class PlainRefused:
    message: str | None  # Kafka's message for the client; None: the generic invalid-credentials one
    reason: str  # for the broker's log


def check_plain(message: bytes, users: Mapping[str, str]) -> PlainAccepted | PlainRefused:
    try:
        tokens = message.decode("utf-8").split("\0")
    except UnicodeDecodeError:
        return PlainRefused(None, "SASL/PLAIN message is not UTF-8")
    if len(tokens) != 3:
        return PlainRefused(None, f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    authorization_id, username, password = tokens
    if not username:
        return PlainRefused("Authentication failed: username not specified", "no username")
    if not password:
        return PlainRefused("Authentication failed: password not specified", f"no password for user {username!r}")
    if authorization_id and authorization_id != username:
        message_text = "Authentication failed: Client requested an authorization id that is different from username"
        return PlainRefused(message_text, f"authorization id {authorization_id!r} is not user {username!r}")
    expected = users.get(username)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        return PlainRefused("Authentication failed: Invalid username or password", f"bad password for {username!r}")
    return PlainAccepted(username)

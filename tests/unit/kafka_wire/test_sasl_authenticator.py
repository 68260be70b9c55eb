"""The connection's SASL state machine: what is served before authentication, PLAIN and SCRAM outcomes with
Kafka's error codes and messages."""

from __future__ import annotations

import base64

from minikafka.broker.kafka_wire import sasl_authenticator as sasl
from minikafka.broker.kafka_wire.sasl_authenticator import Phase, SaslCredentials, SaslSession
from minikafka.common.errors import ErrorCode
from minikafka.common.scram import (
    ScramMechanism,
    client_key,
    credential_from_salted,
    digest,
    hmac_of,
    salted_password,
    xor,
)

METADATA, PRODUCE = 3, 0
SHA512 = ScramMechanism.SCRAM_SHA_512
ENABLED = ("PLAIN", "SCRAM-SHA-512")
ALICE = credential_from_salted(SHA512, b"salt", salted_password(SHA512, "alice-secret", b"salt", 4096), 4096)
CREDENTIALS = SaslCredentials(
    {"carol": "carol-secret"}, lambda user, mechanism: ALICE if (user, mechanism) == ("alice", SHA512) else None
)


def test_only_api_versions_and_handshake_before_a_mechanism_is_chosen() -> None:
    start = SaslSession()
    assert sasl.refusal(start, sasl.API_VERSIONS) is None
    assert sasl.refusal(start, sasl.SASL_HANDSHAKE) is None
    reason = sasl.refusal(start, METADATA)
    assert reason is not None and reason.startswith("INVALID_REQUEST: Unexpected Kafka request")
    assert sasl.refusal(start, sasl.SASL_AUTHENTICATE) is not None
    chosen = sasl.handshake(start, "PLAIN", ENABLED).session
    assert chosen.phase is Phase.AUTHENTICATE
    assert sasl.refusal(chosen, sasl.SASL_AUTHENTICATE) is None
    for api_key in (sasl.API_VERSIONS, PRODUCE, sasl.SASL_HANDSHAKE):
        refused = sasl.refusal(chosen, api_key)
        assert refused is not None and refused.startswith("ILLEGAL_SASL_STATE")
    assert sasl.refusal(SaslSession(Phase.COMPLETE), PRODUCE) is None


def test_an_unsupported_mechanism_is_answered_then_closed() -> None:
    answer = sasl.handshake(SaslSession(), "GSSAPI", ENABLED)
    assert answer.error is ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert answer.close_reason is not None and answer.session.phase is Phase.HANDSHAKE


def _plain(token: bytes) -> sasl.SaslAnswer:
    return sasl.authenticate(sasl.handshake(SaslSession(), "PLAIN", ENABLED).session, token, CREDENTIALS, "n")


def test_plain() -> None:
    accepted = _plain(b"\0carol\0carol-secret")
    assert accepted.error is ErrorCode.NONE and accepted.close_reason is None
    assert accepted.session == SaslSession(Phase.COMPLETE, "PLAIN", None, "User:carol")
    invalid = "Authentication failed: Invalid username or password"
    other_id = "Authentication failed: Client requested an authorization id that is different from username"
    generic = "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"
    for token, message in (
        (b"\0carol\0wrong", invalid),
        (b"\0nobody\0carol-secret", invalid),
        (b"dave\0carol\0carol-secret", other_id),
        (b"\0\0x", "Authentication failed: username not specified"),
        (b"garbage", generic),
    ):
        refused = _plain(token)
        assert (refused.error, refused.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, message)
        assert refused.close_reason is not None and refused.session.phase is Phase.AUTHENTICATE


def _scram_login(user: str, password: str) -> sasl.SaslAnswer:
    session = sasl.handshake(SaslSession(), "SCRAM-SHA-512", ENABLED).session
    bare = f"n={user},r=client"
    first = sasl.authenticate(session, f"n,,{bare}".encode(), CREDENTIALS, "server")
    if first.error is not ErrorCode.NONE:
        return first
    fields = dict(part.split("=", 1) for part in first.auth_bytes.decode().split(","))
    salted = salted_password(SHA512, password, base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{bare},{first.auth_bytes.decode()},{without_proof}".encode()
    key = client_key(SHA512, salted)
    proof = base64.b64encode(xor(key, hmac_of(SHA512, digest(SHA512, key), auth_message))).decode()
    return sasl.authenticate(first.session, f"{without_proof},p={proof}".encode(), CREDENTIALS, "unused")


def test_scram_sha_512() -> None:
    accepted = _scram_login("alice", "alice-secret")
    assert accepted.error is ErrorCode.NONE and accepted.auth_bytes.startswith(b"v=")
    assert accepted.session.phase is Phase.COMPLETE and accepted.session.principal == "User:alice"
    expected = (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )
    for user, password in (("alice", "wrong"), ("nobody", "alice-secret")):
        refused = _scram_login(user, password)
        assert (refused.error, refused.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, expected)
        assert refused.close_reason is not None

"""The pure parts of SASL on the gRPC client API: the session check with the time passed in, and the client's
exchange against the broker's SCRAM and PLAIN state machines (the Kafka listener's, reused)."""

from __future__ import annotations

import os

from minikafka.broker.grpc_sasl import session as sessions
from minikafka.broker.kafka_wire import sasl_authenticator
from minikafka.broker.kafka_wire.sasl_authenticator import Phase, SaslCredentials, SaslSession
from minikafka.client import sasl_exchange
from minikafka.client.sasl_exchange import Authenticated, Failed, SaslLogin
from minikafka.common.errors import ErrorCode
from minikafka.common.scram import ScramMechanism, credential_from_salted, salted_password
from minikafka.pb import broker_pb2

SHA512 = ScramMechanism.SCRAM_SHA_512
SALT = bytes(range(16))
ALICE = credential_from_salted(SHA512, SALT, salted_password(SHA512, "alice-secret", SALT, 4096), 4096)
CREDENTIALS = SaslCredentials({"carol": "carol-secret"}, lambda u, m: ALICE if (u, m) == ("alice", SHA512) else None)
ENABLED = ("PLAIN", "SCRAM-SHA-512")


def test_a_call_needs_a_live_session() -> None:
    alice = sessions.Session("User:alice", "SCRAM-SHA-512", sessions.expiry(1000, 500))
    assert sessions.check(None, None, 1000) == sessions.SessionRefused(
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        "no SASL session: authenticate with SaslAuthenticate and send its token as minikafka-sasl-session",
    )
    unknown = sessions.check("t", None, 1000)
    assert isinstance(unknown, sessions.SessionRefused) and "unknown SASL session" in unknown.reason
    assert sessions.check("t", alice, 1499) == sessions.SessionValid(alice)
    expired = sessions.check("t", alice, 1500)
    assert isinstance(expired, sessions.SessionRefused) and "expired (connections.max.reauth.ms)" in expired.reason
    assert sessions.lifetime_ms(alice, 1100) == 400


def test_connections_max_reauth_ms_zero_never_expires() -> None:
    forever = sessions.Session("User:carol", "PLAIN", sessions.expiry(1000, 0))
    assert forever.expires_at_ms is None and sessions.lifetime_ms(forever, 10**12) == 0
    assert sessions.check("t", forever, 10**12) == sessions.SessionValid(forever)


def _serve(state: SaslSession, request: broker_pb2.SaslRequest) -> tuple[SaslSession, broker_pb2.SaslResponse]:
    """What the broker's stream does with one request (authenticator.exchange, without gRPC)."""
    if request.WhichOneof("body") == "handshake":
        answer = sasl_authenticator.handshake(state, request.handshake.mechanism, ENABLED)
        body = broker_pb2.SaslHandshakeResponse(error_code=answer.error, mechanisms=list(ENABLED))
        return answer.session, broker_pb2.SaslResponse(handshake=body)
    answer = sasl_authenticator.authenticate(state, request.authenticate.auth_bytes, CREDENTIALS, "servernonce")
    reply = broker_pb2.SaslAuthenticateResponse(
        error_code=answer.error, error_message=answer.error_message or "", auth_bytes=answer.auth_bytes
    )
    if answer.session.phase is Phase.COMPLETE:
        reply.session_token = f"token-of-{answer.session.principal}"
    return answer.session, broker_pb2.SaslResponse(authenticate=reply)


def _run(login: SaslLogin) -> sasl_exchange.ExchangeState:
    step = sasl_exchange.start(login, os.urandom(8).hex())
    server = SaslSession()
    while step.request is not None:
        server, response = _serve(server, step.request)
        step = sasl_exchange.on_response(step.state, response)
    return step.state


def test_scram_sha_512_and_plain_complete_with_a_session_token() -> None:
    assert _run(SaslLogin("SCRAM-SHA-512", "alice", "alice-secret")) == Authenticated("token-of-User:alice", 0)
    assert _run(SaslLogin("PLAIN", "carol", "carol-secret")) == Authenticated("token-of-User:carol", 0)


def test_wrong_passwords_and_mechanisms_fail_with_kafkas_errors() -> None:
    assert _run(SaslLogin("SCRAM-SHA-512", "alice", "wrong")) == Failed(
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
    )
    assert _run(SaslLogin("PLAIN", "carol", "wrong")) == Failed(
        ErrorCode.SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password"
    )
    refused = _run(SaslLogin("SCRAM-SHA-256", "alice", "alice-secret"))
    assert refused == Failed(
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        "Unsupported SASL mechanism SCRAM-SHA-256 (the listener offers PLAIN, SCRAM-SHA-512)",
    )


def test_a_forged_server_signature_is_refused() -> None:
    step = sasl_exchange.start(SaslLogin("SCRAM-SHA-512", "alice", "alice-secret"), "clientnonce")
    server = SaslSession()
    for _ in range(2):  # the handshake, then client-first
        server, response = _serve(server, step.request)
        step = sasl_exchange.on_response(step.state, response)
    server, response = _serve(server, step.request)  # client-final: accepted, with the server's signature
    response.authenticate.auth_bytes = b"v=" + b"QUJD" * 22
    assert sasl_exchange.on_response(step.state, response).state == Failed(
        ErrorCode.SASL_AUTHENTICATION_FAILED, "Invalid server signature in the SCRAM server-final message"
    )


def test_an_oversized_sasl_request_is_not_parsed() -> None:
    from minikafka.broker.grpc_sasl.authenticator import OversizedSaslRequest, bounded_sasl_request
    from minikafka.pb import broker_pb2

    parse = bounded_sasl_request(100)
    small = broker_pb2.SaslRequest(authenticate=broker_pb2.SaslAuthenticateRequest(auth_bytes=b"x" * 10))
    assert parse(small.SerializeToString()) == small
    large = broker_pb2.SaslRequest(authenticate=broker_pb2.SaslAuthenticateRequest(auth_bytes=b"x" * 200))
    assert parse(large.SerializeToString()) == OversizedSaslRequest(len(large.SerializeToString()))

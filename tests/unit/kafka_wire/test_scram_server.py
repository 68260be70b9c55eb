"""The SCRAM server state machine against RFC 7677's SCRAM-SHA-256 example, and its refusals."""

from __future__ import annotations

import base64

from minikafka.broker.kafka_wire.scram_server import (
    AwaitingClientFinal,
    AwaitingClientFirst,
    ScramComplete,
    ScramFailed,
    step,
)
from minikafka.common.scram import (
    ScramMechanism,
    client_key,
    credential_from_salted,
    digest,
    hmac_of,
    salted_password,
    xor,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
NONCE = CLIENT_NONCE + SERVER_NONCE
CREDENTIAL = credential_from_salted(SHA256, SALT, salted_password(SHA256, "pencil", SALT, 4096), 4096)


def lookup(user: str):
    return CREDENTIAL if user == "user" else None


def test_rfc7677_example_exchange():
    first = step(AwaitingClientFirst(SHA256), f"n,,n=user,r={CLIENT_NONCE}".encode(), lookup, SERVER_NONCE)
    assert first.challenge == f"r={NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
    assert isinstance(first.state, AwaitingClientFinal)
    final = step(
        first.state,
        f"c=biws,r={NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=".encode(),
        lookup,
        "unused",
    )
    assert final.state == ScramComplete("user")
    assert final.challenge == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _client_final(
    mechanism: ScramMechanism, password: str, server_first: bytes, bare: str, nonce_prefix: str = ""
) -> bytes:
    """What a client sends after server-first (the test's own client, from RFC 5802's formulas); `nonce_prefix`
    goes before the nonce, as librdkafka before 2.6.1 puts its own nonce there again."""
    fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
    salted = salted_password(mechanism, password, base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = f"c=biws,r={nonce_prefix}{fields['r']}"
    auth_message = f"{bare},{server_first.decode()},{without_proof}".encode()
    key = client_key(mechanism, salted)
    proof = xor(key, hmac_of(mechanism, digest(mechanism, key), auth_message))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def test_sha512_right_and_wrong_password():
    mechanism = ScramMechanism.SCRAM_SHA_512
    credential = credential_from_salted(
        mechanism, b"salt", salted_password(mechanism, "alice-secret", b"salt", 4096), 4096
    )
    bare = "n=alice,r=abc"
    for password, complete in (("alice-secret", True), ("wrong", False)):
        first = step(AwaitingClientFirst(mechanism), f"n,,{bare}".encode(), lambda _u: credential, "xyz")
        final = step(first.state, _client_final(mechanism, password, first.challenge, bare), lambda _u: credential, "")
        assert isinstance(final.state, ScramComplete if complete else ScramFailed)
        assert (final.challenge != b"") is complete


def test_refusals():
    start = AwaitingClientFirst(SHA256)
    unknown_user = step(start, b"n,,n=nobody,r=abc", lookup, "x")
    assert isinstance(unknown_user.state, ScramFailed) and unknown_user.challenge == b""
    assert isinstance(step(start, b"p=tls-unique,,n=user,r=abc", lookup, "x").state, ScramFailed)
    assert isinstance(step(start, b"garbage", lookup, "x").state, ScramFailed)
    assert isinstance(step(start, b"n,a=other,n=user,r=abc", lookup, "x").state, ScramFailed)
    assert isinstance(step(start, b"n,,n=user,r=abc,tokenauth=true", lookup, "x").state, ScramFailed)
    first = step(start, b"n,,n=user,r=abc", lookup, "x")
    wrong_nonce = step(first.state, b"c=biws,r=abcy,p=AAAA", lookup, "")
    assert isinstance(wrong_nonce.state, ScramFailed)
    assert isinstance(step(first.state, b"c=biws,r=abcx,p=!!", lookup, "").state, ScramFailed)
    assert isinstance(step(ScramComplete("user"), b"n,,n=user,r=abc", lookup, "x").state, ScramFailed)


def test_escaped_username():
    first = step(
        AwaitingClientFirst(SHA256), b"n,,n=a=2Cb=3Dc,r=abc", lambda u: CREDENTIAL if u == "a,b=c" else None, "x"
    )
    assert isinstance(first.state, AwaitingClientFinal) and first.state.username == "a,b=c"


def test_a_doubled_client_nonce_is_refused_unless_suffix_matching_is_on():
    """librdkafka before 2.6.1 sends client nonce + the server's whole nonce (which starts with the client's)."""
    mechanism = ScramMechanism.SCRAM_SHA_512
    credential = credential_from_salted(mechanism, b"salt", salted_password(mechanism, "secret", b"salt", 4096), 4096)
    bare = "n=alice,r=abc"
    for suffix_ok in (False, True):
        first = step(AwaitingClientFirst(mechanism, suffix_ok), f"n,,{bare}".encode(), lambda _u: credential, "xyz")
        final_message = _client_final(mechanism, "secret", first.challenge, bare, nonce_prefix="abc")
        assert b",r=abcabcxyz," in final_message
        final = step(first.state, final_message, lambda _u: credential, "")
        assert isinstance(final.state, ScramComplete if suffix_ok else ScramFailed)
        if not suffix_ok:  # the broker's log names the setting that would accept it
            assert "sasl.scram.final.nonce.match=suffix" in final.state.reason

"""The client side of one SCRAM exchange, as Kafka's ScramSaslClient runs it, pure: client-first, then the
client-final message computed from the server-first one, then the server's signature checked. The nonce is a
parameter (the shell draws it)."""

from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass

from minikafka.common.scram import MIN_ITERATIONS, ScramMechanism, client_key, digest, hmac_of, salted_password, xor

GS2_HEADER = "n,,"  # no channel binding, no authorization id


@dataclass(frozen=True)
class ScramClientFirst:
    mechanism: ScramMechanism
    username: str
    password: str
    client_nonce: str

    @property
    def bare(self) -> str:
        return f"n={_saslname(self.username)},r={self.client_nonce}"

    @property
    def message(self) -> bytes:
        return (GS2_HEADER + self.bare).encode()


@dataclass(frozen=True)
class ScramClientFinal:
    message: bytes  # what to send
    expected_server_signature: bytes


@dataclass(frozen=True)
class ScramClientError:
    reason: str


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def client_final(first: ScramClientFirst, server_first: bytes) -> ScramClientFinal | ScramClientError:
    """The client-final message answering `server_first`, or why the server's message is refused."""
    try:
        text = server_first.decode("utf-8")
        fields = dict(part.split("=", 1) for part in text.split(","))
        nonce, salt, iterations = fields["r"], base64.b64decode(fields["s"], validate=True), int(fields["i"])
    except (UnicodeDecodeError, ValueError, KeyError, binascii.Error) as error:
        return ScramClientError(f"invalid SCRAM server-first message: {error}")
    if not nonce.startswith(first.client_nonce) or nonce == first.client_nonce:
        return ScramClientError("the server's nonce does not extend the client's")
    if iterations < MIN_ITERATIONS:
        return ScramClientError(f"requested iterations {iterations} is less than the minimum {MIN_ITERATIONS}")
    mechanism = first.mechanism
    salted = salted_password(mechanism, first.password, salt, iterations)
    without_proof = f"c={base64.b64encode(GS2_HEADER.encode()).decode()},r={nonce}"
    auth_message = f"{first.bare},{text},{without_proof}".encode()
    key = client_key(mechanism, salted)
    proof = xor(key, hmac_of(mechanism, digest(mechanism, key), auth_message))
    server_key = hmac_of(mechanism, salted, b"Server Key")
    return ScramClientFinal(
        f"{without_proof},p={base64.b64encode(proof).decode()}".encode(), hmac_of(mechanism, server_key, auth_message)
    )


def server_signature_ok(final: ScramClientFinal, server_final: bytes) -> bool:
    """Whether the server-final message `v=...` proves the server knew the credential."""
    text = server_final.decode("utf-8", "replace")
    if not text.startswith("v="):
        return False
    try:
        signature = base64.b64decode(text[2:], validate=True)
    except binascii.Error:
        return False
    return hmac.compare_digest(signature, final.expected_server_signature)

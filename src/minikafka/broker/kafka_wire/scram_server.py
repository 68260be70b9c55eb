"""The server side of one SCRAM exchange (RFC 5802, as Kafka's ScramSaslServer): a pure state machine.

client-first -> server-first (the salt, iterations and the nonce extended by the server's), client-final -> the
server's signature once the client's proof matches the StoredKey. Any other message, an unknown user or a wrong
proof ends it in `ScramFailed`; the caller answers SASL_AUTHENTICATION_FAILED without saying which.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Callable
from dataclasses import dataclass

from minikafka.common.scram import ScramCredential, ScramMechanism, digest, hmac_of, xor

CredentialLookup = Callable[[str], ScramCredential | None]


@dataclass(frozen=True)
class AwaitingClientFirst:
    mechanism: ScramMechanism
    # Accept a client-final nonce that only ends with the server's, as Kafka 3.8.1 to 3.9 did: librdkafka before
    # 2.6.1 sends the client nonce twice. Kafka 4 (the default here) requires the exact nonce (RFC 5802).
    nonce_suffix_ok: bool = False


@dataclass(frozen=True)
class AwaitingClientFinal:
    mechanism: ScramMechanism
    username: str
    credential: ScramCredential
    gs2_header: str
    client_first_bare: str
    server_first: str
    nonce: str
    nonce_suffix_ok: bool = False


@dataclass(frozen=True)
class ScramComplete:
    username: str


@dataclass(frozen=True)
class ScramFailed:
    reason: str  # for the broker's log only: never sent to the client


ScramState = AwaitingClientFirst | AwaitingClientFinal | ScramComplete | ScramFailed


@dataclass(frozen=True)
class ScramStep:
    state: ScramState
    challenge: bytes  # the message to send back (empty once failed)


def _attributes(message: str) -> dict[str, str]:
    """`a=1,b=2` as {a: 1, b: 2}; values may hold `=` (base64)."""
    pairs = {}
    for part in message.split(","):
        name, sep, value = part.partition("=")
        if not sep or len(name) != 1:
            raise ValueError(f"malformed SCRAM attribute {part!r}")
        pairs[name] = value
    return pairs


def _saslname(text: str) -> str:
    """RFC 5802's saslname: `=2C` is a comma and `=3D` an equals sign; any other `=` is malformed."""
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise ValueError("malformed username escape")
    return text.replace("=2C", ",").replace("=3D", "=")


def _fail(reason: str) -> ScramStep:
    return ScramStep(ScramFailed(reason), b"")


def step(state: ScramState, message: bytes, lookup: CredentialLookup, server_nonce: str) -> ScramStep:
    """The next state and the challenge for the client's `message`; `server_nonce` is used only on client-first."""
    try:
        text = message.decode("utf-8")
        if isinstance(state, AwaitingClientFirst):
            return _client_first(state, text, lookup, server_nonce)
        if isinstance(state, AwaitingClientFinal):
            return _client_final(state, text)
    except (UnicodeDecodeError, ValueError, binascii.Error) as error:
        return _fail(f"invalid SCRAM message: {error}")
    return _fail(f"unexpected SCRAM message in state {type(state).__name__}")


def _client_first(state: AwaitingClientFirst, text: str, lookup: CredentialLookup, server_nonce: str) -> ScramStep:
    flag, _, rest = text.partition(",")
    authzid, sep, bare = rest.partition(",")
    if flag not in ("n", "y") or not sep:
        return _fail("channel binding is not supported, or the gs2 header is malformed")
    attributes = _attributes(bare)
    if "n" not in attributes or "r" not in attributes or "m" in attributes:
        return _fail("client-first-message lacks a username or nonce, or asks for a mandatory extension")
    username = _saslname(attributes["n"])
    if authzid and _saslname(authzid.removeprefix("a=")) != username:
        return _fail("client requested an authorization id that is different from username")
    if attributes.get("tokenauth") == "true":
        return _fail("delegation tokens are not supported")
    credential = lookup(username)
    if credential is None:
        return _fail(f"no {state.mechanism.mechanism_name} credential for user {username!r}")
    nonce = attributes["r"] + server_nonce
    salt = base64.b64encode(credential.salt).decode()
    server_first = f"r={nonce},s={salt},i={credential.iterations}"
    gs2_header = f"{flag},{authzid},"
    waiting = AwaitingClientFinal(
        state.mechanism, username, credential, gs2_header, bare, server_first, nonce, state.nonce_suffix_ok
    )
    return ScramStep(waiting, server_first.encode())


def _client_final(state: AwaitingClientFinal, text: str) -> ScramStep:
    without_proof, sep, proof_part = text.rpartition(",p=")
    if not sep:
        return _fail("client-final-message has no proof")
    attributes = _attributes(without_proof)
    if base64.b64decode(attributes.get("c", ""), validate=True) != state.gs2_header.encode():
        return _fail("channel binding does not match the gs2 header")
    nonce = attributes.get("r", "")
    if nonce != state.nonce and not (state.nonce_suffix_ok and nonce.endswith(state.nonce)):
        if nonce.endswith(state.nonce):
            return _fail(
                "nonce does not match the server's: it repeats the client's nonce before it, as librdkafka before "
                "2.6.1 (kcat 1.7) sends it; sasl.scram.final.nonce.match=suffix accepts that, as Kafka 3.8.1 to 3.9 did"
            )
        return _fail("nonce does not match the server's")
    auth_message = f"{state.client_first_bare},{state.server_first},{without_proof}".encode()
    mechanism, credential = state.mechanism, state.credential
    proof = base64.b64decode(proof_part, validate=True)
    signature = hmac_of(mechanism, credential.stored_key, auth_message)
    if len(proof) != len(signature):
        return _fail("client proof has the wrong length")
    if not hmac.compare_digest(digest(mechanism, xor(proof, signature)), credential.stored_key):
        return _fail(f"invalid client proof for user {state.username!r}")
    server_signature = hmac_of(mechanism, credential.server_key, auth_message)
    return ScramStep(ScramComplete(state.username), b"v=" + base64.b64encode(server_signature))

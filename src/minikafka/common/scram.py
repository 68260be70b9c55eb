"""SCRAM credentials (RFC 5802, RFC 7677): what a server keeps of a password, and the key derivations both sides use.

Only the salt, iteration count, StoredKey and ServerKey are ever stored; the password, and the salted password a
client sends when it sets a credential, are not.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from enum import IntEnum


class ScramMechanism(IntEnum):
    """Kafka's ScramMechanism type numbers, as AlterUserScramCredentials and the metadata record carry them."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @classmethod
    def of_name(cls, name: str) -> ScramMechanism | None:
        return next((m for m in cls if m.mechanism_name == name), None)


MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations, for both SHA-256 and SHA-512
MAX_ITERATIONS = 16384  # Kafka's upper bound on AlterUserScramCredentials iterations
DEFAULT_ITERATIONS = 4096


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(Normalize(password), salt, i): PBKDF2 with HMAC of the mechanism's hash (SASLprep left out, as Kafka's
    ScramFormatter does)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def hmac_of(mechanism: ScramMechanism, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, mechanism.hash_name).digest()


def digest(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def client_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return hmac_of(mechanism, salted, b"Client Key")


def credential_from_salted(mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
    """The stored form of a credential, from the salted password a client computed."""
    return ScramCredential(
        salt=salt,
        stored_key=digest(mechanism, client_key(mechanism, salted)),
        server_key=hmac_of(mechanism, salted, b"Server Key"),
        iterations=iterations,
    )


def xor(left: bytes, right: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(left, right, strict=True))

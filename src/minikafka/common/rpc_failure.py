"""What a failed gRPC call says to a person: a TLS handshake failure named as one, else the status code.

gRPC reports a handshake its TLS refused (a certificate of another CA, an expired one) as a plain UNAVAILABLE
whose details hold the TLS library's reason; the reason itself is otherwise only in gRPC's own log on stderr.
"""

from __future__ import annotations

import re

import grpc

# "... Tls handshake failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: error:1a000064:ECDSA routines:OPENSSL_internal:
# BAD_SIGNATURE: certificate signature failure: OK" -> the part after the last "routines:..._internal:" marker.
_HANDSHAKE = re.compile(r"(?:tls|ssl) handshake failed(?: \([A-Z_]+\))?:?\s*(?P<reason>.*)", re.IGNORECASE)
_LIBRARY_PREFIX = re.compile(r"^.*?error:[0-9a-f]+:[^:]*routines:[A-Za-z_]*:", re.IGNORECASE)
_TRAILING_OK = re.compile(r":\s*OK\s*$")


def tls_handshake_reason(error: grpc.RpcError) -> str | None:
    """The TLS library's reason when the call failed in the TLS handshake (e.g. `BAD_SIGNATURE: certificate
    signature failure`), else None."""
    details = _details(error)
    match = _HANDSHAKE.search(details)
    if match is None:
        return None
    reason = _TRAILING_OK.sub("", _LIBRARY_PREFIX.sub("", match.group("reason"))).strip()
    return reason or "no reason given"


def tls_handshake_message(address: str, reason: str) -> str:
    return f"TLS handshake with {address} failed: {reason}; check the CA/certificates (ssl.* in --command-config)"


def rpc_failure_text(address: str, error: grpc.RpcError) -> str:
    """One line for a failed call to `address`: the TLS handshake's reason when that is what failed, else
    `address: CODE`."""
    reason = tls_handshake_reason(error)
    if reason is not None:
        return tls_handshake_message(address, reason)
    code = error.code() if hasattr(error, "code") else None  # type: ignore[attr-defined]
    return f"{address}: {code.name if code is not None else type(error).__name__}"


def _details(error: grpc.RpcError) -> str:
    details = getattr(error, "details", None)
    text = details() if callable(details) else None
    return text or ""

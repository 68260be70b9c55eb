"""TLS material of one process, as gRPC credentials (gRPC's own TLS; certificates come from `certificates`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc


@dataclass(frozen=True)
class TlsFiles:
    """The CA every peer is checked against, and this end's certificate and key (None: it presents none)."""

    ca: Path
    certificate: Path | None = None
    key: Path | None = None

    def _own_pair(self) -> tuple[bytes, bytes] | tuple[None, None]:
        if self.certificate is None or self.key is None:
            return None, None
        return self.key.read_bytes(), self.certificate.read_bytes()

    def channel_credentials(self) -> grpc.ChannelCredentials:
        key, certificate = self._own_pair()
        return grpc.ssl_channel_credentials(self.ca.read_bytes(), key, certificate)

    def server_credentials(self, require_client_auth: bool) -> grpc.ServerCredentials:
        key, certificate = self._own_pair()
        if key is None or certificate is None:
            raise ValueError("a TLS listener needs its own certificate and key")
        return grpc.ssl_server_credentials(
            [(key, certificate)], root_certificates=self.ca.read_bytes(), require_client_auth=require_client_auth
        )

    def to_json(self) -> dict[str, str]:
        files = {"ca": str(self.ca)}
        if self.certificate is not None and self.key is not None:
            files.update(certificate=str(self.certificate), key=str(self.key))
        return files

    @classmethod
    def from_json(cls, data: dict[str, str]) -> TlsFiles:
        certificate, key = data.get("certificate"), data.get("key")
        return cls(Path(data["ca"]), Path(certificate) if certificate else None, Path(key) if key else None)


@dataclass(frozen=True)
class ServerSecurity:
    """How a gRPC listener is served: TLS with this material, client certificates required or not."""

    tls: TlsFiles
    require_client_auth: bool


def peer_subject(context: object) -> str | None:
    """The subject (`CN=broker-1`) of the TLS peer's certificate on a server call (None without TLS or a client
    certificate)."""
    auth = context.auth_context()  # type: ignore[attr-defined]
    subjects = auth.get("x509_subject") or []
    return subjects[0].decode("utf-8", "replace") if subjects else None

"""A throwaway CA and a server certificate for the brokers' loopback addresses, made with the openssl command line
(tests only: a run's own certificates come from its cluster CA)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

SERVER_ADDRESSES = ("127.0.0.1", "127.0.2.1", "127.0.2.2", "127.0.2.3")


@dataclass(frozen=True)
class CertificateFiles:
    ca: Path  # the CA certificate clients trust (ssl.ca.location)
    keystore: Path  # the server's private key and certificate (ssl.keystore.location)


def _openssl(*args: str | Path, cwd: Path) -> None:
    subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True, timeout=30)


def make_certificates(directory: Path) -> CertificateFiles:
    directory.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=test-ca", cwd=directory
    )
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=minikafka-broker", cwd=directory)
    sans = ",".join([*(f"IP:{address}" for address in SERVER_ADDRESSES), "DNS:localhost"])
    (directory / "server.ext").write_text(f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n")
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "2", "-extfile", "server.ext", cwd=directory,
    )  # fmt: skip
    keystore = directory / "server-keystore.pem"
    keystore.write_text((directory / "server.key").read_text() + (directory / "server.pem").read_text())
    return CertificateFiles(directory / "ca.pem", keystore)


def make_client_certificate(directory: Path, name: str) -> Path:
    """A client certificate for `name`, signed by the CA make_certificates left in `directory`: key and chain in
    one PEM file."""
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=directory)
    (directory / f"{name}.ext").write_text("extendedKeyUsage=clientAuth\n")
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=directory,
    )  # fmt: skip
    bundle = directory / f"{name}-keystore.pem"
    bundle.write_text((directory / f"{name}.key").read_text() + (directory / f"{name}.pem").read_text())
    return bundle

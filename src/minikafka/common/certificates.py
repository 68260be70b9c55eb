"""A cluster's certificate authority and one certificate per node (and one for the admin), made with `cryptography`.

Layout of a certificates directory (a run's `RUN/certs/`, or `minikafka certs create --dir D`):

    D/ca.pem, D/ca.key             the cluster CA (the key signs, and stays here: nodes never read it; `certs
                                   create --ca-dir` keeps the key in another directory)
    D/<name>.pem, D/<name>.key     a node's certificate and key; <name> is controller-<id>, broker-<id> or admin

A certificate's subject CN is its principal's name (`broker-1`, `controller-101`, `admin`); its subject
alternative names are the hosts the node is reached at, which clients check as they do any TLS server's name.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_NAME = "ca"
ADMIN_NAME = "admin"
VALID_DAYS = 3650
_CA_COMMON_NAME = "minikafka cluster CA"


@dataclass(frozen=True)
class CertificateFiles:
    """Where one principal's PEM files are."""

    certificate: Path
    key: Path


@dataclass(frozen=True)
class CertificateRequest:
    """A certificate to issue: the principal's name (its CN) and the hosts it serves at (empty: a client only)."""

    name: str
    hosts: tuple[str, ...] = ()


def files_for(directory: Path, name: str) -> CertificateFiles:
    return CertificateFiles(directory / f"{name}.pem", directory / f"{name}.key")


def ca_certificate_path(directory: Path) -> Path:
    return directory / f"{CA_NAME}.pem"


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_private(path: Path, data: bytes) -> None:
    """Keys are readable by their owner only."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _validity(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return builder.not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(
        now + datetime.timedelta(days=VALID_DAYS)
    )


def _subject_alternative_names(hosts: Sequence[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def create_ca(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new self-signed CA in `directory` (ca.pem, ca.key)."""
    directory.mkdir(parents=True, exist_ok=True)
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, _CA_COMMON_NAME)])
    builder = _validity(x509.CertificateBuilder().subject_name(name).issuer_name(name))
    certificate = (
        builder.public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # keyCertSign, cRLSign only
        .sign(key, hashes.SHA256())
    )
    files = files_for(directory, CA_NAME)
    files.certificate.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    _write_private(files.key, _key_pem(key))
    return certificate, key


def load_ca(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The CA `create_ca` left in `directory`, to issue more certificates with."""
    files = files_for(directory, CA_NAME)
    certificate = x509.load_pem_x509_certificate(files.certificate.read_bytes())
    key = serialization.load_pem_private_key(files.key.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{files.key} is not the key of a minikafka CA")
    return certificate, key


def issue(
    directory: Path, request: CertificateRequest, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey
) -> CertificateFiles:
    """A certificate for `request.name` signed by the CA, good for both ends of a TLS link (nodes are both)."""
    key = _new_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, request.name)])
    builder = (
        _validity(x509.CertificateBuilder().subject_name(subject).issuer_name(ca.subject))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    )
    if request.hosts:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(_subject_alternative_names(request.hosts)), critical=False
        )
    certificate = builder.sign(ca_key, hashes.SHA256())
    files = files_for(directory, request.name)
    files.certificate.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    _write_private(files.key, _key_pem(key))
    return files


def create_certificates(
    directory: Path, requests: Sequence[CertificateRequest], ca_directory: Path | None = None
) -> list[CertificateFiles]:
    """A new CA and one certificate per request (an existing CA in `directory` is replaced). With `ca_directory`
    the CA's key stays there and `directory` gets only the CA's certificate (what nodes and clients read)."""
    ca, ca_key = create_ca(ca_directory or directory)
    if ca_directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        files_for(directory, CA_NAME).certificate.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return [issue(directory, request, ca, ca_key) for request in requests]

"""A controller whose certificate another CA signed (a stale copy of a re-created compose cluster's certificates):
the admin client says the TLS handshake failed and why, instead of 'no active controller' after its timeout."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from minikafka.client.admin import AdminClient
from minikafka.common.certificates import CertificateRequest, create_certificates
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.rpc_failure import rpc_failure_text
from minikafka.common.tls import TlsFiles


def _certificates(directory: Path) -> Path:
    create_certificates(directory, [CertificateRequest("controller-101", ("localhost",)), CertificateRequest("admin")])
    return directory


@pytest.fixture(scope="module")
def tls_listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """A TLS listener with no service (the handshake comes first), its CA's directory and another CA's."""
    served = _certificates(tmp_path_factory.mktemp("served"))
    stale = _certificates(tmp_path_factory.mktemp("stale"))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    tls = TlsFiles(served / "ca.pem", served / "controller-101.pem", served / "controller-101.key")
    port = server.add_secure_port("localhost:0", tls.server_credentials(require_client_auth=True))
    server.start()
    yield f"localhost:{port}", served, stale
    server.stop(grace=None)


def _admin_tls(directory: Path) -> TlsFiles:
    return TlsFiles(directory / "ca.pem", directory / "admin.pem", directory / "admin.key")


def test_a_certificate_of_another_ca_is_named_as_a_tls_failure(tls_listener: tuple[str, Path, Path]) -> None:
    address, _served, stale = tls_listener
    with AdminClient([address], timeout_s=60, tls=_admin_tls(stale)) as admin, pytest.raises(KafkaError) as raised:
        admin.describe_quorum()
    message = str(raised.value)
    assert raised.value.code == ErrorCode.NETWORK_EXCEPTION
    assert f"TLS handshake with {address} failed: BAD_SIGNATURE" in message
    assert "check the CA/certificates" in message


def test_the_right_ca_gets_past_the_handshake(tls_listener: tuple[str, Path, Path]) -> None:
    """The listener has no Controller service: the call fails, but not in the TLS handshake."""
    address, served, _stale = tls_listener
    channel = grpc.secure_channel(address, _admin_tls(served).channel_credentials())
    try:
        channel.unary_unary("/minikafka.Controller/DescribeQuorum")(b"", timeout=30)
    except grpc.RpcError as error:
        assert rpc_failure_text(address, error) == f"{address}: UNIMPLEMENTED"
    finally:
        channel.close()

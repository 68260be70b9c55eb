"""SaslAuthenticate on a GRPC_SASL_SSL listener reads no token larger than sasl.server.max.receive.size before
authentication, as the Kafka listener does (real processes, raw gRPC streams): six concurrent streams sending
60 MiB tokens are refused with INVALID_REQUEST (42) without being parsed, the broker lives on, and a real client
then authenticates as before. The broker's RSS is printed: gRPC itself still receives each message whole, up to
the server's receive limit, before any handler sees it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import grpc
import pytest
from cluster_fixtures import running_cluster
from hostile_clients import alive, rss_mib

from minikafka.common.certificates import ca_certificate_path
from minikafka.common.grpc_support import sync_channel
from minikafka.common.tls import TlsFiles
from minikafka.deploy.local_cluster import Cluster
from minikafka.pb import broker_pb2, broker_pb2_grpc

pytestmark = pytest.mark.integration

STREAMS = 6
REQUEST_MAX_MIB = 8
SETTINGS = {
    "socket.request.max.bytes": str(REQUEST_MAX_MIB << 20),
    "listener.security.protocol.map": "PLAINTEXT:SASL_SSL,GRPC:GRPC_SASL_SSL,BROKER:GRPC,CONTROLLER:GRPC",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.plain.users": "carol:carol-secret",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("grpc-sasl-bound"), 1, 1, **SETTINGS) as started:
        yield started


def exchange(channel: grpc.Channel, token: bytes) -> tuple[grpc.StatusCode | None, str]:
    """A PLAIN handshake, then `token`: the stream's end status (None: answered) and its details or error."""
    requests = [
        broker_pb2.SaslRequest(handshake=broker_pb2.SaslHandshakeRequest(mechanism="PLAIN")),
        broker_pb2.SaslRequest(authenticate=broker_pb2.SaslAuthenticateRequest(auth_bytes=token)),
    ]
    try:
        answers = list(broker_pb2_grpc.BrokerStub(channel).SaslAuthenticate(iter(requests), timeout=120))
    except grpc.RpcError as error:
        return error.code(), error.details() or ""
    last = answers[-1].authenticate
    return None, f"{last.error_code} {last.error_message}"


def attack(channel: grpc.Channel, pid: int, token_mib: int) -> tuple[float, list[tuple[grpc.StatusCode | None, str]]]:
    """STREAMS concurrent exchanges with `token_mib` tokens on one connection: the broker's peak RSS and answers."""
    peak = [rss_mib(pid)]
    results: list[tuple[grpc.StatusCode | None, str]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):  # a sampling period, not a synchronisation
            peak[0] = max(peak[0], rss_mib(pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    token = b"\0carol\0" + b"x" * (token_mib << 20)
    senders = [threading.Thread(target=lambda: results.append(exchange(channel, token))) for _ in range(STREAMS)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    done.set()
    sampler.join()
    return peak[0], results


def test_oversized_sasl_tokens_are_refused_and_memory_stays_bounded(cluster: Cluster) -> None:
    pid = cluster.pids[cluster.brokers[0].node_id]
    tls = TlsFiles(ca_certificate_path(cluster.certs_dir))
    with sync_channel(cluster.bootstrap_servers[0], tls) as channel:
        assert exchange(channel, b"\0carol\0carol-secret") == (None, "0 ")  # connected and authenticated
        before = rss_mib(pid)
        # Above sasl.server.max.receive.size, below socket.request.max.bytes: refused unparsed, as Kafka does.
        small_peak, refused = attack(channel, pid, 6)
        # The allocator may keep what the 6 MiB messages took (gRPC receives each whole): the next bound counts from
        # here, or that residue would be charged to the 60 MiB tokens.
        between = rss_mib(pid)
        # Above socket.request.max.bytes: gRPC refuses it from its length prefix, before buffering it.
        large_peak, too_large = attack(channel, pid, 60)
        after = rss_mib(pid)
        print(
            f"broker RSS: {before:.0f} MiB before, peak {small_peak:.0f} MiB with {STREAMS} x 6 MiB tokens, "
            f"{between:.0f} MiB after them, peak {large_peak:.0f} MiB with {STREAMS} x 60 MiB tokens, "
            f"{after:.0f} MiB after; answers: {refused[0]}, {too_large[0]}"
        )
        assert alive(pid)
        for code, details in refused:
            assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details)
            assert details.startswith("INVALID_REQUEST (42): SASL request of "), details
        for code, details in too_large:
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, (code, details)
        assert large_peak - between < 100, (
            f"{STREAMS} x 60 MiB tokens took the broker from {between} to {large_peak} MiB"
        )
        assert exchange(channel, b"\0carol\0carol-secret") == (None, "0 ")  # a real client still authenticates

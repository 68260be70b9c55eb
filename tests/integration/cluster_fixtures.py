"""Helpers for tests that run real processes: start a local cluster, always tear it down, wait on conditions."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from minikafka.common.certificates import CertificateRequest, ca_certificate_path, files_for, issue, load_ca
from minikafka.common.tls import TlsFiles
from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster, is_alive, kill

T = TypeVar("T")


@contextmanager
def running_cluster(run_dir: Path, controllers: int = 3, brokers: int = 3, **overrides: str) -> Iterator[Cluster]:
    cluster = cluster_commands.up(run_dir, controllers, brokers, overrides, timeout_s=60)
    try:
        yield cluster
    finally:
        cluster_commands.down(cluster, timeout_s=10)
        for pid in cluster.pids.values():
            if is_alive(pid):
                kill(pid)


def node_tls(cluster: Cluster, node_id: int) -> TlsFiles:
    """Node `node_id`'s own certificate and key from the run's certs: a test that speaks as that node."""
    own = files_for(cluster.certs_dir, cluster.node(node_id).label)
    return TlsFiles(ca_certificate_path(cluster.certs_dir), own.certificate, own.key)


def issue_node_tls(cluster: Cluster, label: str) -> TlsFiles:
    """A certificate of the run's CA for a node the run did not start (`broker-1` of a controllers-only run)."""
    own = issue(cluster.certs_dir, CertificateRequest(label, ("127.0.0.1",)), *load_ca(cluster.certs_dir))
    return TlsFiles(ca_certificate_path(cluster.certs_dir), own.certificate, own.key)


def admin_config(cluster: Cluster) -> list[str]:
    """The CLI arguments beside explicit controller addresses: the admin's TLS settings (mutual TLS there)."""
    return ["--command-config", str(cluster.admin_client_properties)]


def eventually(probe: Callable[[], T | None], timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll until `probe` returns something truthy; fail with `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
        except Exception as error:  # the system is converging: remember why and poll again
            last_error = error
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last error: {last_error!r})")


def minikafka(*args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    """The `minikafka` command line, as a user runs it (a child process of this Python)."""
    return subprocess.run(
        [sys.executable, "-m", "minikafka.launcher", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def recv_frame(sock: socket.socket) -> bytes:
    """One size-prefixed frame of Kafka's wire protocol from a blocking socket (plain or TLS)."""
    size = struct.unpack(">i", recv_exactly(sock, 4))[0]
    return recv_exactly(sock, size)


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "connection closed by the broker"
        data += chunk
    return data

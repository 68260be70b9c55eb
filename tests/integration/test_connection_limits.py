"""Connections a hostile client holds on a broker's Kafka listener stay bounded (real processes, raw sockets):

- A connection that sends a size prefix and part of a frame is closed after connections.max.idle.ms (the idle
  timer counts from the last complete request), and the broker's open files come back down.
- max.connections.per.ip: the connections past it are closed at once; those below it are served.
- max.connections: past it the broker stops accepting; the waiting clients are served once others leave.
- accept() failing with EMFILE (the broker's open-file limit lowered under it) does not end the broker: it backs
  off and serves again once files are free.
"""

from __future__ import annotations

import resource
import socket
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from cluster_fixtures import eventually, running_cluster
from hostile_clients import alive, answers_api_versions, closed_by_peer, connect_from, events, open_files

from minikafka.deploy.local_cluster import Cluster, NodeSpec

pytestmark = pytest.mark.integration

# Longer than a loaded machine takes to have the broker accept the 50 half-sent connections: at 3 s, the first were
# closed as idle before the last were held.
IDLE_MS = 8000
PER_IP = 30
MAX_CONNECTIONS = 60
SETTINGS = {
    "connections.max.idle.ms": str(IDLE_MS),
    "max.connections.per.ip": str(PER_IP),
    "max.connections": str(MAX_CONNECTIONS),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("connection-limits"), 1, 1, **SETTINGS) as started:
        spec = started.brokers[0]
        BASELINE[spec.node_id] = open_files(started.pids[spec.node_id])
        yield started


BASELINE: dict[int, int] = {}  # the broker's open files before any test connected


def broker(cluster: Cluster) -> tuple[NodeSpec, int]:
    """The broker, once the connections of earlier tests are closed on its side too."""
    spec = cluster.brokers[0]
    pid = cluster.pids[spec.node_id]
    eventually(lambda: open_files(pid) <= BASELINE[spec.node_id] + 2, 30, "earlier connections closed")
    return spec, pid


def test_accept_out_of_files_does_not_end_the_broker(cluster: Cluster) -> None:
    spec, pid = broker(cluster)
    assert spec.kafka_address is not None
    before = open_files(pid)
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (before + 20, hard))
    try:
        with ExitStack() as stack:
            socks: list[socket.socket] = []
            for i in range(50):
                socks.append(stack.enter_context(connect_from(f"127.0.4.{i // 20 + 1}", spec.kafka_address)))
            eventually(lambda: events(spec.events_path, "kafka_accept_failed"), 30, "accept() out of files")
            assert alive(pid)
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
    with connect_from("127.0.4.9", spec.kafka_address) as sock:
        assert eventually(lambda: answers_api_versions(sock), 30, "served again")
    assert alive(pid)


def test_half_sent_frames_are_closed_after_the_idle_time(cluster: Cluster) -> None:
    spec, pid = broker(cluster)
    assert spec.kafka_address is not None
    before = open_files(pid)
    with ExitStack() as stack:
        socks = []
        for i in range(50):
            sock = stack.enter_context(connect_from(f"127.0.1.{i // 25 + 1}", spec.kafka_address))
            sock.sendall(b"\x00\x00\x01\x00" + b"\x00\x12\x00\x00\x00")  # 256 bytes announced, 5 sent
            socks.append(sock)
        # Within the 2 files the broker may open or close on its own meanwhile, as the checks around allow.
        holding = eventually(lambda: open_files(pid) >= before + 48 and open_files(pid), 30, "50 connections held")
        eventually(lambda: all(closed_by_peer(s) for s in socks), 60, "every half-sent connection closed")
        after = eventually(lambda: open_files(pid) <= before + 2 and open_files(pid), 30, "the broker's files freed")
    print(f"open files: {before} before, {holding} holding 50 half-sent frames, {after} after the idle close")
    # The close's event line may reach the file a moment after the peer saw the close: waited for, not assumed.
    eventually(
        lambda: len([e for e in events(spec.events_path, "kafka_connection_closed") if "idle" in e["reason"]]) >= 50,
        30,
        "an idle-close event for each connection",
    )


def test_connections_past_max_connections_per_ip_are_closed_at_once(cluster: Cluster) -> None:
    spec, pid = broker(cluster)
    assert spec.kafka_address is not None
    with ExitStack() as stack:
        socks = [stack.enter_context(connect_from("127.0.2.1", spec.kafka_address)) for _ in range(PER_IP + 10)]
        served = [answers_api_versions(sock) for sock in socks]
        print(f"open files with {len(socks)} connections from one IP: {open_files(pid)}")
    assert served == [True] * PER_IP + [False] * 10
    refused = events(spec.events_path, "kafka_connection_refused")
    assert len(refused) >= 10 and f"maximum of {PER_IP} connections" in refused[-1]["reason"]


def test_past_max_connections_the_broker_waits_until_one_leaves(cluster: Cluster) -> None:
    spec, pid = broker(cluster)
    assert spec.kafka_address is not None
    before = open_files(pid)
    with ExitStack() as stack:
        socks = []
        for i in range(MAX_CONNECTIONS + 10):
            socks.append(stack.enter_context(connect_from(f"127.0.3.{i // 20 + 1}", spec.kafka_address)))
        # Each of the first connections answers while it is admitted; the last ten wait in the listen backlog.
        first = socks[: MAX_CONNECTIONS - 5]
        assert all(answers_api_versions(sock) for sock in first)
        holding = open_files(pid)
        assert holding <= before + MAX_CONNECTIONS  # the ten others are not accepted: no file of the broker's
        for sock in first[:15]:
            sock.close()
        assert all(answers_api_versions(sock) for sock in socks[MAX_CONNECTIONS - 5 :])
    print(f"open files at max.connections {MAX_CONNECTIONS} with {MAX_CONNECTIONS + 10} clients: {holding}")

"""A node whose listener port is taken does not start, and says so in one line naming the address (Kafka: "Socket
server failed to bind"), with no traceback: not a storage error, and no gRPC server left firing into a closed loop."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from minikafka.deploy import cluster_commands, local_cluster
from minikafka.deploy.local_cluster import ClusterError


def _hold_a_port_of(host: str, which: int, stack: ExitStack, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Plan clusters as usual, but listen on the `which`-th port planned for `host` before its node starts."""
    planned = local_cluster.free_ports
    held: list[int] = []

    def free_ports(count: int, address: str = "127.0.0.1") -> list[int]:
        ports = planned(count, address)
        if address == host and not held:
            taken = stack.enter_context(socket.create_server((address, ports[which])))
            held.append(taken.getsockname()[1])
        return ports

    monkeypatch.setattr(local_cluster, "free_ports", free_ports)
    return held


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as held:
        yield held


@pytest.mark.parametrize(
    ("host", "which", "label"),
    [("127.0.2.1", 1, "broker-1"), ("127.0.1.1", 0, "controller-101")],
    ids=["broker-kafka-port", "controller-port"],
)
def test_a_taken_port_is_one_line_naming_it(
    tmp_path: Path, stack: ExitStack, monkeypatch: pytest.MonkeyPatch, host: str, which: int, label: str
) -> None:
    held = _hold_a_port_of(host, which, stack, monkeypatch)
    run_dir = tmp_path / "run"
    with pytest.raises(ClusterError) as refused:
        cluster_commands.up(run_dir, 1, 1, {}, timeout_s=30)
    assert held and f"{host}:{held[0]}" in str(refused.value)
    stderr = (run_dir / label / "stderr.log").read_text()
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.endswith(f"error: Socket server failed to bind to {host}:{held[0]}: Address already in use"), last

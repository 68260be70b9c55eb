"""Controller failovers on a running compose cluster, timed: how long after the active controller is killed every
broker fetches the metadata log from the new one. Under podman a restarted container comes back at a new address,
so rounds whose new leader was restarted before show whether brokers find it there.

Usage (cluster up, certificates copied out as docs/compose.md says; MINIKAFKA_CONTAINER_ENGINE as for `fault`):
    .venv/bin/python deploy/compose_failover.py compose-certs [ROUNDS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from minikafka.client.admin import AdminClient
from minikafka.common.errors import KafkaError
from minikafka.common.tls import TlsFiles

PORTS = {101: 19101, 102: 19102, 103: 19103}
ENGINE = os.environ.get("MINIKAFKA_CONTAINER_ENGINE", "docker")
ROUND_DEADLINE_S = 90
POLL_S = 0.2


def fault(kind: str, node: int) -> None:
    cli = str(Path(sys.executable).with_name("minikafka"))
    command = [cli, "fault", kind, str(node), "--compose", "docker-compose.yml", "--dir", "runs/compose-failover"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def container(service: str) -> str:
    query = [ENGINE, "ps", "-a", "--filter", f"label=com.docker.compose.service={service}", "--format", "{{.Names}}"]
    return subprocess.run(query, capture_output=True, text=True, check=True).stdout.split()[0]


def address_of(service: str) -> str:
    template = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}"
    inspect = [ENGINE, "inspect", "-f", template, container(service)]
    return subprocess.run(inspect, capture_output=True, text=True, check=True).stdout.strip()


def healthy(service: str) -> bool:
    if ENGINE == "podman":  # with no systemd nothing runs podman's healthchecks: run it here
        return subprocess.run([ENGINE, "healthcheck", "run", container(service)], capture_output=True).returncode == 0
    inspect = [ENGINE, "inspect", "-f", "{{.State.Health.Status}}", container(service)]
    return subprocess.run(inspect, capture_output=True, text=True).stdout.strip() == "healthy"


def wait_healthy(service: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not healthy(service):
        if time.monotonic() > deadline:
            raise SystemExit(f"{service} not healthy within {timeout_s:.0f} s")
        time.sleep(1)


def one_round(tls: TlsFiles, restarted: set[int]) -> str:
    """Kill the active controller; the time until every broker fetched from the new one (the controllers' clock
    is the host's monotonic clock: containers share the kernel)."""
    with AdminClient([f"localhost:{p}" for p in PORTS.values()], timeout_s=10, tls=tls) as admin:
        leader = admin.describe_quorum()["leader_id"]
    killed_at = time.monotonic()
    fault("kill", leader)
    others = [f"localhost:{PORTS[n]}" for n in PORTS if n != leader]
    try:
        while time.monotonic() < killed_at + ROUND_DEADLINE_S:
            try:
                with AdminClient(others, timeout_s=5, tls=tls) as admin:
                    quorum = admin.describe_quorum()
            except KafkaError:
                time.sleep(POLL_S)
                continue
            first = [o["last_fetch_timestamp"] / 1000 - killed_at for o in quorum["observers"]]
            if quorum["leader_id"] not in (leader, -1) and len(first) == 3 and min(first) > 0:
                kind = "restarted before, at a new address" if quorum["leader_id"] in restarted else "never restarted"
                return (
                    f"killed {leader}; new leader {quorum['leader_id']} ({kind}); every broker fetched from it "
                    f"{max(first):.1f} s after the kill"
                )
            time.sleep(POLL_S)
        return f"killed {leader}; not every broker fetched from a new leader within {ROUND_DEADLINE_S} s"
    finally:
        fault("start", leader)
        restarted.add(leader)
        wait_healthy(f"controller-{leader}")


def main(argv: list[str]) -> int:
    certs = Path(argv[0])
    tls = TlsFiles(certs / "ca.pem", certs / "admin.pem", certs / "admin.key")
    restarted: set[int] = set()
    for number in range(int(argv[1]) if len(argv) > 1 else 4):
        print(f"round {number}: {one_round(tls, restarted)}", flush=True)
        print(f"  addresses now: { ({n: address_of(f'controller-{n}') for n in PORTS}) }", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

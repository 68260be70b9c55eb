"""`minikafka cluster up|status|down`: the local cluster's lifecycle as a user drives it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minikafka.client.admin import AdminClient
from minikafka.common.errors import KafkaError
from minikafka.deploy.graceful_stop import describe, report_to_stderr, stop_nodes
from minikafka.deploy.local_cluster import (
    Cluster,
    ClusterError,
    NodeSpec,
    is_alive,
    is_paused,
    last_lines,
    new_run_dir,
    plan_cluster,
    spawn,
    validate_overrides,
    wait_until,
    write_configs,
)
from minikafka.deploy.network import (
    NetworkError,
    choose,
    command_prefix,
    delete_namespace,
    prepare_namespace,
    read_cuts,
    write_cuts,
)


@dataclass(frozen=True)
class Readiness:
    leader_id: int
    unfenced: frozenset[int]


def admin_for(cluster: Cluster, timeout_s: float = 2.0) -> AdminClient:
    return AdminClient(
        cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=timeout_s, tls=cluster.admin_tls
    )


def probe(cluster: Cluster) -> Readiness | None:
    """The quorum leader and the unfenced brokers, or None while no controller answers."""
    with admin_for(cluster) as admin:
        try:
            quorum = admin.describe_quorum()
            if quorum["leader_id"] < 0:
                return None
            brokers = admin.describe_cluster().brokers if cluster.brokers else []
        except KafkaError:
            return None
    return Readiness(quorum["leader_id"], frozenset(b.broker_id for b in brokers if not b.fenced))


def up(
    run_dir: Path | None = None,
    controllers: int = 3,
    brokers: int = 3,
    overrides: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
    network: str | None = "host",
    broker_ids: Sequence[int] | None = None,
    dynamic_quorum: bool = False,
    initial_controllers: int = 0,
    kafka_listeners: Sequence[str] = (),
) -> Cluster:
    """Start every node, then wait until the quorum has a leader and every broker is registered and unfenced.

    `network`: "netns" (a namespace of the run's own), "host", or None for netns where permitted (the command
    line's default). Python callers get "host": they talk to the nodes from this process, which is on the host.
    """
    validate_overrides(overrides or {})
    run_dir = (run_dir or new_run_dir()).resolve()
    if (run_dir / "cluster.json").exists():
        existing = Cluster.load(run_dir)
        running = [s.label for s in existing.nodes if is_alive(existing.pids.get(s.node_id))]
        if running:
            raise ClusterError(f"{run_dir} already has running nodes ({', '.join(running)}); `cluster down` first")
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        cluster = plan_cluster(
            run_dir,
            controllers,
            brokers,
            overrides,
            choose(network, run_dir),
            broker_ids,
            dynamic_quorum,
            initial_controllers,
            kafka_listeners,
        )
    except NetworkError as error:
        raise ClusterError(str(error)) from None
    write_configs(cluster)
    try:
        if cluster.network.namespace is not None:
            prepare_namespace(cluster.network.namespace, {s.node_id: s.host for s in cluster.nodes})
        write_cuts(run_dir, cluster.network, cluster.addresses, (), cluster.inter_broker_addresses)
        for spec in cluster.nodes:
            cluster.pids[spec.node_id] = spawn(spec, cluster.network)
        cluster.save()
        _wait_ready_where_reachable(cluster, timeout_s)
    except NetworkError as error:
        down(cluster)
        raise ClusterError(str(error)) from None
    except BaseException:
        down(cluster)
        raise
    return cluster


def _wait_ready_where_reachable(cluster: Cluster, timeout_s: float) -> None:
    """Wait here, or, when the nodes live in a namespace this process is not in, in a helper run inside it."""
    prefix = command_prefix(cluster.network)
    if not prefix:
        wait_ready(cluster, timeout_s)
        return
    helper = [sys.executable, "-m", "minikafka.deploy.cluster_commands", str(cluster.run_dir), str(timeout_s)]
    result = subprocess.run([*prefix, *helper], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise ClusterError(lines[-1] if lines else f"waiting for readiness failed ({result.returncode})")


def wait_ready(cluster: Cluster, timeout_s: float) -> Readiness:
    state: dict[str, Readiness | None] = {"last": None}
    expected = frozenset(b.node_id for b in cluster.brokers)

    def ready() -> bool:
        dead = [spec for spec in cluster.nodes if not is_alive(cluster.pids.get(spec.node_id))]
        if dead:
            raise ClusterError(_not_up_message(dead[0], "exited"))
        state["last"] = probe(cluster)
        return state["last"] is not None and expected <= state["last"].unfenced

    if not wait_until(ready, timeout_s, interval_s=0.1):
        last = state["last"]
        if last is None:
            raise ClusterError(_not_up_message(cluster.controllers[0], f"no quorum leader within {timeout_s:.0f}s"))
        missing = sorted(expected - last.unfenced)
        raise ClusterError(_not_up_message(cluster.node(missing[0]), f"not unfenced within {timeout_s:.0f}s"))
    assert state["last"] is not None
    return state["last"]


def _not_up_message(spec: NodeSpec, why: str) -> str:
    tail = last_lines(spec.stderr_path, 5)
    detail = " | ".join(line.strip() for line in tail) if tail else "no output"
    return f"{spec.label} ({spec.address}) did not come up: {why}; last log lines: {detail}"


def status(cluster: Cluster) -> dict[str, Any]:
    """The `cluster status --json` document, a contract tools outside the project read."""
    leader_id: int | None = None
    brokers_by_id: dict[int, Any] = {}
    with admin_for(cluster, timeout_s=1.0) as admin:
        try:
            leader_id = admin.describe_quorum()["leader_id"]
            brokers_by_id = {b.broker_id: b for b in admin.describe_cluster().brokers}
        except KafkaError:
            pass

    def process(spec: NodeSpec) -> dict[str, Any]:
        pid = cluster.pids.get(spec.node_id)
        return {
            "id": spec.node_id,
            "address": spec.address,
            **({"kafka_address": spec.kafka_address} if spec.kafka_address else {}),
            **({"inter_broker_address": spec.inter_node_address} if spec.broker_port else {}),
            "pid": pid,
            "alive": is_alive(pid),
            "paused": is_paused(pid),
        }

    controllers = [{**process(s), "leader": leader_id == s.node_id} for s in cluster.controllers]
    brokers = []
    for spec in cluster.brokers:
        registration = brokers_by_id.get(spec.node_id)
        brokers.append(
            {
                **process(spec),
                "fenced": registration.fenced if registration is not None else None,
                "broker_epoch": registration.broker_epoch if registration is not None else None,
                "in_controlled_shutdown": registration.in_controlled_shutdown if registration is not None else None,
            }
        )
    return {
        "run_dir": str(cluster.run_dir),
        "controllers": controllers,
        "brokers": brokers,
        "network": network_status(cluster),
        "security": cluster.security_json(),
    }


def network_status(cluster: Cluster) -> dict[str, Any]:
    return {
        **cluster.network.to_json(),
        "cuts": cluster.network.cuts_mode,
        "active": [cut.to_json() for cut in read_cuts(cluster.run_dir)],
    }


def down(
    cluster: Cluster, timeout_s: float | None = None, report: Callable[[str], object] = report_to_stderr
) -> list[str]:
    """Stop brokers first (controlled shutdown needs the controllers), then controllers; returns what was stopped.
    Each node has up to `timeout_s` to stop cleanly (default: a broker's controlled-shutdown bound, a
    controller's 30 s) before SIGKILL; `report` hears what is still awaited, and which node had to be killed."""
    stopped: list[str] = []
    for group in (cluster.brokers, cluster.controllers):
        running = {
            spec.label: (cluster.pids[spec.node_id], spec.role)
            for spec in group
            if is_alive(cluster.pids.get(spec.node_id))
        }
        outcomes = stop_nodes(running, timeout_s, report)
        for label, outcome in outcomes.items():
            if not outcome.exited:
                report(describe(label, outcome))
        stopped.extend(running)
    if cluster.network.namespace is not None:
        try:
            delete_namespace(cluster.network.namespace)
        except NetworkError as error:
            raise ClusterError(str(error)) from None
    return stopped


def _wait_ready_main(argv: list[str]) -> int:
    """`python -m minikafka.deploy.cluster_commands RUN TIMEOUT`: wait for readiness from inside the run's namespace."""
    try:
        wait_ready(Cluster.load(Path(argv[0])), float(argv[1]))
    except ClusterError as error:
        sys.stderr.write(f"{error}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_wait_ready_main(sys.argv[1:]))

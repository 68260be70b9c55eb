"""`minikafka chaos` with the network nemeses (cuts by the kernel in the run's namespace where permitted, else by each
node's transport): every
acknowledged acks=all write survives the cuts, every cut is healed after its time, and the run ends healed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.deploy.local_cluster import Cluster, is_alive, kill
from minikafka.deploy.network import may_create_namespaces

pytestmark = pytest.mark.integration

MINIKAFKA = Path(sys.executable).parent / "minikafka"
FAULTS = "partition,isolate-leader,isolate-controller,broker-controller,one-way"


def test_chaos_with_network_cuts_loses_no_acknowledged_write_and_heals(tmp_path: Path) -> None:
    run_dir = tmp_path / "chaos"
    # Seed 2 plans partition, isolate-controller, one-way and broker-controller within 40 s.
    command = [str(MINIKAFKA), "chaos", str(run_dir), "--duration", "40", "--faults", FAULTS, "--seed", "2"]
    try:
        result = subprocess.run(command + ["--no-analysis", "--json"], capture_output=True, text=True, timeout=400)
    finally:  # the command stops its cluster; make sure of it even when it failed half-way
        if (run_dir / "cluster.json").exists():
            for pid in Cluster.load(run_dir).pids.values():
                if is_alive(pid):
                    kill(pid)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]  # a normal run prints none
    summary = json.loads(result.stdout)
    assert summary["lost"] == 0 and summary["acknowledged"] > 1000
    kinds = {fault["kind"] for fault in summary["faults"]}
    assert {"partition", "isolate-controller", "one-way", "broker-controller"} <= kinds, kinds
    assert all(fault.get("recovered") for fault in summary["faults"]), summary["faults"]

    logged = [json.loads(line) for line in (run_dir / "logs" / "faults.jsonl").read_text().splitlines()]
    network = [event for event in logged if event["fault"] in ("partition", "isolate", "heal")]
    assert {event["mode"] for event in network} == {"kernel" if may_create_namespaces() else "in-process"}
    # Each cut is healed before the next one, and the run ends with no cut in force.
    assert [event["fault"] == "heal" for event in network] == [False, True] * (len(network) // 2)
    assert network[-1]["active"] == 0
    assert any(event["one_way"] for event in network if event["fault"] == "partition")

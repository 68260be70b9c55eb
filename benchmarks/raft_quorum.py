"""The KRaft quorum alone: three `kraft_test_server.py` voters (Kafka's TestRaftServer) in a run
directory, the leader writing the workload itself (benchmarks/run_all.py sets it beside pysyncobj's baseline).

`run_raft_quorum(run_dir, ...)` writes the three voters' .properties (what a controller gets), starts them, returns
the leader's JSON report and stops them all. Each voter's log stays in
RUN/controller-<id>/data/__raft_performance_test/. With `workload="controller"` the voters run the controller and
the leader writes broker registrations and topic creations to it in-process; `records` is then the registrations.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from minikafka.deploy.local_cluster import plan_cluster, write_configs

HERE = Path(__file__).resolve().parent

# The controller workload's registered brokers never heartbeat: a long session keeps fencing records out of it.
CONTROLLER_WORKLOAD_SETTINGS = {"broker.session.timeout.ms": "600000"}


def run_raft_quorum(
    run_dir: Path,
    records: int,
    outstanding: int,
    record_size: int = 64,
    timeout_s: float = 300,
    workload: str = "records",
) -> dict[str, Any]:
    # The quorum is measured against pysyncobj, which has no TLS, and kraft_test_server.py serves plaintext only.
    cluster = plan_cluster(run_dir, 3, 0, {"security.inter.broker.protocol": "PLAINTEXT"})
    write_configs(cluster)
    overrides = CONTROLLER_WORKLOAD_SETTINGS if workload == "controller" else {}
    settings = [arg for key, value in overrides.items() for arg in ("--set", f"{key}={value}")]
    results: list[dict[str, Any]] = []
    reported = threading.Event()
    processes: list[subprocess.Popen[str]] = []
    exited: list[int] = []

    def read(process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("{"):
                results.append(json.loads(line))
                reported.set()
        exited.append(process.wait())
        if len(exited) == len(cluster.controllers):
            reported.set()  # every voter exited without a report: fail now rather than wait out the timeout

    try:
        for spec in cluster.controllers:
            with spec.stderr_path.open("ab") as stderr:
                process = subprocess.Popen(
                    [sys.executable, str(HERE / "kraft_test_server.py"), "--config", str(spec.config_path),
                     "--num-records", str(records), "--outstanding", str(outstanding),
                     "--record-size", str(record_size), "--workload", workload,
                     *settings],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=run_dir,
                )  # fmt: skip
            processes.append(process)
            threading.Thread(target=read, args=(process,), daemon=True).start()
        if not reported.wait(timeout_s) or not results:
            raise RuntimeError(f"no kraft_test_server.py reported within {timeout_s} s; see {run_dir}/*/stderr.log")
        if "error" in results[0]:
            raise RuntimeError(f"kraft_test_server.py {results[0]['node_id']}: {results[0]['error']}")
        return results[0]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

"""`minikafka analyze --master spark://...`: the same jobs, unchanged, on a standalone Spark master and worker
started by the test (real processes on loopback), with the CLI's exit status and JSON summary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyspark
import pytest
from run_fixtures import clean_run

from minikafka.deploy.analysis.spark import JAVA_OPTIONS
from minikafka.deploy.local_cluster import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
MINIKAFKA = Path(sys.executable).parent / "minikafka"


def _alive_workers(webui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui_port}/json/", timeout=2) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except OSError:
        return 0
    except ValueError:
        return 0  # a master still starting can answer /json/ with its HTML page: not up yet


@contextmanager
def standalone_spark(tmp_path: Path) -> Iterator[str]:
    """A Spark master and one worker (2 cores) on loopback; yields the master URL; stops both whatever happens."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(tmp_path), SPARK_WORKER_DIR=str(tmp_path))
    env["SPARK_DAEMON_JAVA_OPTS"] = JAVA_OPTIONS  # the master and worker too: C2 would compile on a busy machine
    port, webui, worker_webui = free_ports(3)
    url = f"spark://127.0.0.1:{port}"
    processes: list[subprocess.Popen] = []
    try:
        processes.append(
            subprocess.Popen(
                [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(webui)],
                env=env, stdout=(tmp_path / "master.log").open("w"), stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )  # fmt: skip
        processes.append(
            subprocess.Popen(
                [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "2",
                 "--memory", "2g", "--webui-port", str(worker_webui), url],
                env=env, stdout=(tmp_path / "worker.log").open("w"), stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )  # fmt: skip
        deadline = time.monotonic() + 90
        while _alive_workers(webui) < 1:
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                raise AssertionError(f"no Spark worker registered: {(tmp_path / 'worker.log').read_text()[-2000:]}")
            time.sleep(0.2)  # polling the master's status page for a condition, with a deadline
        yield url
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def test_analyze_runs_unchanged_on_a_standalone_master(tmp_path: Path) -> None:
    run = clean_run()
    run.consumed = [c for c in run.consumed if c["offset"] != 3]  # an acknowledged write never read back
    run_dir = run.write(tmp_path / "run")
    with standalone_spark(tmp_path) as master:
        result = subprocess.run(
            [str(MINIKAFKA), "analyze", str(run_dir), "--master", master, "--json"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert result.returncode == 1, result.stderr[-3000:]  # an invariant failed
    summary = json.loads(result.stdout)
    verdicts = {v["name"]: v for v in summary["invariants"]}
    assert verdicts["NoCommittedRecordLost"]["verdict"] == "fail"
    assert verdicts["NoCommittedRecordLost"]["offending_rows"][0]["offset"] == 3
    # The replica logs were read by tasks on the worker's executors, and everything else held.
    assert [r["log_end_offset"] for r in summary["replicas"]] == [6, 6, 6]
    assert [name for name, v in verdicts.items() if v["verdict"] == "fail"] == ["NoCommittedRecordLost"]
    assert (run_dir / "report" / "report.html").exists()

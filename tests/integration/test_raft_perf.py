"""`benchmarks/kraft_test_server.py` (Kafka's TestRaftServer): three real voters, the leader's workload commits on
a majority's disks and the report counts every record."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.kraft_controller.metadata.records import Partition, RegisterBroker, Topic, decode_record
from minikafka.kraft_controller.raft.file_log import METADATA_PARTITION_DIR, RaftFileLog

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # the benchmarks are scripts, not a package

from controller_workload import FIRST_MEASURED_BROKER_ID  # noqa: E402 - found on the path added above
from kraft_test_server import RAFT_PERFORMANCE_TEST_DIR  # noqa: E402
from raft_quorum import run_raft_quorum  # noqa: E402

pytestmark = pytest.mark.integration


def test_the_leader_writes_the_workload_and_a_majority_holds_it(tmp_path: Path) -> None:
    report = run_raft_quorum(tmp_path, records=600, outstanding=16, record_size=40, timeout_s=120)
    assert (report["records"], report["record_size"], report["outstanding"]) == (600, 40, 16)
    assert report["sequential_commit_latency"]["count"] == 200  # the default --sequential
    assert report["commit_latency"]["count"] == 400
    latency = report["commit_latency"]
    assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    assert report["commits_per_s"] > 0
    held = {}
    for data_dir in sorted(tmp_path.glob("controller-*/data")):
        assert not (data_dir / METADATA_PARTITION_DIR).exists()  # a controller's metadata log is left alone
        log = RaftFileLog(data_dir / RAFT_PERFORMANCE_TEST_DIR, 8 * 1024 * 1024, 0)
        held[data_dir.parent.name] = sum(1 for e in log.load_entries() if not e.control and len(e.data) == 40)
        log.close()
    assert len(held) == 3
    # Committed means on a majority; the third voter may be behind when the voters are stopped.
    assert sorted(held.values())[1:] == [600, 600], held
    assert f"controller-{report['node_id']}" in {name for name, count in held.items() if count == 600}


def test_the_controller_workload_commits_metadata_written_in_the_leader(tmp_path: Path) -> None:
    """`--workload controller`: the voters run the controller and the leader's registrations and topic creations
    are metadata records, committed on a majority, in the test server's own log."""
    report = run_raft_quorum(tmp_path, records=120, outstanding=8, timeout_s=120, workload="controller")
    assert (report["workload"], report["outstanding"]) == ("controller", 8)
    assert report["registrations"]["entries_per_write"] == 1.0
    assert report["topic_creations"]["entries_per_write"] == 11.0  # topic, 10 partitions (no configs given)
    assert report["registrations"]["entries_per_s"] > 0 and report["sequential_p50_ms"] > 0
    held = {}
    for data_dir in sorted(tmp_path.glob("controller-*/data")):
        log = RaftFileLog(data_dir / RAFT_PERFORMANCE_TEST_DIR, 8 * 1024 * 1024, 0)
        records = [decode_record(e.data) for e in log.load_entries() if not e.control]
        log.close()
        measured = {r.broker_id for r in records if isinstance(r, RegisterBroker)} & set(
            range(FIRST_MEASURED_BROKER_ID, FIRST_MEASURED_BROKER_ID + 120)
        )
        held[data_dir.parent.name] = (
            len(measured),
            sum(isinstance(r, Topic) for r in records),
            sum(isinstance(r, Partition) for r in records),
        )
    assert sorted(held.values())[1:] == [(120, 12, 120)] * 2, held


def test_the_test_server_refuses_an_empty_workload_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "controller.properties"
    config.write_text(
        "node.id=101\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:9093\n"
        f"controller.quorum.voters=101@127.0.0.1:9093\nlog.dirs={tmp_path / 'data'}\n"
    )
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "kraft_test_server.py"), "--config", str(config), "--outstanding", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "--outstanding must be at least 1" in result.stderr
    assert not (tmp_path / "data").exists()  # refused before anything started

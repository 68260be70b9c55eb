"""`minikafka chaos` as a user runs it: a seeded acks=all workload on real processes while brokers are killed,
rebooted losing their unflushed data, wiped and paused, and a controller is killed, and two transactional
producers write transactions (some aborted on purpose); then every invariant of the analysis holds on what the run
logged and read back, the transactional ones too (read_committed final read). With --acls the producers are SASL
principals the StandardAuthorizer lets write, and three more keep trying to write and are refused (no WRITE, a DENY
beating an ALLOW, no IDEMPOTENT_WRITE): none of theirs is ever acknowledged or read (NoDeniedWriteVisible)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.deploy.analysis.report import analyze
from minikafka.deploy.local_cluster import Cluster, is_alive, kill

pytestmark = [pytest.mark.integration, pytest.mark.spark]

MINIKAFKA = Path(sys.executable).parent / "minikafka"
FAULTS = "kill,reboot,lose-unflushed,wipe-disk,pause,controller-kill"


def test_chaos_run_keeps_every_acknowledged_write_and_every_invariant(tmp_path: Path, spark) -> None:  # noqa: ANN001
    run_dir = tmp_path / "chaos"
    command = [str(MINIKAFKA), "chaos", str(run_dir), "--duration", "30", "--faults", FAULTS, "--seed", "12"]
    command += ["--transactional-producers", "2", "--acls"]
    try:
        result = subprocess.run(command + ["--no-analysis", "--json"], capture_output=True, text=True, timeout=400)
    finally:  # the command stops its cluster; make sure of it even when it failed half-way
        if (run_dir / "cluster.json").exists():
            cluster = Cluster.load(run_dir)
            for pid in cluster.pids.values():
                if is_alive(pid):
                    kill(pid)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]  # a normal run prints none
    summary = json.loads(result.stdout)
    print(json.dumps({k: summary[k] for k in ("acknowledged", "failed", "consumed", "lost", "transactions", "denied")}))
    transactions = summary["transactions"]
    assert transactions["committed"] > 0 and transactions["aborted_on_purpose"] > 0, transactions
    assert summary["lost"] == 0 and summary["acknowledged"] > 1000
    kinds = [fault["kind"] for fault in summary["faults"]]
    assert {"controller-kill", "kill", "wipe-disk"} <= set(kinds), kinds
    assert all(fault.get("recovered") for fault in summary["faults"]), summary["faults"]
    denied = summary["denied"]
    assert sorted(denied) == ["User:describe-only-0", "User:no-idempotent-write-2", "User:write-denied-1"]
    assert all(d["attempts"] > 0 and d["acknowledged"] == d["visible"] == 0 for d in denied.values()), denied
    # Faults may time some attempts out; the brokers' answers are the ACLs' (DENY wins over the prefixed ALLOW).
    assert "TOPIC_AUTHORIZATION_FAILED" in denied["User:describe-only-0"]["errors"]
    assert "TOPIC_AUTHORIZATION_FAILED" in denied["User:write-denied-1"]["errors"]
    assert "CLUSTER_AUTHORIZATION_FAILED" in denied["User:no-idempotent-write-2"]["errors"]
    faults_logged = [json.loads(line) for line in (run_dir / "logs" / "faults.jsonl").read_text().splitlines()]
    assert len(faults_logged) >= len(kinds)

    out = run_dir / "report"
    out.mkdir()
    report = analyze(spark, run_dir, out)
    failed = {v["name"]: v["offending_rows"][:3] for v in report["invariants"] if v["verdict"] == "fail"}
    assert failed == {}
    verdicts = {v["name"]: v for v in report["invariants"]}
    # A committed transaction's acknowledged records are checked as any acks=all record.
    assert verdicts["NoCommittedRecordLost"]["checked"] == summary["acknowledged"] + transactions["committed_records"]
    for name in ("AbortedRead", "TornTransaction", "LastStableOffsetMonotonic", "NoDeniedWriteVisible"):
        assert verdicts[name]["checked"] > 0, verdicts[name]
    assert verdicts["LogMatching"]["checked"] > 0
    assert report["failover"]["leader_losses"] >= 1

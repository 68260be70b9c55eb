"""The whole analysis on a synthetic run: verdicts, failover figures, the summary, the Markdown/HTML report."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_fixtures import broker_registered, clean_run, consumed_line

from minikafka.deploy.analysis.report import analyze
from minikafka.deploy.analysis.report_render import render_html, render_markdown, summary_lines

pytestmark = pytest.mark.spark


def test_clean_run_passes_with_figures_and_failover(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run_dir = clean_run().write(tmp_path / "run")
    out = tmp_path / "report"
    out.mkdir()
    summary = analyze(spark, run_dir, out)
    failing = [v["name"] for v in summary["invariants"] if v["verdict"] != "pass"]
    assert summary["passed"], failing
    assert {v["name"] for v in summary["invariants"]} >= {
        "NoCommittedRecordLost",
        "NoStaleBrokerEpochInIsr",
        "LogMatching",
        "LeaderCandidateCompleteness",
        "OneRaftLeaderPerEpoch",
    }
    # broker-1 led t-0 when it was killed at 8 s; the controller fenced it and elected broker 2 at 9 s, and the
    # first write after the kill was acknowledged at 9.6 s.
    [lost] = summary["failover"]["brokers"]
    assert (lost["tp"], lost["new_leader"], lost["lost_leader_epoch"]) == ("t-0", 2, 0)
    assert lost["fence_ms"] == pytest.approx(1000, abs=1)
    assert lost["new_leader_ms"] == pytest.approx(1000, abs=1)
    assert lost["first_ack_ms"] == pytest.approx(1600, abs=1)
    assert (summary["kraft"]["elections"], summary["kraft"]["leaderless_ms"]) == (1, 0)
    assert summary["produce_latency"][0]["acknowledged"] == 6
    for name in ("timeline", "failover", "throughput", "latency"):
        png = out / summary["figures"][name]
        assert png.read_bytes().startswith(b"\x89PNG")
    assert [(r["node"], r["log_end_offset"], r["high_watermark"]) for r in summary["replicas"]] == [
        ("broker-1", 6, 6),
        ("broker-2", 6, 6),
        ("broker-3", 6, 6),
    ]
    html = render_html(summary)
    assert "PASSED" in html and "timeline.png" in html
    assert "| NoCommittedRecordLost | PASS | 0 | 6 |" in render_markdown(summary)
    assert "Controller quorum: 1 KRaft elections (epochs 1); leaderless 0 ms" in render_markdown(summary)
    # A run without ACL denials shows no denials section (test_acl_denials.py has the run with some).
    assert summary["acl_denials"] == {}
    assert not [line for line in summary_lines(summary) if line.startswith("ACL denied")]
    assert "ACL denials" not in render_markdown(summary) and "ACL denials" not in html


def test_a_lost_write_and_a_stale_epoch_fail_the_run_with_their_rows(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.consumed = [c for c in run.consumed if c["offset"] != 3] + [consumed_line(3, "overwritten")]
    run.replayed.insert(5, broker_registered(9, 6.5, 3))
    out = tmp_path / "report"
    out.mkdir()
    summary = analyze(spark, run.write(tmp_path / "run"), out)
    assert not summary["passed"]
    verdicts = {v["name"]: v for v in summary["invariants"]}
    lost = verdicts["NoCommittedRecordLost"]
    assert (lost["verdict"], lost["violations"]) == ("fail", 1)
    assert lost["offending_rows"][0]["offset"] == 3 and lost["offending_rows"][0]["read_values"] == ["overwritten"]
    stale = verdicts["NoStaleBrokerEpochInIsr"]
    assert stale["verdict"] == "fail"
    assert stale["offending_rows"][0]["requested_broker_epoch"] == 3
    assert "FAILED" in render_markdown(summary)
    assert "NoStaleBrokerEpochInIsr: offending rows" in render_html(summary)

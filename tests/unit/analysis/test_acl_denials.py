"""`analyze` lists the ACLs' denials per principal: what each one was refused, how often, when and where; the
inter-node gRPC refusals (the same event without an operation) are not ACL denials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_fixtures import clean_run, event, produced_line

from minikafka.deploy.analysis.report import analyze, write_reports
from minikafka.deploy.analysis.report_render import render_html, render_markdown, summary_lines

pytestmark = pytest.mark.spark


def denied(node: str, at: float, principal: str, operation: str, resource_type: str, name: str) -> dict:
    return event(
        node,
        at,
        "authorization_failed",
        level="warning",
        principal=principal,
        host="127.0.0.1",
        listener="PLAIN",
        operation=operation,
        resource_type=resource_type,
        resource_name=name,
        reason="no acl",
    )


def test_denials_are_listed_per_principal_in_the_summary_and_the_report(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.node_events += [
        denied("broker-1", 3.0, "User:bob", "WRITE", "TOPIC", "orders"),
        denied("broker-2", 4.0, "User:bob", "WRITE", "TOPIC", "orders"),
        denied("broker-1", 7.5, "User:bob", "WRITE", "TOPIC", "orders"),  # logged again after a restart
        denied("broker-2", 5.0, "User:bob", "READ", "GROUP", "billing"),
        denied("broker-2", 6.0, "User:alice", "IDEMPOTENT_WRITE", "CLUSTER", "kafka-cluster"),
        event(
            "controller-101",
            4.5,
            "authorization_failed",
            principal="User:broker-2",
            method="/minikafka.Controller/BrokerHeartbeat",
            error="CLUSTER_AUTHORIZATION_FAILED",
            reason="User:broker-2 is node 2 and cannot act as node 1",
        ),
    ]
    # bob's refused writes in his history (chaos --acls): NoDeniedWriteVisible checks that none was read
    bob = {"principal": "User:bob", "refused_by_acls": True}
    run.produced += [{**produced_line(3.0 + n, None, f"bob-{n}", "TOPIC_AUTHORIZATION_FAILED"), **bob} for n in (0, 1)]
    out = tmp_path / "report"
    out.mkdir()
    summary = write_reports(analyze(spark, run.write(tmp_path / "run"), out), out)
    assert summary["passed"]  # a denial is what the ACLs are for, not a broken invariant
    [denied_writes] = [v for v in summary["invariants"] if v["name"] == "NoDeniedWriteVisible"]
    assert (denied_writes["verdict"], denied_writes["checked"]) == ("pass", 2)
    assert list(summary["acl_denials"]) == ["User:alice", "User:bob"]
    [alice] = summary["acl_denials"]["User:alice"]
    assert (alice["operation"], alice["resource_type"], alice["resource_name"]) == (
        "IDEMPOTENT_WRITE",
        "CLUSTER",
        "kafka-cluster",
    )
    group, topic = summary["acl_denials"]["User:bob"]
    assert (group["operation"], group["resource_type"], group["resource_name"], group["count"]) == (
        "READ",
        "GROUP",
        "billing",
        1,
    )
    assert (topic["operation"], topic["resource_name"], topic["count"], topic["nodes"]) == (
        "WRITE",
        "orders",
        3,
        ["broker-1", "broker-2"],
    )
    assert (topic["first"], topic["last"], topic["hosts"]) == (
        "2026-11-22T18:00:03",
        "2026-11-22T18:00:07.500000",
        ["127.0.0.1"],
    )
    assert json.loads((out / "summary.json").read_text())["acl_denials"] == summary["acl_denials"]
    assert "ACL denied: User:bob: READ GROUP billing x1 on broker-2; WRITE TOPIC orders x3 on broker-1, broker-2" in (
        summary_lines(summary)
    )
    markdown = render_markdown(summary)
    assert "## ACL denials (authorization_failed, per principal)" in markdown
    assert "| User:bob | WRITE | TOPIC | orders | 3 | 2026-11-22T18:00:03 |" in markdown
    assert "<td>User:alice</td><td>IDEMPOTENT_WRITE</td><td>CLUSTER</td><td>kafka-cluster</td>" in render_html(summary)
    assert "User:broker-2" not in markdown

"""The KIP-903 race with real processes, driven by `minikafka scenario`'s kip-903 (its six steps are in
src/minikafka/deploy/scenario/library/kip_903.py), in both modes.

With the broker-epoch check (the default) the controller answers INELIGIBLE_REPLICA, B never leads with a short
log, nothing acknowledged is lost and the scenario exits 0. With `alter.partition.broker.epoch.check=false` the stale
request is accepted, B becomes leader, acknowledged records are lost, `analyze` finds the same story, and the
scenario exits 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scenario_cases import analyzed_scenario, verdicts

from minikafka.common.grpc_support import sync_channel
from minikafka.deploy.scenario.model import ScenarioOutcome
from minikafka.pb import fault_pb2, fault_pb2_grpc

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

B = 2
RECORDS = 3000
KEY = "alter.partition.broker.epoch.check"


def broker_state(cluster, broker_id: int) -> fault_pb2.DescribeStateResponse:  # noqa: ANN001
    stub = fault_pb2_grpc.FaultStub(sync_channel(cluster.node(broker_id).inter_node_address, cluster.admin_tls))
    return stub.DescribeState(fault_pb2.DescribeStateRequest(), timeout=5)


def run_kip903(tmp_path: Path, spark, check: str) -> tuple[ScenarioOutcome, str]:  # noqa: ANN001
    """The scenario, analyzed on the test run's Spark session; its outcome and scenario.md."""
    outcome = analyzed_scenario(tmp_path, spark, "kip-903", {KEY: check})
    return outcome, (tmp_path / "run" / "report" / "scenario.md").read_text()


def test_kip903_check_keeps_every_acknowledged_record(tmp_path: Path, spark) -> None:  # noqa: ANN001
    outcome, text = run_kip903(tmp_path, spark, "true")
    assert outcome.error is None, outcome.error
    assert (outcome.verdict.held, outcome.verdict.as_predicted, outcome.verdict.exit_code) == (True, True, 0)
    assert outcome.verdict.line == (
        f"kip-903 ({KEY}=true, guarded): HELD ({RECORDS} acknowledged, 0 lost; analyze: pass)"
    )
    assert "AlterPartition for kip903-0 answered INELIGIBLE_REPLICA: broker 2 stale_broker_epoch (requested " in text
    # Last replica standing: no leader until A returns, and A (KIP-966) is in the ELR.
    assert "- observed: leader -1, ISR [], ELR [1] (as expected)" in text
    assert f"| kip903 | all | {RECORDS} | 0 |  |" in text
    failed = {name: v["offending_rows"] for name, v in verdicts(outcome).items() if v["verdict"] == "fail"}
    assert failed == {}
    assert verdicts(outcome)["NoCommittedRecordLost"]["checked"] == RECORDS


def test_without_the_check_the_race_loses_acknowledged_records(tmp_path: Path, spark) -> None:  # noqa: ANN001
    outcome, text = run_kip903(tmp_path, spark, "false")
    assert outcome.error is None, outcome.error
    assert (outcome.verdict.held, outcome.verdict.as_predicted, outcome.verdict.exit_code) == (False, True, 1)
    [tally] = outcome.tallies
    assert tally.lost > 0, "the stale ISR member led with a short log: the loss must be detected"
    assert "AlterPartition for kip903-0 accepted: ISR [1, 2]" in text
    assert "- observed: leader 2, ISR [2]" in text
    assert f"{RECORDS} acknowledged, {tally.lost} lost" in outcome.verdict.line
    # The analysis finds the same story in the logs: the stale epoch committed, the short leader, the lost writes.
    by_name = verdicts(outcome)
    stale = by_name["NoStaleBrokerEpochInIsr"]
    assert stale["verdict"] == "fail"
    assert [(r["broker_id"], r["requested_broker_epoch"] < r["current_broker_epoch"]) for r in stale["offending_rows"]
            ] == [(B, True)]  # fmt: skip
    assert by_name["LeaderCandidateCompleteness"]["verdict"] == "fail"
    assert by_name["LeaderCandidateCompleteness"]["offending_rows"][0]["node"] == f"broker-{B}"
    assert by_name["NoCommittedRecordLost"]["violations"] == tally.lost
    print(json.dumps({"lost": tally.lost, "first": tally.first_lost, "last": tally.last_lost}))

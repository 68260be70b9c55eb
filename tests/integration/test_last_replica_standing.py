"""The Last Replica Standing issue with real processes, and KIP-966 closing it, driven by `minikafka scenario`'s
last-replica-standing (its steps are in src/minikafka/deploy/scenario/library/last_replica_standing.py) and
analyzed, in both modes.

RF 3, min ISR 2, simulated page cache (nothing is flushed before a clean stop), an acks=all producer running. The
followers stop cleanly one after the other, so the ISR shrinks to the leader alone and acks=all is refused with
NOT_ENOUGH_REPLICAS. The leader then loses power (`reboot --lose-unflushed`) and the others return. With
eligible.leader.replicas.version=0 (Kafka 3.x) the leader never left the ISR, leads again with the log it has left,
and the followers truncate to it: `analyze` names the lost acknowledged offsets. With the default (1) the follower
that stopped last is in the ELR, the uncleanly restarted leader is not, and nothing acknowledged is lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario_cases import analyzed_scenario, verdicts

from minikafka.deploy.scenario.events import find_events, query

# One cluster run and a Spark analysis each; the timeout is for a shared machine, a quiet one needs far less.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

LEADER, LAST_FOLLOWER, FIRST_FOLLOWER = 1, 2, 3
KEY = "eligible.leader.replicas.version"


def controller_decisions(run_dir: Path) -> tuple[set[tuple[int, bool]], set[tuple[int, str]]]:
    """(broker id, clean) of each shutdown the controllers detected, and (leader, reason) of each election."""
    events = [e for _, e in find_events(run_dir, query(("broker_shutdown_detected", "leader_elected"), "controller"))]
    shutdowns = {(e["broker_id"], e["clean"]) for e in events if e["event"] == "broker_shutdown_detected"}
    elected = {(e["leader"], e["reason"]) for e in events if e["event"] == "leader_elected" and e["topic"] == "lrs"}
    return shutdowns, elected


def observed(outcome, action: str) -> str:  # noqa: ANN001
    [step] = [s for s in outcome.steps if s.action.startswith(action)]
    assert step.ok, step
    return step.observed


def test_version_0_loses_acknowledged_writes_and_analyze_names_them(tmp_path: Path, spark) -> None:  # noqa: ANN001
    outcome = analyzed_scenario(tmp_path, spark, "last-replica-standing", {KEY: "0"})
    assert outcome.error is None, outcome.error
    assert (outcome.verdict.held, outcome.verdict.as_predicted, outcome.verdict.exit_code) == (False, True, 1)
    assert observed(outcome, "the ELR of lrs-0") == "ISR [1], ELR []"  # version 0 keeps no ELR
    assert observed(outcome, "who leads after the power loss") == f"broker {LEADER}"  # it never left the ISR
    [tally] = outcome.tallies
    assert tally.lost > 0, "the leader came back with a shorter log: acknowledged writes must be gone"
    by_name = verdicts(outcome)
    assert by_name["LeaderCandidateCompleteness"]["verdict"] == "fail"
    lost = by_name["NoCommittedRecordLost"]
    assert lost["verdict"] == "fail" and lost["violations"] == tally.lost
    named = {int(row["offset"]) for row in lost["offending_rows"]}
    assert named and named <= set(range(tally.first_lost, tally.last_lost + 1))  # the report names lost offsets


def test_version_1_elects_the_eligible_replica_and_loses_nothing(tmp_path: Path, spark) -> None:  # noqa: ANN001
    outcome = analyzed_scenario(tmp_path, spark, "last-replica-standing", {KEY: "1"})
    assert outcome.error is None, outcome.error
    assert (outcome.verdict.held, outcome.verdict.as_predicted, outcome.verdict.exit_code) == (True, True, 0)
    assert observed(outcome, "the ELR of lrs-0") == f"ISR [{LEADER}], ELR [{LAST_FOLLOWER}]"  # left below min ISR
    # The rebooted leader left the ELR; the follower that stopped cleanly kept its place across its restart and
    # was elected from it when it was unfenced.
    assert observed(outcome, "who leads after the power loss") == f"broker {LAST_FOLLOWER}"
    shutdowns, elected = controller_decisions(Path(outcome.run_dir))
    assert {(LEADER, False), (LAST_FOLLOWER, True), (FIRST_FOLLOWER, True)} <= shutdowns
    assert (LAST_FOLLOWER, "unfence") in elected
    [tally] = outcome.tallies
    assert tally.lost == 0
    failed = {name: v["offending_rows"] for name, v in verdicts(outcome).items() if v["verdict"] == "fail"}
    assert failed == {}
    assert verdicts(outcome)["NoCommittedRecordLost"]["checked"] == tally.acknowledged

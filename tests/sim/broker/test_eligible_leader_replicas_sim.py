"""KIP-966 with the production controller core: the Last Replica Standing scenario loses acknowledged writes with
eligible.leader.replicas.version 0 (Kafka 3.x) and none with 1, and random runs keep every invariant with the ELR."""

from __future__ import annotations

import pytest
from broker_sim import BrokerSim, InvariantViolation, SimConfig
from sim_kraft_controller import KraftController
from structlog.testing import capture_logs

from minikafka.broker.replica.partition import Leader
from minikafka.common.errors import ErrorCode

LEADER, FIRST, SECOND = 0, 1, 2  # broker ids; 0 leads at first (the first replica)


class Scenario:
    def __init__(self, version: int) -> None:
        config = SimConfig(drop_probability=0.0, replica_lag_time_max_ms=10_000, strict_min_isr=version == 1)
        self.controller = KraftController((0, 1, 2), min_insync_replicas=2, eligible_leader_replicas_version=version)
        self.sim = BrokerSim(3, config, controller=self.controller)
        self.seen: list[str] = []

    def run_until(self, condition, deadline_ms: int = 5000) -> None:  # noqa: ANN001
        end = self.sim.now_ms + deadline_ms
        while not condition():
            assert self.sim.now_ms < end, "condition not reached in time"
            self.sim.step(faults=False, check=False)
            self.seen.extend(v for v in self.sim.violations() if v not in self.seen)

    def produce(self, count: int) -> None:
        target = len(self.sim.acked) + count
        self.run_until(lambda: self.sim.produce() is None or len(self.sim.acked) >= target)
        self.run_until(lambda: len(self.sim.acked) >= target)

    def last_replica_standing(self) -> None:
        sim, controller = self.sim, self.controller
        self.run_until(lambda: isinstance(sim.brokers[LEADER].role, Leader) and len(controller.isr) == 3)
        self.produce(5)
        sim.stop(SECOND)  # the followers stop cleanly, one after the other
        self.run_until(lambda: controller.isr == [LEADER, FIRST])
        self.produce(5)
        sim.stop(FIRST)
        self.run_until(lambda: controller.isr == [LEADER] and sim.brokers[LEADER].role.isr == {LEADER})  # type: ignore[union-attr]
        leader = sim.brokers[LEADER].role
        assert isinstance(leader, Leader) and leader.check_produce(-1) == ErrorCode.NOT_ENOUGH_REPLICAS
        sim.crash(LEADER)  # power loss: the leader never flushed, its whole log is gone
        self.run_until(lambda: controller.brokers[LEADER].fenced)
        for broker in (LEADER, FIRST, SECOND):
            sim.restart(broker)
        self.run_until(lambda: controller.leader >= 0 and all(not r.fenced for r in controller.brokers.values()))
        self.run_until(lambda: len({b.log.end for b in sim.brokers.values()}) == 1)


def test_version_0_loses_the_acknowledged_writes_of_the_last_replica_standing() -> None:
    scenario = Scenario(version=0)
    with capture_logs():
        scenario.last_replica_standing()
    sim = scenario.sim
    assert scenario.controller.leader == LEADER  # the ISR it never left elected it, with an empty log
    assert len(sim.acked) >= 10 and sorted(sim.lost_acked_writes()) == sorted(sim.acked)
    assert any(v.startswith("LeaderCandidateCompleteness") for v in scenario.seen)


def test_version_1_elects_the_clean_elr_member_and_loses_nothing() -> None:
    scenario = Scenario(version=1)
    with capture_logs() as events:
        scenario.last_replica_standing()
    sim = scenario.sim
    assert scenario.seen == []
    assert scenario.controller.leader == FIRST  # from the ELR; the unclean leader left it when it registered
    assert len(sim.acked) >= 10 and sim.lost_acked_writes() == []
    entries = sim.brokers[FIRST].log.entries
    assert all(entries[offset][1] == value for offset, value in sim.acked.items())
    detected = [(e["broker_id"], e["clean"]) for e in events if e["event"] == "broker_shutdown_detected"]
    assert detected == [(LEADER, False), (FIRST, True), (SECOND, True)]


@pytest.mark.parametrize("seed", range(20))
def test_random_runs_with_the_elr_keep_every_invariant(seed: int) -> None:
    controller = KraftController((0, 1, 2), min_insync_replicas=2)
    with capture_logs():
        sim = BrokerSim(seed, SimConfig(crash_probability=0.008, hold_probability=0.008), controller=controller)
        try:
            for _ in range(1000):
                sim.step()
        except InvariantViolation as error:
            pytest.fail(f"seed {seed}: {error}")
    assert sim.lost_acked_writes() == []
    assert sim.stats["acked"] > 0

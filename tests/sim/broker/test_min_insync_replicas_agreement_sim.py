"""KIP-966 needs the controller and the brokers to agree on min.insync.replicas: the controller puts a replica in the
ELR only while the ISR is below its min ISR, and that is safe only if the leader's HWM stood still meanwhile, which
the leader decides with its own min ISR. A topic created without the key leaves both to their own static values; the
cluster-level config record makes them one."""

from __future__ import annotations

from broker_sim import BrokerSim, SimConfig
from sim_kraft_controller import KraftController
from structlog.testing import capture_logs

from minikafka.broker.replica.partition import Leader

LEADER, FIRST, SECOND = 0, 1, 2


def test_a_broker_min_isr_below_the_controllers_loses_no_write_to_an_elr_election() -> None:
    # The controller's static min.insync.replicas is 2, the brokers' is 1, and the topic sets none.
    controller = KraftController((0, 1, 2), min_insync_replicas=2, topic_configs={})
    config = SimConfig(drop_probability=0.0, min_insync_replicas=1)
    sim = BrokerSim(3, config, controller=controller)

    def run_until(condition, deadline_ms: int = 5000) -> None:  # noqa: ANN001
        end = sim.now_ms + deadline_ms
        while not condition():
            assert sim.now_ms < end, "condition not reached in time"
            sim.step(faults=False, check=False)

    with capture_logs():
        run_until(lambda: isinstance(sim.brokers[LEADER].role, Leader) and len(controller.isr) == 3)
        sim.stop(SECOND)
        run_until(lambda: controller.isr == [LEADER, FIRST])
        sim.stop(FIRST)  # the ISR falls below the controller's min ISR: broker 1 joins the ELR
        run_until(lambda: controller.isr == [LEADER] and sim.brokers[LEADER].role.isr == {LEADER})  # type: ignore[union-attr]
        assert controller.elr == [FIRST]
        for _ in range(5):  # acks=all writes to the sole ISR member
            sim.produce()
            for _ in range(20):
                sim.step(faults=False, check=False)
        sim.crash(LEADER)  # power loss: its unflushed log is gone
        run_until(lambda: controller.brokers[LEADER].fenced)
        sim.restart(FIRST)
        run_until(lambda: controller.leader == FIRST)  # elected from the ELR
        run_until(lambda: not controller.brokers[FIRST].fenced)
    assert sim.lost_acked_writes() == [], f"acknowledged writes lost: {sorted(sim.acked)}"
    # The active controller wrote its min ISR as the cluster default; the leader refused the writes with it.
    assert controller.image.broker_config("", "min.insync.replicas") == "2"
    assert sim.acked == {}

"""`simulate` runs a plan's `reassign` steps as an operator does: AlterPartitionReassignments sent to the active
controller over the simulated network, the partition's replicas reordered (a new partition epoch), the same seed
replaying the same run."""

from __future__ import annotations

import re

from minikafka.deploy.chaos_schedule import SIMULATE_TIMING, ChaosPlanConfig, plan_faults
from minikafka.sim.cluster import BROKER_IDS, CONTROLLER_IDS
from minikafka.sim.world import SimulationSettings, simulate_seed

SETTINGS = SimulationSettings(1, duration_s=12.0, faults=("reassign",))


def test_each_reassignment_is_accepted_by_the_controller_and_the_seed_holds() -> None:
    plan = plan_faults(1, ("reassign",), ChaosPlanConfig(12.0, BROKER_IDS, CONTROLLER_IDS, timing=SIMULATE_TIMING))
    result = simulate_seed(SETTINGS)
    assert result.violation is None, "\n".join(result.trace)
    done = [
        m for line in result.trace if (m := re.search(r"reassign (sim-\d) from (\[.*?\]) to (\[.*?\]): (\w+)", line))
    ]
    assert len(done) == len(plan) == result.faults >= 2
    assert all(m.group(4) == "accepted" and m.group(2) != m.group(3) for m in done)
    assert simulate_seed(SETTINGS).trace_hash == result.trace_hash

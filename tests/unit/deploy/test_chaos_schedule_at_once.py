"""`max_at_once`: a step joining a lasting one may itself be joined, while fewer than N are active; 2 (the default)
draws the plans drawn before. The guards' faults are drawn only when named."""

from __future__ import annotations

from dataclasses import replace

import pytest

from minikafka.deploy.chaos_schedule import (
    CUT_FAULTS,
    FAULT_KINDS,
    GUARD_FAULTS,
    LASTING_FAULTS,
    SIMULATOR_FAULTS,
    ChaosPlanConfig,
    overlapping_groups,
    parse_fault_kinds,
    plan_faults,
)

CONFIG = ChaosPlanConfig(duration_s=600, brokers=[1, 2, 3], controllers=[101, 102, 103], overlap=1.0)
KINDS = ("kill", "pause", "partition", "wipe-disk", "hold-alter-partition", "stop", "controller-kill")


@pytest.mark.parametrize("seed", range(30))
def test_three_at_once_each_joining_the_last_while_it_is_active_on_a_node_of_its_own(seed: int) -> None:
    groups = overlapping_groups(plan_faults(seed, KINDS, replace(CONFIG, max_at_once=3)))
    assert any(len(group) == 3 for group in groups)
    for group in groups:
        assert len(group) <= 3
        for before, step in zip(group, group[1:], strict=False):
            assert step.overlaps and before.down_s > 0
            assert before.at_s <= step.at_s <= before.at_s + before.down_s + 1e-3
        assert sum(step.kind in CUT_FAULTS for step in group) <= 1
        struck = [step.target for step in group if step.kind != "partition"]
        assert len(struck) == len(set(struck))


def test_two_at_once_draws_the_plans_drawn_before() -> None:
    """Seed 5's plan as the planner drew it before it could chain joining steps."""
    config = replace(CONFIG, duration_s=60)
    steps = plan_faults(5, ("kill", "pause", "partition", "wipe-disk", "controller-kill"), config)
    assert [(s.at_s, s.kind, s.target, s.down_s, s.overlaps) for s in steps] == [
        (7.36, "pause", 3, 5.712, False),
        (12.629, "kill", 2, 4.88, True),
        (22.253, "kill", 1, 1.566, False),
        (22.639, "partition", 2, 3.87, True),
        (31.026, "pause", 1, 5.582, False),
        (31.917, "kill", 2, 4.09, True),
        (42.722, "wipe-disk", 1, 0.0, False),
        (52.528, "kill", 1, 4.868, False),
        (53.335, "wipe-disk", 3, 0.0, True),
    ]


def test_the_guards_faults_are_last_in_the_language_stop_and_hold_lasting_a_reassignment_not() -> None:
    assert FAULT_KINDS[-len(GUARD_FAULTS) - len(SIMULATOR_FAULTS) : -len(SIMULATOR_FAULTS)] == GUARD_FAULTS
    assert {"stop", "hold-alter-partition"} <= set(LASTING_FAULTS) and "reassign" not in LASTING_FAULTS
    assert parse_fault_kinds("reassign,hold-alter-partition,stop") == ("stop", "hold-alter-partition", "reassign")
    steps = plan_faults(3, GUARD_FAULTS, replace(CONFIG, overlap=0.0))
    assert {s.kind for s in steps} == set(GUARD_FAULTS) and all(s.target in CONFIG.brokers for s in steps)

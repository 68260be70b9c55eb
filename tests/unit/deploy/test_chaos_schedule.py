"""The chaos fault plan: seeded, only the requested kinds, sequential (one node away at a time), in the run."""

from __future__ import annotations

import pytest

from minikafka.deploy.chaos_schedule import (
    CONTROLLER_FAULTS,
    FAULT_KINDS,
    LASTING_FAULTS,
    NETWORK_FAULTS,
    STORAGE_FAULTS,
    ChaosPlanConfig,
    parse_fault_kinds,
    plan_faults,
)

CONFIG = ChaosPlanConfig(duration_s=600, brokers=[1, 2, 3], controllers=[101, 102, 103])


def test_the_same_seed_gives_the_same_plan_and_another_seed_another() -> None:
    assert plan_faults(7, FAULT_KINDS, CONFIG) == plan_faults(7, FAULT_KINDS, CONFIG)
    assert plan_faults(7, FAULT_KINDS, CONFIG) != plan_faults(8, FAULT_KINDS, CONFIG)


@pytest.mark.parametrize("seed", range(50))
def test_steps_are_sequential_within_the_run_and_of_the_requested_kinds(seed: int) -> None:
    kinds = ("kill", "lose-unflushed", "controller-kill")
    steps = plan_faults(seed, kinds, CONFIG)
    assert steps and {s.kind for s in steps} <= set(kinds)
    for previous, step in zip(steps, steps[1:], strict=False):
        # the next fault starts only after the previous one's downtime plus a gap: never two nodes away
        assert step.at_s >= previous.at_s + previous.down_s + CONFIG.min_gap_s - 1e-6
    for step in steps:
        assert 0 < step.at_s < CONFIG.duration_s
        assert step.target in (CONFIG.controllers if step.kind in CONTROLLER_FAULTS else CONFIG.brokers)
        assert (step.down_s > 0) == (step.kind in LASTING_FAULTS)
        assert step.down_s <= CONFIG.max_down_s


def test_every_kind_is_used_over_a_long_run() -> None:
    assert {s.kind for s in plan_faults(1, FAULT_KINDS, CONFIG)} == set(FAULT_KINDS)


def test_fault_kinds_are_parsed_and_unknown_ones_named() -> None:
    assert parse_fault_kinds("pause, kill") == ("kill", "pause")
    with pytest.raises(ValueError, match="unknown fault kind.*explode.*known: kill,reboot"):
        parse_fault_kinds("kill,explode")
    with pytest.raises(ValueError):
        parse_fault_kinds(" , ")


@pytest.mark.parametrize("seed", range(30))
def test_network_steps_cut_disjoint_groups_of_the_runs_nodes(seed: int) -> None:
    nodes = {*CONFIG.brokers, *CONFIG.controllers}
    steps = plan_faults(seed, NETWORK_FAULTS, CONFIG)
    assert steps and {s.kind for s in steps} <= set(NETWORK_FAULTS)
    for step in steps:
        assert step.down_s > 0  # every cut heals after its time
        if step.kind.startswith("isolate-"):
            assert step.groups == ()  # whom to cut is known only when it strikes
            continue
        first, second = step.groups
        assert first and second and not set(first) & set(second) and set(first) | set(second) <= nodes
        if step.kind == "broker-controller":
            assert first == (step.target,) and second == tuple(CONFIG.controllers)
        if step.kind == "one-way":
            assert first == (step.target,) and set(second) == set(CONFIG.brokers) - {step.target}


@pytest.mark.parametrize("seed", range(10))
def test_storage_steps_hit_brokers_and_a_failing_disk_is_repaired_after_its_time(seed: int) -> None:
    steps = plan_faults(seed, STORAGE_FAULTS, CONFIG)
    assert {s.kind for s in steps} <= set(STORAGE_FAULTS)
    for step in steps:
        assert step.target in CONFIG.brokers and step.groups == ()
        assert (step.down_s > 0) == (step.kind != "corrupt")  # a corruption stays until a read finds it

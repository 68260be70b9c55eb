"""The chaos fault plan: seeded, only the requested kinds, sequential (one node away at a time) unless `overlap`
lets a second fault join a lasting one, in the run."""

from __future__ import annotations

from dataclasses import replace

import pytest

from minikafka.deploy.chaos_schedule import (
    CONTROLLER_FAULTS,
    CUT_FAULTS,
    FAULT_KINDS,
    LASTING_FAULTS,
    NETWORK_FAULTS,
    STORAGE_FAULTS,
    ChaosPlanConfig,
    overlapping_groups,
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
        assert step.at_s >= previous.at_s + previous.down_s + CONFIG.timing.min_gap_s - 1e-6
    for step in steps:
        assert 0 < step.at_s < CONFIG.duration_s
        assert step.target in (CONFIG.controllers if step.kind in CONTROLLER_FAULTS else CONFIG.brokers)
        assert (step.down_s > 0) == (step.kind in LASTING_FAULTS)
        assert step.down_s <= CONFIG.timing.max_down_s


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


OVERLAPPING = replace(CONFIG, overlap=0.5)


def test_without_overlap_the_plan_is_the_one_drawn_before_overlap_existed() -> None:
    """Seed 7's plan as it was drawn before `overlap` was added: existing seeds replay the same run."""
    steps = plan_faults(7, ("kill", "controller-kill", "isolate-controller"), replace(CONFIG, duration_s=40))
    assert [(s.at_s, s.kind, s.target, s.down_s) for s in steps] == [
        (5.267, "kill", 2, 4.255),
        (13.029, "isolate-controller", 1, 2.828),
        (19.263, "isolate-controller", 1, 1.187),
        (26.485, "kill", 1, 1.454),
        (33.911, "isolate-controller", 1, 5.737),
    ]
    assert not any(s.overlaps for s in steps)
    assert plan_faults(7, FAULT_KINDS, CONFIG) == plan_faults(7, FAULT_KINDS, replace(CONFIG, overlap=0.0))


@pytest.mark.parametrize("seed", range(50))
def test_an_overlapping_step_strikes_while_the_one_before_is_active_on_another_node(seed: int) -> None:
    # A reassignment (an operator's request, taking no place) has its own rules: test_chaos_reassign.py.
    steps = plan_faults(seed, tuple(kind for kind in FAULT_KINDS if kind != "reassign"), OVERLAPPING)
    for group in overlapping_groups(steps):
        assert sum(s.kind != "reassign" for s in group) <= 2  # at most two faults at once (an operator's request aside)
        assert sum(s.kind == "reassign" for s in group) <= 1
        first, *joining = group
        assert not first.overlaps
        for step in joining:
            assert step.overlaps and first.down_s > 0
            assert first.at_s <= step.at_s <= first.at_s + first.down_s + 1e-3  # while the first is active
            assert not (first.kind in CUT_FAULTS and step.kind in CUT_FAULTS)  # one cut at a time
            assert "controller-wipe" not in (first.kind, step.kind)
            if first.kind not in ("partition", "isolate-leader", "isolate-controller", "slow-disk") and (
                step.kind != "reassign"
            ):
                assert step.target != first.target or (first.kind in CONTROLLER_FAULTS) != (
                    step.kind in CONTROLLER_FAULTS
                )
    for previous, following in zip(overlapping_groups(steps), overlapping_groups(steps)[1:], strict=False):
        healed = max(s.at_s + s.down_s for s in previous)  # the next group waits for the pair's healing and a gap
        assert following[0].at_s >= healed + OVERLAPPING.timing.min_gap_s - 1e-3


def test_overlap_is_drawn_with_its_probability() -> None:
    def joined(overlap: float) -> int:
        config = replace(CONFIG, overlap=overlap)
        return sum(s.overlaps for seed in range(40) for s in plan_faults(seed, ("kill", "controller-kill"), config))

    assert joined(0.0) == 0
    assert 0 < joined(0.3) < joined(1.0)
    every = plan_faults(3, ("kill", "controller-kill"), replace(CONFIG, overlap=1.0))
    assert all(len(group) == 2 for group in overlapping_groups(every)[:-1])  # the last may be cut by the run's end


def test_two_overlapping_controller_kills_hit_two_controllers() -> None:
    steps = plan_faults(1, ("controller-kill",), replace(CONFIG, overlap=1.0))
    for first, second in (g for g in overlapping_groups(steps) if len(g) == 2):
        assert {first.target, second.target} <= set(CONFIG.controllers) and first.target != second.target

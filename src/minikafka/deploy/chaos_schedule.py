"""The chaos fault plan: which fault, on which node, when, and for how long, from a seed. Pure: no I/O.

Steps are sequential: each is healed (node started or resumed) and the cluster recovers its full ISRs before the
next begins, so at most one broker is away at a time (RF 3 - min.insync.replicas 2 = 1, Kafka's durability
promise for acks=all) and at most one controller (a minority of 3).

With `overlap` P > 0 (as a nemesis composed of two, in Jepsen's terms), a lasting step is followed, with
probability P, by one that strikes while it is still active: at most two faults at once, on two different nodes,
never two network cuts (healing a cut heals every cut), and never a controller-wipe (its removal and addition
need the other controllers). The pair is healed and recovered from before the next step.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

BROKER_FAULTS = ("kill", "reboot", "lose-unflushed", "wipe-disk", "pause")
# `controller-wipe` reboots a controller with its disk wiped (in a dynamic quorum, then removed and added again
# under its new directory id, KIP-853); `controller-flap` cuts a controller off and heals it three times.
CONTROLLER_FAULTS = ("controller-kill", "controller-wipe", "controller-flap")
CONTROLLER_FLAPS = 3  # cuts of one controller-flap step
# Network cuts, each healed after its time: `partition` splits the nodes at random, `isolate-leader` cuts the
# leader of partition `target` (found when it strikes) from every node, `isolate-controller` the active controller,
# `broker-controller` a broker from all controllers (seed 003), `one-way` a broker's calls to the other brokers.
NETWORK_FAULTS = ("partition", "isolate-leader", "isolate-controller", "broker-controller", "one-way")
# Storage faults on a broker: `disk-full` / `disk-error` fail its writes (or all its I/O) until it is restarted,
# after its time (its log dir goes offline and it exits on its own meanwhile); `corrupt` flips a byte in one
# replica of a partition (at most one replica of each partition over the run, as Kafka's promise assumes),
# found when that batch is next read.
STORAGE_FAULTS = ("disk-full", "disk-error", "corrupt")
# Faults that the guards exist for, drawn only when named: `stop` is a clean stop (SIGTERM, the controlled
# shutdown) of a broker, started again after its time; `hold-alter-partition` holds a broker's AlterPartition
# requests for its time, then sends them, as a slow request path to the controller delivers them late; `reassign`
# is an operator's AlterPartitionReassignments (`kafka-reassign-partitions --execute`) of partition `target` modulo
# the partitions, to its replicas in the order `replicas` ranks them: a reorder, which bumps the partition epoch.
# Last in FAULT_KINDS but for the simulator's: a plan of the other kinds draws as before.
REASSIGN = "reassign"
GUARD_FAULTS = ("stop", "hold-alter-partition", REASSIGN)
# Faults only `simulate` runs, drawn only when named (after the others: their plans draw as before): `slow-disk`
# makes each fsync of the active controller (found when it strikes) take seconds for its time, as a degraded disk
# does; its writes are not delayed (they reach the page cache).
SIMULATOR_FAULTS = ("slow-disk",)
FAULT_KINDS = BROKER_FAULTS + CONTROLLER_FAULTS + NETWORK_FAULTS + STORAGE_FAULTS + GUARD_FAULTS + SIMULATOR_FAULTS
# Faults that leave the node away for a while before it is healed; the others restart it at once.
LASTING_FAULTS = (
    "kill",
    "pause",
    "controller-kill",
    "controller-flap",
    *NETWORK_FAULTS,
    "disk-full",
    "disk-error",
    "stop",
    "hold-alter-partition",
    *SIMULATOR_FAULTS,
)
CUT_FAULTS = (*NETWORK_FAULTS, "controller-flap")  # faults that cut links, healed all at once
NOT_OVERLAPPING = ("controller-wipe",)
# The faults whose target is the node they strike; the others pick theirs when they strike, or cut groups (a
# reassignment's target names a partition).
_TARGET_UNKNOWN = ("partition", "isolate-leader", "isolate-controller", "slow-disk", REASSIGN)


@dataclass(frozen=True)
class FaultStep:
    at_s: float  # planned start, seconds after the workload began (the executor may start it later)
    kind: str
    target: int  # node id
    down_s: float  # how long the node stays down or paused before it is healed (0: restarted at once)
    # A cut's two groups of node ids (calls from the first to the second, and back unless one-way); empty for
    # the faults that hit one node, and for those whose node is known only when they strike (isolate-*).
    groups: tuple[tuple[int, ...], tuple[int, ...]] | tuple[()] = ()
    # It strikes while the step before it is still active, `at_s` minus that step's `at_s` after that one began,
    # rather than after its healing and recovery.
    overlaps: bool = False
    # A reassignment's: every broker, in the order the partition's replicas take (see `reordered`).
    replicas: tuple[int, ...] = ()


@dataclass(frozen=True)
class PlanTiming:
    """The gap after each step's healing, drawn from [min_gap_s, max_gap_s], and the longest downtime drawn."""

    min_gap_s: float
    max_gap_s: float
    max_down_s: float


# chaos's: real processes take seconds to restart and rejoin, so the gaps are longer and the downtimes shorter.
CHAOS_TIMING = PlanTiming(min_gap_s=3.0, max_gap_s=10.0, max_down_s=6.0)
# simulate's: downtimes beyond broker.session.timeout.ms, so a cut-off leader is fenced and replaced.
SIMULATE_TIMING = PlanTiming(min_gap_s=1.0, max_gap_s=4.0, max_down_s=15.0)


@dataclass(frozen=True)
class ChaosPlanConfig:
    duration_s: float
    brokers: Sequence[int]
    controllers: Sequence[int]
    timing: PlanTiming = CHAOS_TIMING
    overlap: float = 0.0  # the probability that a lasting step is joined by one while it is active
    # How many steps may be active at once: each joining step may itself be joined, with the same probability,
    # while fewer are active. 2: a lasting step and one joining it. A reassignment, an operator's request that takes
    # no node away, takes no place among them.
    max_at_once: int = 2


def parse_fault_kinds(text: str) -> tuple[str, ...]:
    """`kill,reboot,...` → the kinds, in FAULT_KINDS order; ValueError naming an unknown kind."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in FAULT_KINDS]
    if unknown or not kinds:
        raise ValueError(
            f"unknown fault kind(s) {', '.join(unknown) or '(none given)'}; known: {','.join(FAULT_KINDS)}"
        )
    return tuple(k for k in FAULT_KINDS if k in kinds)


def plan_faults(seed: int, kinds: Sequence[str], config: ChaosPlanConfig) -> list[FaultStep]:
    """The steps for a run of `config.duration_s`: gaps uniform in [min_gap, max_gap] after each step's healing
    (and, with `overlap`, of the step that joined it)."""
    rng = random.Random(seed)
    ordered = [k for k in FAULT_KINDS if k in kinds]
    steps: list[FaultStep] = []
    at = rng.uniform(config.timing.min_gap_s, config.timing.max_gap_s)
    while at < config.duration_s and ordered:
        step = _draw_step(rng, ordered, config, at)
        group = [step]
        joined_at = at
        while (
            config.overlap > 0 and (window := _joining_window(group, joined_at)) and _may_join(ordered, config, group)
        ):
            joined = _overlapping_step(rng, ordered, config, group, window)
            if joined is None:
                break
            group.append(joined)
            joined_at = joined.at_s
        steps.extend(group)
        lasting = max(joined.at_s - step.at_s + joined.down_s for joined in group)
        at += lasting + rng.uniform(config.timing.min_gap_s, config.timing.max_gap_s)
    return steps


def _draw_step(
    rng: random.Random, kinds: Sequence[str], config: ChaosPlanConfig, at: float, busy: Sequence[int] | None = None
) -> FaultStep:
    """One step at `at`; `busy` (for a step joining another) names the node it must not strike."""
    kind = rng.choice(list(kinds))
    if kind == REASSIGN:  # a partition's, not a node's: any broker's number picks it, busy or not
        target = rng.choice(list(config.brokers))
        order = tuple(rng.sample(list(config.brokers), len(config.brokers)))
        return FaultStep(round(at, 3), kind, target, 0.0, (), busy is not None, order)
    targets = config.controllers if kind in CONTROLLER_FAULTS else config.brokers
    target = rng.choice([t for t in targets if t not in (busy or ())])
    down = round(rng.uniform(1.0, config.timing.max_down_s), 3) if kind in LASTING_FAULTS else 0.0
    return FaultStep(round(at, 3), kind, target, down, _cut_groups(rng, kind, target, config), busy is not None)


def _slots(group: Sequence[FaultStep]) -> int:
    """How many of `max_at_once`'s places the group takes: a reassignment takes none."""
    return sum(step.kind != REASSIGN for step in group)


def _may_join(kinds: Sequence[str], config: ChaosPlanConfig, group: Sequence[FaultStep]) -> bool:
    """A place is left among `max_at_once`'s, or (taking none) the group's reassignment is still to come."""
    if _slots(group) < config.max_at_once:
        return True
    return REASSIGN in kinds and all(step.kind != REASSIGN for step in group)


def _joining_window(group: Sequence[FaultStep], last_at: float) -> tuple[float, float] | None:
    """When the next joining step may strike, (from, for how long): while the last step (begun at `last_at`) is
    active; after a reassignment (instantaneous), while what is left of the lasting step it joined is. None:
    nothing is active."""
    last = group[-1]
    if last.down_s:
        return last_at, last.down_s
    lasting = [step for step in group if step.down_s]
    if last.kind != REASSIGN or not lasting:
        return None
    left = lasting[-1].at_s + lasting[-1].down_s - last_at
    return (last_at, left) if left > 0 else None


def reordered(current: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """A reassignment's new replicas: the current ones in the order `order` ranks them (a broker it does not name
    last); when that is their order already, the current ones rotated by one, so the reassignment changes them."""
    rank = {broker: index for index, broker in enumerate(order)}
    ranked = tuple(sorted(current, key=lambda broker: rank.get(broker, len(rank))))
    if ranked == tuple(current):
        return (*current[1:], *current[:1])
    return ranked


def _overlapping_step(
    rng: random.Random,
    kinds: Sequence[str],
    config: ChaosPlanConfig,
    group: Sequence[FaultStep],
    window: tuple[float, float],
) -> FaultStep | None:
    """With probability `overlap`, a step striking within `window` (while a step of `group` is active), on a node
    none of the group strikes, not a second cut, nor a second reassignment."""
    at, active_s = window
    if rng.random() >= config.overlap or any(step.kind in NOT_OVERLAPPING for step in group):
        return None
    cut = any(step.kind in CUT_FAULTS for step in group)
    reassigned = any(step.kind == REASSIGN for step in group)
    full = _slots(group) >= config.max_at_once  # then only a reassignment, which takes no place
    busy = tuple(step.target for step in group if step.kind not in _TARGET_UNKNOWN)
    allowed = [
        k
        for k in kinds
        if k not in NOT_OVERLAPPING
        and not (cut and k in CUT_FAULTS)
        and not (reassigned and k == REASSIGN)
        and not (full and k != REASSIGN)
        and (
            k == REASSIGN
            or [t for t in (config.controllers if k in CONTROLLER_FAULTS else config.brokers) if t not in busy]
        )
    ]
    start = at + rng.uniform(0.0, active_s)
    if not allowed or start >= config.duration_s:
        return None
    return _draw_step(rng, allowed, config, start, busy)


def overlapping_groups(steps: Sequence[FaultStep]) -> list[tuple[FaultStep, ...]]:
    """The plan as executors run it: each step with the ones that strike while it is active."""
    groups: list[tuple[FaultStep, ...]] = []
    for step in steps:
        if step.overlaps and groups:
            groups[-1] = (*groups[-1], step)
        else:
            groups.append((step,))
    return groups


def _cut_groups(
    rng: random.Random, kind: str, broker: int, config: ChaosPlanConfig
) -> tuple[tuple[int, ...], tuple[int, ...]] | tuple[()]:
    match kind:
        case "partition":
            nodes = sorted([*config.brokers, *config.controllers])
            side = frozenset(rng.sample(nodes, rng.randint(1, len(nodes) // 2)))
            return tuple(sorted(side)), tuple(n for n in nodes if n not in side)
        case "broker-controller":
            return (broker,), tuple(sorted(config.controllers))
        case "one-way":
            return (broker,), tuple(sorted(b for b in config.brokers if b != broker))
        case _:
            return ()

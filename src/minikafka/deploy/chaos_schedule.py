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
# Faults on a broker that the guards exist for, drawn only when named: `stop` is a clean stop (SIGTERM, the
# controlled shutdown), started again after its time; `hold-alter-partition` holds the broker's AlterPartition
# requests for its time, then sends them, as a slow request path to the controller delivers them late. Last in
# FAULT_KINDS: a plan of the other kinds draws as before.
GUARD_FAULTS = ("stop", "hold-alter-partition")
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
    *GUARD_FAULTS,
    *SIMULATOR_FAULTS,
)
CUT_FAULTS = (*NETWORK_FAULTS, "controller-flap")  # faults that cut links, healed all at once
NOT_OVERLAPPING = ("controller-wipe",)
# The faults whose target is the node they strike; the others pick theirs when they strike, or cut groups.
_TARGET_UNKNOWN = ("partition", "isolate-leader", "isolate-controller", "slow-disk")


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
    # while fewer are active. 2: a lasting step and one joining it.
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
        while config.overlap > 0 and group[-1].down_s and len(group) < config.max_at_once:
            joined = _overlapping_step(rng, ordered, config, group, joined_at)
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
    targets = config.controllers if kind in CONTROLLER_FAULTS else config.brokers
    target = rng.choice([t for t in targets if t not in (busy or ())])
    down = round(rng.uniform(1.0, config.timing.max_down_s), 3) if kind in LASTING_FAULTS else 0.0
    return FaultStep(round(at, 3), kind, target, down, _cut_groups(rng, kind, target, config), busy is not None)


def _overlapping_step(
    rng: random.Random, kinds: Sequence[str], config: ChaosPlanConfig, group: Sequence[FaultStep], at: float
) -> FaultStep | None:
    """With probability `overlap`, a step striking while the last of `group` (which began at `at`) is active, on a
    node none of the group strikes, not a second cut."""
    first = group[-1]
    if rng.random() >= config.overlap or any(step.kind in NOT_OVERLAPPING for step in group):
        return None
    cut = any(step.kind in CUT_FAULTS for step in group)
    busy = tuple(step.target for step in group if step.kind not in _TARGET_UNKNOWN)
    allowed = [
        k
        for k in kinds
        if k not in NOT_OVERLAPPING
        and not (cut and k in CUT_FAULTS)
        and [t for t in (config.controllers if k in CONTROLLER_FAULTS else config.brokers) if t not in busy]
    ]
    start = at + rng.uniform(0.0, first.down_s)
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

"""The chaos fault plan: which fault, on which node, when, and for how long, from a seed. Pure: no I/O.

Steps are sequential: each is healed (node started or resumed) and the cluster recovers its full ISRs before the
next begins, so at most one broker is away at a time (RF 3 - min.insync.replicas 2 = 1, Kafka's durability
promise for acks=all) and at most one controller (a minority of 3).
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
FAULT_KINDS = BROKER_FAULTS + CONTROLLER_FAULTS + NETWORK_FAULTS + STORAGE_FAULTS
# Faults that leave the node away for a while before it is healed; the others restart it at once.
LASTING_FAULTS = ("kill", "pause", "controller-kill", "controller-flap", *NETWORK_FAULTS, "disk-full", "disk-error")


@dataclass(frozen=True)
class FaultStep:
    at_s: float  # planned start, seconds after the workload began (the executor may start it later)
    kind: str
    target: int  # node id
    down_s: float  # how long the node stays down or paused before it is healed (0: restarted at once)
    # A cut's two groups of node ids (calls from the first to the second, and back unless one-way); empty for
    # the faults that hit one node, and for those whose node is known only when they strike (isolate-*).
    groups: tuple[tuple[int, ...], tuple[int, ...]] | tuple[()] = ()


@dataclass(frozen=True)
class ChaosPlanConfig:
    duration_s: float
    brokers: Sequence[int]
    controllers: Sequence[int]
    min_gap_s: float = 3.0
    max_gap_s: float = 10.0
    max_down_s: float = 6.0


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
    """The steps for a run of `config.duration_s`: gaps uniform in [min_gap, max_gap] after each step's healing."""
    rng = random.Random(seed)
    ordered = [k for k in FAULT_KINDS if k in kinds]
    steps: list[FaultStep] = []
    at = rng.uniform(config.min_gap_s, config.max_gap_s)
    while at < config.duration_s and ordered:
        kind = rng.choice(ordered)
        targets = config.controllers if kind in CONTROLLER_FAULTS else config.brokers
        target = rng.choice(list(targets))
        down = round(rng.uniform(1.0, config.max_down_s), 3) if kind in LASTING_FAULTS else 0.0
        steps.append(FaultStep(round(at, 3), kind, target, down, _cut_groups(rng, kind, target, config)))
        at += down + rng.uniform(config.min_gap_s, config.max_gap_s)
    return steps


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

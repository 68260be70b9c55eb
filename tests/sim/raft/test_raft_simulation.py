"""Hundreds of seeded schedules of the KRaft core: faults, then healing; invariants after every event."""

from __future__ import annotations

import os

import pytest
from raft_sim import RaftSimulation

SEEDS = int(os.environ.get("MINIKAFKA_RAFT_SEEDS", "200"))
CHAOS_MS = 3000
HEAL_MS = 4000


def run_schedule(seed: int) -> RaftSimulation:
    sim = RaftSimulation(seed)
    rng = sim.rng
    crashed: set[int] = set()
    # Faults while proposals keep coming.
    t = 0
    while t < CHAOS_MS:
        t += rng.randint(20, 120)
        sim.run_until(t)
        roll = rng.random()
        if roll < 0.45:
            sim.propose(rng.randint(1, 4))
        elif roll < 0.55 and len(crashed) < 1:
            victim = rng.choice(sim.voter_ids + [100])
            sim.crash(victim)
            crashed.add(victim)
        elif roll < 0.70 and crashed:
            node = crashed.pop()
            sim.restart(node)
        elif roll < 0.78:
            a, b = rng.sample(sim.node_ids, 2)
            sim.cut.add(frozenset((a, b)))
        elif roll < 0.88 and sim.cut:
            sim.cut.discard(rng.choice(sorted(sim.cut, key=sorted)))
        elif roll < 0.92:
            sim.snapshot(rng.choice(sim.node_ids))
        if rng.random() < 0.1:
            sim.check_log_matching()
    # Heal: every node up, every link up, no drops; a leader must emerge and new entries commit everywhere.
    for node in crashed:
        sim.restart(node)
    sim.cut.clear()
    sim.drop_rate = 0.0
    sim.duplicate_rate = 0.0
    sim.run_until(t + HEAL_MS // 2)
    assert any(n.raft.is_leader for n in sim.nodes.values()), f"seed {seed}: no leader after healing"
    before = len(sim.committed_history)
    assert sim.propose(3), f"seed {seed}: the leader refused a proposal"
    sim.run_until(t + HEAL_MS)
    sim.check_log_matching()
    assert len(sim.committed_history) >= before + 3, f"seed {seed}: new proposals did not commit"
    final = max(sim.committed_history) + 1
    for node in sim.nodes.values():
        assert node.commit_offset == final, f"seed {seed}: node {node.node_id} committed {node.commit_offset}/{final}"
    return sim


@pytest.mark.parametrize("seed", range(SEEDS))
def test_raft_schedule(seed: int) -> None:
    run_schedule(seed)


def test_simulation_exercises_elections_and_truncations() -> None:
    """The faults are real: across seeds there are several epochs, crashes and commits."""
    epochs = commits = 0
    for seed in range(10):
        sim = run_schedule(seed)
        epochs += len(sim.leaders_by_epoch)
        commits += len(sim.committed_history)
    assert epochs >= 20
    assert commits >= 300

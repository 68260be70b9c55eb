"""Observers (brokers) follow the metadata log across kills of the leader whose answers are lost on the wire.

The leader is killed while the observers' fetches are in flight to it, and neither their answers nor a failure ever
come back (a connection left hanging). Each observer must give up on that fetch, find the new leader among the
voters, and receive an entry committed after the kill.
"""

from __future__ import annotations

import pytest
from raft_sim import RaftSimulation

from minikafka.kraft_controller.raft.core import Follower

OBSERVERS = (100, 101)
KILLS_PER_SEED = 5
RECOVERY_DEADLINE_MS = 5000  # sim time: fetch timeout 300 ms, election timeout 150-300 ms


def leader_of(sim: RaftSimulation) -> int | None:
    leaders = [n.node_id for n in sim.nodes.values() if n.raft is not None and n.raft.is_leader]
    return leaders[0] if len(leaders) == 1 else None


def observers_fetching_from(sim: RaftSimulation, leader: int) -> bool:
    for observer in OBSERVERS:
        raft = sim.nodes[observer].raft
        if raft is None or not isinstance(raft.role, Follower) or raft.role.leader_id != leader:
            return False
        if not raft.timers.fetch_in_flight:
            return False
    return True


def kill_leader_with_fetches_in_flight(sim: RaftSimulation, seed: int) -> int:
    """Wait for a leader the observers follow with a fetch outstanding, propose, and kill it silently."""
    deadline = sim.now + RECOVERY_DEADLINE_MS
    assert sim.run_until_true(
        lambda: (leader := leader_of(sim)) is not None and observers_fetching_from(sim, leader), deadline
    ), f"seed {seed}: no leader with the observers fetching from it"
    leader = leader_of(sim)
    assert leader is not None
    sim.propose(2)
    sim.crash(leader, silently=True)
    return leader


def recover(sim: RaftSimulation, killed: int, seed: int) -> int:
    """The sim time until an entry proposed after the kill is committed on every observer."""
    killed_at = sim.now
    deadline = killed_at + RECOVERY_DEADLINE_MS
    assert sim.run_until_true(lambda: leader_of(sim) not in (None, killed), deadline), f"seed {seed}: no new leader"
    assert sim.propose(1)
    final = max(sim.committed_history, default=-1) + 1
    target = max(final, sim.nodes[leader_of(sim) or killed].raft.log_end_offset)  # type: ignore[union-attr]
    caught_up = sim.run_until_true(lambda: all(sim.nodes[o].commit_offset >= target for o in OBSERVERS), deadline)
    stuck = {
        o: (sim.nodes[o].commit_offset, sim.nodes[o].raft.role, sim.nodes[o].raft.timers.fetch_in_flight)  # type: ignore[union-attr]
        for o in OBSERVERS
        if sim.nodes[o].commit_offset < target
    }
    assert caught_up, f"seed {seed}: observers stuck after killing leader {killed} (offset, role, in flight): {stuck}"
    return sim.now - killed_at


@pytest.mark.parametrize("seed", range(10))
def test_observers_follow_the_new_leader_after_silent_leader_kills(seed: int) -> None:
    sim = RaftSimulation(seed, observers=len(OBSERVERS), drop_rate=0.0)
    sim.duplicate_rate = 0.0
    for _ in range(KILLS_PER_SEED):
        killed = kill_leader_with_fetches_in_flight(sim, seed)
        recover(sim, killed, seed)
        sim.restart(killed)
    sim.check_log_matching()

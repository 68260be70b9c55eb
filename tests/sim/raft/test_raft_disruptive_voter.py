"""A voter cut off from a healthy quorum and healed, again and again (the `disruptive-controller` story).

With pre-vote (KIP-996) the cut-off voter never raises its epoch: its pre-votes go unanswered while it is cut off
and are refused once it is back (both others have fetched from the leader), so the leader and epoch stay. Without
it, the voter's epoch climbs while it is cut off and its first Vote after the heal makes the leader step down.
"""

from __future__ import annotations

import pytest
from raft_sim import RaftSimulation

from minikafka.kraft_controller.raft.core import Follower

FLAPS = 3
CUT_MS = 1500  # five fetch timeouts of the simulation's voters
HEALED_MS = 1500


def stable_leader(sim: RaftSimulation, seed: int) -> tuple[int, int]:
    """Wait until a leader is followed (with a successful fetch) by both other voters; its id and epoch."""

    def settled() -> bool:
        leaders = [n.raft for n in sim.nodes.values() if n.raft is not None and n.raft.is_leader]
        if len(leaders) != 1:
            return False
        leader = leaders[0]
        others = [sim.nodes[v].raft for v in sim.voter_ids if v != leader.node_id]
        return all(o is not None and o.role == Follower(leader.node_id, fetched=True) for o in others)

    assert sim.run_until_true(settled, sim.now + 5000), f"seed {seed}: no settled leader"
    leader = next(n.raft for n in sim.nodes.values() if n.raft is not None and n.raft.is_leader)
    return leader.node_id, leader.epoch


def flap(sim: RaftSimulation, victim: int) -> int:
    """Cut `victim` off from the other voters (proposals go on), heal, let it settle; its highest epoch while cut."""
    others = [v for v in sim.voter_ids if v != victim]
    for other in others:
        sim.cut.add(frozenset((victim, other)))
    highest = 0
    end = sim.now + CUT_MS
    while sim.now < end:
        sim.run_until(sim.now + 100)
        sim.propose(1)
        raft = sim.nodes[victim].raft
        assert raft is not None
        highest = max(highest, raft.epoch)
    for other in others:
        sim.cut.discard(frozenset((victim, other)))
    sim.run_until(sim.now + HEALED_MS)
    return highest


def run_flaps(seed: int, pre_vote: bool) -> tuple[tuple[int, int], list[int], RaftSimulation]:
    sim = RaftSimulation(seed, observers=0, drop_rate=0.0, pre_vote=pre_vote)
    sim.duplicate_rate = 0.0
    before = stable_leader(sim, seed)
    victim = min(v for v in sim.voter_ids if v != before[0])
    cut_epochs = [flap(sim, victim) for _ in range(FLAPS)]
    return before, cut_epochs, sim


@pytest.mark.parametrize("seed", range(5))
def test_with_pre_vote_a_healed_voter_leaves_the_leader_and_epoch_alone(seed: int) -> None:
    (leader, epoch), cut_epochs, sim = run_flaps(seed, pre_vote=True)
    assert cut_epochs == [epoch] * FLAPS, f"seed {seed}: the cut-off voter raised its epoch: {cut_epochs}"
    assert max(sim.leaders_by_epoch) == epoch and sim.leaders_by_epoch[epoch] == leader
    assert all(n.raft is not None and n.raft.epoch == epoch for n in sim.nodes.values())
    victim = min(v for v in sim.voter_ids if v != leader)
    assert sim.nodes[victim].raft.role == Follower(leader, fetched=True)  # type: ignore[union-attr]
    assert sim.nodes[victim].commit_offset == max(sim.committed_history) + 1


@pytest.mark.parametrize("seed", range(5))
def test_without_pre_vote_each_heal_forces_an_election(seed: int) -> None:
    (_leader, epoch), cut_epochs, sim = run_flaps(seed, pre_vote=False)
    assert all(e > epoch for e in cut_epochs), f"seed {seed}: the cut-off voter kept its epoch: {cut_epochs}"
    # Every heal ends the epoch the quorum was in: at least one new epoch with a leader per flap.
    assert len([e for e in sim.leaders_by_epoch if e > epoch]) >= FLAPS

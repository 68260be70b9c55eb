"""A voter's disk is wiped while another voter is down (the `controller-disk-loss` story).

The leader commits entries with one follower while the third voter is down; then that follower's disk is wiped
and the leader crashes, and the third voter comes back. Named by id only (a static voter set, Kafka before
KIP-853), the wiped voter votes as if it remembered: with its empty log it grants the third voter, which lacks
the committed entries, the leadership. Named by id and directory (KIP-853), the wiped controller is a new replica
outside the voter set: it refuses the vote (INVALID_VOTER_KEY), no leader is elected until the old leader is
back, and nothing committed is lost.
"""

from __future__ import annotations

import pytest
from raft_sim import InvariantViolation, RaftSimulation
from test_raft_disruptive_voter import stable_leader

SEEDS = 20
DOWN_MS = 3000  # ten fetch timeouts of the simulation's voters


def lose_a_disk(sim: RaftSimulation, seed: int) -> tuple[int, int, int]:
    """Commit with one follower while the other is down, wipe that follower, crash the leader, bring the lagging
    voter back; (leader, wiped, lagging)."""
    leader, _ = stable_leader(sim, seed)
    wiped, lagging = (v for v in sim.voter_ids if v != leader)
    sim.crash(lagging)
    for _ in range(5):
        sim.propose(2)
        sim.run_until(sim.now + 30)
    raft = sim.nodes[leader].raft
    assert raft is not None
    assert sim.run_until_true(lambda: raft.high_watermark == raft.log_end_offset, sim.now + 3000), f"seed {seed}"
    sim.wipe(wiped)
    sim.crash(leader)
    sim.restart(lagging)
    return leader, wiped, lagging


@pytest.mark.parametrize("seed", range(SEEDS))
def test_a_wiped_voter_named_by_id_elects_a_leader_without_committed_entries(seed: int) -> None:
    sim = RaftSimulation(seed, observers=0, drop_rate=0.0, directory_check=False)
    lose_a_disk(sim, seed)
    with pytest.raises(InvariantViolation, match="lacks committed offset"):
        sim.run_until(sim.now + DOWN_MS)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_a_wiped_voter_named_by_directory_stays_an_observer(seed: int) -> None:
    sim = RaftSimulation(seed, observers=0, drop_rate=0.0, directory_check=True)
    leader, wiped, lagging = lose_a_disk(sim, seed)
    epochs = set(sim.leaders_by_epoch)
    sim.run_until(sim.now + DOWN_MS)
    assert set(sim.leaders_by_epoch) == epochs, f"seed {seed}: a leader without the old leader's log"
    wiped_raft = sim.nodes[wiped].raft
    assert wiped_raft is not None and not wiped_raft.is_voter
    assert wiped_raft.voted_for is None, f"seed {seed}: the wiped controller voted"
    sim.restart(leader)
    assert sim.run_until_true(
        lambda: any(n.raft is not None and n.raft.is_leader for n in sim.nodes.values()), sim.now + DOWN_MS
    ), f"seed {seed}: no leader once the old leader is back"
    assert sim.propose(1)
    final = max(sim.committed_history) + 2
    assert sim.run_until_true(lambda: all(n.commit_offset >= final for n in sim.nodes.values()), sim.now + DOWN_MS), (
        f"seed {seed}: not every replica caught up, the wiped observer included"
    )
    assert not sim.nodes[wiped].raft.is_voter  # type: ignore[union-attr]

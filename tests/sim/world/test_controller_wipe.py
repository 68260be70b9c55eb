"""`controller-wipe` in the simulated world: the run formats a dynamic quorum (KIP-853), and after each wipe the
operator's step replaces the voter, removed under its old directory and added under the new one its disk holds.
Seed 1 wipes controller 102 twice within a second: the leader then still lists 102's first directory among its
observers, and a voter added by that stale directory would name no running process (the quorum then cannot
commit a later RemoveRaftVoter)."""

from __future__ import annotations

from minikafka.sim.world import SimulationSettings, simulate_seed


def test_every_wiped_controller_rejoins_the_quorum_under_its_new_directory() -> None:
    result = simulate_seed(SimulationSettings(1, duration_s=30.0, faults=("controller-wipe",)))
    assert result.violation is None, "\n".join(result.trace)
    replacements = result.observed["voter_replacements"]
    assert len(replacements) == result.faults >= 3
    assert sum(node == 102 for node, _, _ in replacements) >= 2, replacements
    added: dict[int, str] = {}
    for node, old, new in replacements:
        assert added.get(node, old) == old != new, replacements  # each removes the directory the one before added
        added[node] = new

"""A bounded batch of random seeds over the simulated cluster (the shipped nodes): every simulated fault kind, 60
simulated seconds of faults each, every invariant after every step. Each seed is a few CPU seconds; thousands are
`minikafka simulate`'s job."""

from __future__ import annotations

import pytest

from minikafka.sim.world import SimulationSettings, simulate_seed

SEEDS = range(1, 13)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_seed_keeps_every_invariant(seed: int) -> None:
    result = simulate_seed(SimulationSettings(seed))
    replay = f"minikafka simulate --seed {seed}"
    assert result.violation is None, f"{result.violation}; replay: {replay}\n" + "\n".join(result.trace)
    # not a vacuous run: the faults happened and the producer kept writing through them
    assert result.faults >= 5 and result.acknowledged > 2000, replay

"""Overlapping faults (`--overlap`) find what one fault at a time does not: a Raft log that is never fsynced loses a
committed metadata entry once two controllers lose power together. With the guard on, the same seed holds."""

from __future__ import annotations

import re

import pytest

from minikafka.cli import main
from minikafka.sim.world import SimulationSettings, TopicSpec, simulate_seed

# Seed 3 with --overlap 0.5: controller 102 loses power for 13.8 s and, 8 s in, controller 103 for 4.6 s. Both come
# back with what they had fsynced, elect each other and the leader (101) truncates its committed entries.
SEED = 3
FAULTS = ("controller-kill", "isolate-controller")
ARGS = ["--faults", ",".join(FAULTS), "--duration-ms", "20000", "--power-loss", "--overlap", "0.5"]
BUG = "raft-log-not-fsynced"


def simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["simulate", "--seed", str(SEED), *ARGS, *args])
    return code, capsys.readouterr().out


def test_two_overlapping_power_losses_find_an_unfsynced_raft_log_and_replay_the_same_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = simulate(capsys, "--planted-bug", BUG)
    assert code == 1, out
    assert f"seed {SEED} broke LeaderHasAllAckedValues" in out
    replay = re.search(r"replay with:\n  (.*)\n", out)
    assert replay is not None
    assert replay.group(1) == (
        f"minikafka simulate --seed {SEED} --faults controller-kill,isolate-controller --duration-ms 20000 "
        f"--planted-bug {BUG} --power-loss --overlap 0.5"
    )
    first_hash = re.search(r"trace hash (\w+)", out)
    assert first_hash is not None
    again_code, again = simulate(capsys, "--planted-bug", BUG)
    assert again_code == 1
    assert f"trace hash {first_hash.group(1)}" in again


def test_the_same_seed_holds_with_the_raft_log_fsynced() -> None:
    settings = SimulationSettings(SEED, duration_s=20.0, faults=FAULTS, power_loss=True, overlap=0.5)
    result = simulate_seed(settings)
    assert result.violation is None, "\n".join(result.trace)
    assert result.faults >= 2


def test_one_fault_at_a_time_the_same_seed_misses_the_bug() -> None:
    """Without overlap the plan is the old one: each controller loses power alone, the other two keep the entries."""
    settings = SimulationSettings(SEED, duration_s=20.0, faults=FAULTS, power_loss=True, planted_bug=BUG)
    result = simulate_seed(settings)
    assert result.violation is None, "\n".join(result.trace)


def test_a_broker_restarted_within_its_old_session_serves_nothing_of_its_stale_leaderships() -> None:
    """Seed 25 of the default faults with --overlap 0.5: broker 1 is cut from the controllers (fenced after its
    session) and broker 3 loses its unflushed log meanwhile; restarted within its old session, its registration
    refused until that session expires, it leads sim-1 again from its stale image with a short log. It serves none
    of it (no listener before its first unfence, no leader's read or append before it serves), so nothing is lost.
    Counted as leading, this was a LeaderCandidateCompleteness loss, explained as two brokers away."""
    result = simulate_seed(SimulationSettings(25, overlap=0.5))
    assert result.violation is None, "\n".join(result.trace)
    assert result.faults >= 2


def test_the_last_isr_member_restarted_at_once_after_its_power_loss_leads_nothing_before_its_unfence() -> None:
    """Seed 9 of `--faults stop,lose-unflushed --overlap 1.0 --replication-factor 2` (guards on), its plan cut at
    52 s: broker 2 stops cleanly (sim-1's ISR [1], broker 2 in the ELR) and broker 1, the last ISR member, loses
    power and restarts at once; its registration refused while its old session lives, it leads sim-1 from its stale
    image with the log its power loss left (below the high watermark), serving nothing until it is unfenced, by
    which time the controller has taken the leadership away."""
    settings = SimulationSettings(
        9, duration_s=52.0, faults=("stop", "lose-unflushed"), overlap=1.0, topic=TopicSpec(replicas=2)
    )
    result = simulate_seed(settings)
    assert result.violation is None, "\n".join(result.trace)
    assert result.faults >= 2

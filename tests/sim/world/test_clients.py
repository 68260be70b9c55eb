"""The world's clients (`--clients mixed`: idempotent and plain acks=all producers, acks=1 and acks=0 ones, a plain
consumer and a consumer group of 3 whose members are killed and restarted) run through the faults with their
invariants; a group coordinator that hands two members the same partitions, or stores commits one ahead, is
caught."""

from __future__ import annotations

import re

import pytest

from minikafka.cli import main
from minikafka.sim import clients
from minikafka.sim.clients import MIXED, ProducerSpec, seeded_mix
from minikafka.sim.world import SimulationSettings, simulate_seed

BUG = "sync-hands-one-assignment-to-all"


def test_a_seed_with_a_group_and_mixed_producers_keeps_every_invariant() -> None:
    result = simulate_seed(SimulationSettings(1, duration_s=20.0, clients=MIXED))
    replay = "minikafka simulate --seed 1 --duration-ms 20000 --clients mixed"
    assert result.violation is None, f"{result.violation}; replay: {replay}\n" + "\n".join(result.trace)
    seen = result.observed
    # not vacuous: the faults hit, the group committed and lost members, every record was read back
    assert result.faults >= 2 and result.acknowledged > 1000, replay
    assert seen["consumed"] > 2 * result.acknowledged and seen["commits"] > 0 and seen["member_kills"] > 0, seen
    assert any("sim_member_assigned" in line for line in result.trace)


@pytest.mark.parametrize(
    ("bug", "invariant", "detail"),
    [
        (BUG, "NoDoubleOwnership", "partition 0 assigned to member-"),
        ("commit-stored-one-ahead", "CommittedOffsetWithinLog", "past the highest high watermark its leaders reached"),
    ],
)
def test_a_broken_group_coordinator_is_caught_with_its_replay_command(
    capsys: pytest.CaptureFixture[str], bug: str, invariant: str, detail: str
) -> None:
    code = main(["simulate", "--seed", "1", "--clients", "mixed", "--duration-ms", "20000", "--planted-bug", bug])
    out = capsys.readouterr().out
    assert code == 1, out
    assert f"broke {invariant}" in out and detail in out
    replay = re.search(r"replay with:\n  (.*)\n", out)
    assert replay is not None
    assert replay.group(1) == (
        f"minikafka simulate --seed 1 --faults {','.join(SimulationSettings(0).faults)} --duration-ms 20000 "
        f"--planted-bug {bug} --clients mixed"
    )


def test_a_client_that_fails_is_a_violation_not_a_quiet_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_producer(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("the producer could not start")

    monkeypatch.setattr(clients, "Producer", broken_producer)
    result = simulate_seed(SimulationSettings(1, duration_s=2.0, faults=("kill",)))
    assert result.violation is not None and result.violation.invariant == "ClientFailed", result.violation
    assert "the producer could not start" in result.violation.detail


def test_the_seed_draws_a_small_mix_around_an_idempotent_acks_all_producer() -> None:
    mixes = [seeded_mix(seed) for seed in range(1, 21)]
    assert seeded_mix(7) == seeded_mix(7)
    assert all(m.producers[0] == ProducerSpec(-1, True) and 2 <= len(m.producers) <= 4 for m in mixes)
    assert all(2 <= m.group_members <= 3 and m.consumers in (0, 1) for m in mixes)
    assert len({m.producers for m in mixes}) > 3  # the seeds do differ


def test_a_producer_kafka_refuses_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--seed", "1", "--acks", "1", "--idempotence", "true"]) == 1
    assert "enable.idempotence=true needs acks=all, not acks=1" in capsys.readouterr().err

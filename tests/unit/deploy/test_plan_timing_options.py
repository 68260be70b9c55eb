"""`chaos` and `simulate` take the same plan timing options: given the same seed, kinds, duration and timing, both
draw the same fault plan, and a simulated seed's replay command keeps the timing it ran with."""

from __future__ import annotations

import pytest

from minikafka.cli import build_parser
from minikafka.deploy.chaos_schedule import CHAOS_TIMING, SIMULATE_TIMING, ChaosPlanConfig, PlanTiming, plan_faults
from minikafka.deploy.plan_timing_options import plan_timing
from minikafka.sim.cli import replay_command, settings_from
from minikafka.sim.cluster import BROKER_IDS, CONTROLLER_IDS

KINDS = "kill,reboot,pause,controller-kill,isolate-leader"


def chaos_args(*words: str):  # noqa: ANN201 - argparse.Namespace
    return build_parser("chaos").parse_args(
        ["chaos", "RUN", "--duration", "60", "--seed", "7", "--faults", KINDS, *words]
    )


def simulate_args(*words: str):  # noqa: ANN201
    return build_parser("simulate").parse_args(["simulate", "--seed", "7", "--faults", KINDS, *words])


def plan(timing: PlanTiming) -> list:
    return plan_faults(7, KINDS.split(","), ChaosPlanConfig(60, BROKER_IDS, CONTROLLER_IDS, timing=timing))


def test_each_command_keeps_its_own_defaults() -> None:
    assert plan_timing(chaos_args()) == CHAOS_TIMING
    assert settings_from(simulate_args()).timing == SIMULATE_TIMING
    assert plan(CHAOS_TIMING) != plan(SIMULATE_TIMING)


def test_chaos_given_simulates_timing_draws_the_simulated_seeds_plan() -> None:
    chaos_timing = plan_timing(chaos_args("--gap-s", "1,4", "--max-down-s", "15"))
    assert chaos_timing == settings_from(simulate_args()).timing
    assert plan(chaos_timing) == plan(SIMULATE_TIMING)


def test_simulate_given_chaos_timing_draws_the_chaos_plan_and_replays_with_it() -> None:
    args = simulate_args("--gap-s", "3,10", "--max-down-s", "6")
    assert plan(settings_from(args).timing) == plan(CHAOS_TIMING)
    command = replay_command(args, 7)
    assert command.endswith("--gap-s 3.0,10.0 --max-down-s 6.0")
    assert settings_from(simulate_args(*command.split()[-4:])).timing == CHAOS_TIMING
    assert "--gap-s" not in replay_command(simulate_args(), 7)


@pytest.mark.parametrize("gap", ["4", "4,1", "0,2", "a,b"])
def test_a_bad_gap_is_refused_in_one_line(gap: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        chaos_args("--gap-s", gap)
    assert exited.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("minikafka chaos: error: argument --gap-s: ")

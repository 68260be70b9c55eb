"""`slow-disk`: a lasting fault on the active controller (found when it strikes), drawn only when named and last in
the language (plans of the other kinds draw as before: `test_chaos_schedule*.py` pin them); `simulate` runs it,
`chaos` refuses it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from minikafka.cli import build_parser
from minikafka.common.cli_support import CliError
from minikafka.deploy import chaos
from minikafka.deploy import cli as deploy_cli
from minikafka.deploy.chaos_schedule import (
    FAULT_KINDS,
    LASTING_FAULTS,
    SIMULATOR_FAULTS,
    ChaosPlanConfig,
    overlapping_groups,
    parse_fault_kinds,
    plan_faults,
)
from minikafka.sim.world import DEFAULT_FAULTS, SIMULATED_FAULTS

CONFIG = ChaosPlanConfig(duration_s=300, brokers=[1, 2, 3], controllers=[101, 102, 103])
SEARCHED = ("controller-kill", "isolate-controller", "partition")


def test_slow_disk_is_last_in_the_language_lasting_and_simulated_but_not_by_default() -> None:
    assert FAULT_KINDS[-1] == "slow-disk" and SIMULATOR_FAULTS == ("slow-disk",)
    assert "slow-disk" in LASTING_FAULTS and "slow-disk" in SIMULATED_FAULTS
    assert "slow-disk" not in DEFAULT_FAULTS
    assert parse_fault_kinds("slow-disk,controller-kill") == ("controller-kill", "slow-disk")


@pytest.mark.parametrize("seed", range(20))
def test_slow_disk_steps_last_their_drawn_time(seed: int) -> None:
    steps = plan_faults(seed, ("slow-disk",), CONFIG)
    assert steps and {s.kind for s in steps} == {"slow-disk"}
    for step in steps:
        assert 1.0 <= step.down_s <= CONFIG.timing.max_down_s and step.groups == () and not step.overlaps


def test_a_controller_kill_may_join_a_slow_disk_on_any_controller() -> None:
    """Its node (the active controller) is known only when it strikes, so no controller is kept from a joining
    controller-kill: the slow disk's own controller may lose power while its fsyncs are pending."""
    config = replace(CONFIG, overlap=1.0, max_at_once=3)
    joined: set[int] = set()
    for seed in range(40):
        for group in overlapping_groups(plan_faults(seed, ("slow-disk", *SEARCHED), config)):
            kinds = [s.kind for s in group]
            if "slow-disk" in kinds:
                after = group[kinds.index("slow-disk") + 1 :]
                joined |= {s.target for s in after if s.kind == "controller-kill"}
    assert joined == set(config.controllers)


def test_chaos_refuses_slow_disk_as_a_simulator_only_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_cluster(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("chaos started a run with slow-disk")

    monkeypatch.setattr(chaos, "run_chaos", no_cluster)
    monkeypatch.setattr(deploy_cli, "require_analysis", lambda: None)
    args = build_parser().parse_args(["chaos", str(tmp_path), "--duration", "5", "--faults", "kill,slow-disk"])
    with pytest.raises(CliError, match="slow-disk: a simulator-only fault"):
        deploy_cli.run_chaos_command(args)

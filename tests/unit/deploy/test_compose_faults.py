"""`minikafka fault ... --compose FILE`: the engine's command per fault and node, and the recorded event."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from minikafka.cli import main
from minikafka.deploy.compose_faults import ComposeFaultError, choose_engine, compose_nodes, engine_command

REPO = Path(__file__).resolve().parents[3]


def test_the_repository_compose_file_has_every_node() -> None:
    nodes = compose_nodes((REPO / "docker-compose.yml").read_text())
    assert {n: node.service for n, node in nodes.items()} == {
        101: "controller-101",
        102: "controller-102",
        103: "controller-103",
        1: "broker-1",
        2: "broker-2",
        3: "broker-3",
    }


@pytest.mark.parametrize(
    ("fault", "verb"),
    [("kill", ["kill", "-s", "SIGKILL"]), ("stop", ["stop"]), ("start", ["start"]), ("pause", ["pause"]),
     ("resume", ["unpause"]), ("reboot", ["restart"])],
)  # fmt: skip
def test_each_fault_maps_to_the_engines_verb(fault: str, verb: list[str]) -> None:
    command = engine_command("podman", Path("c.yml"), fault, "broker-2")
    assert command == ["podman", "compose", "-f", "c.yml", *verb, "broker-2"]


def test_faults_a_container_cannot_take_are_refused() -> None:
    with pytest.raises(ComposeFaultError, match="hold-alter-partition"):
        engine_command("docker", Path("c.yml"), "hold-alter-partition", "broker-1")


def test_the_engine_is_chosen_from_the_option_the_environment_or_path() -> None:
    assert choose_engine("podman", {}) == "podman"
    assert choose_engine(None, {"MINIKAFKA_CONTAINER_ENGINE": "podman"}) == "podman"
    assert choose_engine(None, {}, which=lambda name: "/usr/bin/podman" if name == "podman" else None) == "podman"
    with pytest.raises(ComposeFaultError):
        choose_engine(None, {}, which=lambda _name: None)
    with pytest.raises(ComposeFaultError):
        choose_engine("lxc", {})


def test_fault_kill_runs_the_engine_and_records_the_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls"
    engine = tmp_path / "bin" / "docker"
    engine.parent.mkdir()
    engine.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    engine.chmod(0o755)
    monkeypatch.setenv("PATH", f"{engine.parent}{os.pathsep}{os.environ['PATH']}")
    run = tmp_path / "run"
    compose = REPO / "docker-compose.yml"
    assert main(["fault", "kill", "2", "--compose", str(compose), "--engine", "docker", "--dir", str(run)]) == 0
    assert calls.read_text().split() == ["compose", "-f", str(compose), "kill", "-s", "SIGKILL", "broker-2"]
    [event] = [json.loads(line) for line in (run / "logs" / "faults.jsonl").read_text().splitlines()]
    assert (event["event"], event["fault"], event["target"], event["target_id"], event["role"]) == (
        "fault_injected", "kill", "broker-2", 2, "broker",
    )  # fmt: skip
    assert event["engine"] == "docker"


def test_a_failing_engine_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    engine = tmp_path / "bin" / "podman"
    engine.parent.mkdir()
    engine.write_text("#!/bin/sh\necho 'Error: no container with name broker-9' >&2\nexit 125\n")
    engine.chmod(0o755)
    monkeypatch.setenv("PATH", f"{engine.parent}{os.pathsep}{os.environ['PATH']}")
    compose = REPO / "docker-compose.yml"
    assert main(["fault", "stop", "1", "--compose", str(compose), "--engine", "podman", "--dir", str(tmp_path)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "no container with name" in error[0]
    assert not (tmp_path / "logs" / "faults.jsonl").exists()
    assert main(["fault", "kill", "7", "--compose", str(compose), "--engine", "podman", "--dir", str(tmp_path)]) == 1
    assert "has no node 7" in capsys.readouterr().err

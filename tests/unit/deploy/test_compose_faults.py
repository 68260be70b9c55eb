"""`minikafka fault ... --compose FILE`: the engine's command per fault and node, and the recorded event."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from minikafka.cli import main
from minikafka.deploy.compose_faults import (
    ComposeFaultError,
    choose_engine,
    compose_nodes,
    container_query,
    engine_command,
)

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
    [("kill", ["kill", "-s", "SIGKILL"]), ("stop", ["stop", "-t", "330"]), ("start", ["start"]), ("pause", ["pause"]),
     ("resume", ["unpause"]), ("reboot", ["restart", "-t", "330"])],
)  # fmt: skip
def test_each_fault_maps_to_the_engines_own_verb_on_the_container(fault: str, verb: list[str]) -> None:
    """The engine's own commands (podman-compose 1.0.3 has no kill, pause or unpause)."""
    assert engine_command("podman", fault, "minikafka_broker-2_1") == ["podman", *verb, "minikafka_broker-2_1"]


def test_the_container_is_found_by_the_labels_both_compose_tools_set(tmp_path: Path) -> None:
    query = container_query("podman", tmp_path / "docker-compose.yml", "broker-2")
    assert query == [
        "podman", "ps", "-a", "--filter", "label=com.docker.compose.service=broker-2",
        "--filter", f"label=com.docker.compose.project.working_dir={tmp_path.resolve()}", "--format", "{{.Names}}",
    ]  # fmt: skip


def test_faults_a_container_cannot_take_are_refused() -> None:
    with pytest.raises(ComposeFaultError, match="hold-alter-partition"):
        engine_command("docker", "hold-alter-partition", "broker-1")


def _installed(*names: str):  # noqa: ANN202
    return lambda name: f"/usr/bin/{name}" if name in names else None


def test_the_engine_is_chosen_from_the_option_the_environment_or_the_first_that_answers() -> None:
    assert choose_engine("podman", {}) == "podman"
    assert choose_engine(None, {"MINIKAFKA_CONTAINER_ENGINE": "podman"}) == "podman"
    assert choose_engine(None, {}, which=_installed("podman"), probe=lambda _engine: None) == "podman"
    assert choose_engine(None, {}, which=_installed("docker", "podman"), probe=lambda _engine: None) == "docker"
    with pytest.raises(ComposeFaultError):
        choose_engine(None, {}, which=lambda _name: None)
    with pytest.raises(ComposeFaultError):
        choose_engine("lxc", {})


def test_a_docker_cli_without_its_daemon_is_passed_over_for_podman() -> None:
    def probe(engine: str) -> str | None:
        return "Cannot connect to the Docker daemon" if engine == "docker" else None

    assert choose_engine(None, {}, which=_installed("docker", "podman"), probe=probe) == "podman"
    with pytest.raises(ComposeFaultError, match="docker does not answer .Cannot connect to the Docker daemon."):
        choose_engine(None, {}, which=_installed("docker"), probe=probe)


def _fake_engine(tmp_path: Path, name: str, script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = tmp_path / "bin" / name
    engine.parent.mkdir(exist_ok=True)
    engine.write_text("#!/bin/sh\n" + script)
    engine.chmod(0o755)
    monkeypatch.setenv("PATH", f"{engine.parent}{os.pathsep}{os.environ['PATH']}")


def test_fault_kill_runs_the_engine_and_records_the_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls"
    # `ps` names the service's container; every call is recorded.
    script = f'echo "$@" >> {calls}\n[ "$1" = ps ] && echo compose-broker-2-1\nexit 0\n'
    _fake_engine(tmp_path, "docker", script, monkeypatch)
    run = tmp_path / "run"
    compose = REPO / "docker-compose.yml"
    assert main(["fault", "kill", "2", "--compose", str(compose), "--engine", "docker", "--dir", str(run)]) == 0
    query, kill = calls.read_text().splitlines()
    assert query.split() == container_query("docker", compose, "broker-2")[1:]
    assert kill.split() == ["kill", "-s", "SIGKILL", "compose-broker-2-1"]
    [event] = [json.loads(line) for line in (run / "logs" / "faults.jsonl").read_text().splitlines()]
    assert (event["event"], event["fault"], event["target"], event["target_id"], event["role"]) == (
        "fault_injected", "kill", "broker-2", 2, "broker",
    )  # fmt: skip
    assert event["engine"] == "docker"


def test_a_failing_engine_is_one_line_with_all_it_said(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys,  # noqa: ANN001
) -> None:
    script = "echo 'Error: unknown flag: --filter' >&2\necho \"See 'podman --help'\" >&2\nexit 125\n"
    _fake_engine(tmp_path, "podman", script, monkeypatch)
    compose = REPO / "docker-compose.yml"
    assert main(["fault", "stop", "1", "--compose", str(compose), "--engine", "podman", "--dir", str(tmp_path)]) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "unknown flag: --filter" in error[0] and "podman --help" in error[0]
    assert not (tmp_path / "logs" / "faults.jsonl").exists()
    assert main(["fault", "kill", "7", "--compose", str(compose), "--engine", "podman", "--dir", str(tmp_path)]) == 1
    assert "has no node 7" in capsys.readouterr().err


def test_no_container_of_the_service_is_said_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    _fake_engine(tmp_path, "podman", "exit 0\n", monkeypatch)
    compose = REPO / "docker-compose.yml"
    assert main(["fault", "kill", "1", "--compose", str(compose), "--engine", "podman", "--dir", str(tmp_path)]) == 1
    assert "podman has no container of service broker-1" in capsys.readouterr().err

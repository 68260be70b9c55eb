"""The `minikafka` command line as a user runs it (a real subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GROUPS = [
    "controller",
    "test-kraft-server",
    "broker",
    "dump-log",
    "topics",
    "produce",
    "consume",
    "quorum",
    "perf",
    "cluster",
    "fault",
    "analyze",
    "chaos",
    "demo",
]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minikafka.cli", *args], capture_output=True, text=True, timeout=60)


def test_help_lists_every_command_group() -> None:
    result = run("--help")
    assert result.returncode == 0
    for group in GROUPS:
        assert f"    {group}" in result.stdout, group


def test_bad_config_fails_with_one_line_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.properties"
    config.write_text(
        "node.id=1\nprocess.roles=broker\nlisteners=PLAINTEXT://127.0.0.1:9092\n"
        "controller.quorum.voters=10@127.0.0.1:9093\nlog.dirs=/tmp/x\nreplica.lag.time.max=10\n"
    )
    result = run("broker", "--config", str(config))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "replica.lag.time.max" in lines[0]
    assert "Traceback" not in result.stderr


def test_bad_flag_is_one_line() -> None:
    result = run("topics", "describe", "--no-such-flag")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--no-such-flag" in result.stderr


def test_test_kraft_server_refuses_an_empty_workload_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "controller.properties"
    config.write_text(
        "node.id=101\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:9093\n"
        f"controller.quorum.voters=101@127.0.0.1:9093\nlog.dirs={tmp_path / 'data'}\n"
    )
    result = run("test-kraft-server", "--config", str(config), "--outstanding", "0")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "--outstanding must be at least 1" in result.stderr
    assert not (tmp_path / "data").exists()  # refused before anything started

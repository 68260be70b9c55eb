"""`minikafka demo` as a user runs it: a clean run prints no traceback (a short one, without the Spark step)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def _kill_left_behind(tmp_path: Path) -> None:
    """A demo that failed half-way may leave its nodes running: stop them (only this test's own run)."""
    for cluster in tmp_path.glob("runs/*/cluster.json"):
        document = json.loads(cluster.read_text())
        for node in document["controllers"] + document["brokers"]:
            if node.get("pid"):
                try:
                    os.kill(node["pid"], signal.SIGKILL)
                except ProcessLookupError:
                    pass


def test_demo_prints_no_traceback(tmp_path: Path) -> None:
    finished = False
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "minikafka.launcher",
                "demo",
                "--records",
                "3000",
                "--no-analysis",
                "--no-scenarios",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,  # its run directory goes under tmp_path/runs/
        )
        finished = result.returncode == 0
    finally:
        if not finished:
            _kill_left_behind(tmp_path)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert "Event loop is closed" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert "lost:               0" in result.stdout

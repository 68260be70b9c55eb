"""README.md's "Using it", typed straight through: the commands of its first `sh` block run one by one, as a user
runs them, in a scratch directory; the run ends in a PASS with no acknowledged record lost or unknown.

The block is parsed, so the test keeps the README honest: one command per line, `minikafka ...` (the `. .venv/...`
activation line is skipped), a trailing `# comment` and comment-only lines ignored, `> FILE` redirecting stdout.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
MINIKAFKA = Path(sys.executable).parent / "minikafka"


def using_it_commands(readme: str) -> list[list[str]]:
    """The argument lists of the `minikafka` commands in the first ```sh block under '## Using it'."""
    section = readme.split("\n## Using it", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "README's 'Using it' has no ```sh block"
    commands = []
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "minikafka":
            commands.append(words[1:])
    return commands


def run_command(words: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """One README line: `minikafka ARGS [> FILE]`, with the installed CLI and FILE relative to the scratch dir."""
    target = None
    if ">" in words:
        at = words.index(">")
        words, target = words[:at], cwd / words[at + 1]
    result = subprocess.run([str(MINIKAFKA), *words], cwd=cwd, capture_output=True, text=True, timeout=400)
    if target is not None:
        target.write_text(result.stdout)
    return result


def kill_leftovers(run_dir: Path) -> None:
    cluster = run_dir / "cluster.json"
    if not cluster.exists():
        return
    data = json.loads(cluster.read_text())
    for node in data["controllers"] + data["brokers"]:
        if node.get("pid"):
            try:
                os.kill(node["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    try:
        yield tmp_path
    finally:
        for run_dir in (tmp_path / "runs").glob("*"):
            subprocess.run([str(MINIKAFKA), "cluster", "down", "--dir", str(run_dir)], capture_output=True, timeout=60)
            kill_leftovers(run_dir)


def test_the_readme_block_is_parsed_into_commands() -> None:
    commands = using_it_commands((REPO / "README.md").read_text())
    assert commands[0][:2] == ["cluster", "up"] and commands[-1][:2] == ["cluster", "down"]
    assert any(c[0] == "analyze" for c in commands) and any(c[0] == "consume" for c in commands)


# The killed broker's HWM checkpoint over its lost log, which this run leaves behind, has a unit test of its own
# (test_event_invariants.py): the run is analysed once, by the README's `analyze` line.
@pytest.mark.timeout(1200)  # a 10,000-record cluster run, a 9 s fence and a Spark analysis on a shared machine
def test_using_it_typed_straight_through_ends_in_a_pass(scratch: Path) -> None:
    results = []
    for words in using_it_commands((REPO / "README.md").read_text()):
        result = run_command(words, scratch)
        results.append((words, result))
        assert "Traceback" not in result.stderr, (words, result.stderr[-3000:])
        if words[0] != "analyze":
            assert result.returncode == 0, (words, result.stderr[-3000:])
    [(analyze_words, analyzed)] = [(w, r) for w, r in results if w[0] == "analyze"]
    assert analyzed.returncode == 0, analyzed.stdout[-3000:]
    run_dir = scratch / analyze_words[1]
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["verdict"] == "pass"
    assert (summary["final_read"]["lost"], summary["final_read"]["unknown"]) == (0, 0)
    assert summary["final_read"]["read"] == summary["final_read"]["acknowledged"] > 0

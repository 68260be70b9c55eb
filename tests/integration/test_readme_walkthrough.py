r"""README.md's "Using it", typed straight through: the commands of its first `sh` block run one by one, as a user
runs them, in a scratch directory; the run ends in a PASS with no acknowledged record lost or unknown.

The block is parsed, so the test keeps the README honest: one command per line, `minikafka ...` (the `. .venv/...`
activation line is skipped), a trailing `# comment` and comment-only lines ignored, `> FILE` redirecting stdout.

The secure cluster's walkthrough is the first `sh` block after the line `<!-- walkthrough: secure cluster` in
README.md or docs/security.md (whichever holds it); each of its commands (lines ending in `\` joined) runs in bash,
with the installed `minikafka` on PATH, kcat included.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
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


SECURE_MARKER = "<!-- walkthrough: secure cluster"
SECURE_SOURCES = ("README.md", "docs/security.md")


def secure_walkthrough_commands() -> list[str]:
    """The shell commands of the sh block after the secure walkthrough's marker, continuation lines joined."""
    holders = [text for name in SECURE_SOURCES if SECURE_MARKER in (text := (REPO / name).read_text())]
    assert len(holders) == 1, f"exactly one of {SECURE_SOURCES} must hold {SECURE_MARKER!r}"
    block = re.search(r"```sh\n(.*?)```", holders[0].split(SECURE_MARKER, 1)[1], re.DOTALL)
    assert block is not None, "the secure walkthrough's marker is followed by no ```sh block"
    commands, pending = [], ""
    for line in block.group(1).splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command and not command.startswith("#"):
            commands.append(command)
    return commands


def test_the_secure_walkthrough_is_parsed_into_commands() -> None:
    commands = secure_walkthrough_commands()
    assert commands[0].startswith("minikafka cluster up") and commands[-1].startswith("minikafka cluster down")
    assert any("-- kcat " in c and "SCRAM" in c for c in commands)


@pytest.mark.timeout(900)
def test_the_secure_cluster_typed_straight_through(scratch: Path) -> None:
    """Every command of the secure walkthrough exits 0 without a traceback; what each shows is checked where it
    says something: the topic's partitions, kcat's metadata and records (PLAIN and SCRAM), the records consumed."""
    commands = secure_walkthrough_commands()
    if any("-- kcat " in c for c in commands) and shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (`make system-tools` installs it as root)")
    env = {**os.environ, "PATH": f"{MINIKAFKA.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    outputs = {}
    for command in commands:
        shell = ["bash", "-c", command]
        result = subprocess.run(shell, cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
        assert "Traceback" not in result.stderr, (command, result.stderr[-3000:])
        assert result.returncode == 0, (command, result.stdout[-2000:], result.stderr[-3000:])
        outputs[command] = result.stdout
    [describe] = [out for c, out in outputs.items() if "topics describe" in c]
    assert describe.count("Partition: ") == 3, describe
    kcat = {c: out for c, out in outputs.items() if "-- kcat " in c}
    [listing] = [out for c, out in kcat.items() if " -L" in c]
    assert 'topic "orders" with 3 partitions' in listing, listing
    [scram] = [out for c, out in kcat.items() if "SCRAM" in c]
    assert len(scram.splitlines()) == 10, scram
    [consumed] = [out for c, out in outputs.items() if c.startswith("minikafka consume")]
    assert len(consumed.splitlines()) == 1000, consumed[-500:]

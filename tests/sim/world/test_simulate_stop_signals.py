"""`minikafka simulate` stopped by SIGTERM or SIGINT while seeds run: it says so in one line, exits 128 + the signal's
number, prints no traceback (neither its own nor a pool worker's) and leaves no scratch directory behind; nor does a
pool ended by a violation while a worker still runs a seed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DEADLINE_S = 120.0


def _wait_for(condition: object, what: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():  # type: ignore[operator]
        assert process.poll() is None, f"simulate ended before {what}: {process.communicate()}"
        assert time.monotonic() < deadline, f"no {what} within {DEADLINE_S}s"
        time.sleep(0.05)


def test_a_sigterm_ends_a_pool_run_cleanly_and_removes_its_scratch(tmp_path: Path) -> None:
    """(SIGINT, e.g. a terminal's Ctrl-C, goes the same way: exit 130.)"""
    jobs, sig = 2, signal.SIGTERM
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = [sys.executable, "-m", "minikafka.launcher", "simulate", "--seeds", "4", "--jobs", str(jobs)]
    process = subprocess.Popen(
        [*command, "--scratch", str(scratch)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: killed whole if the test fails
    )
    try:
        # every worker is inside a seed once it has made its scratch directory, in the run's
        seeds = lambda: list(scratch.glob("minikafka-sim-run-*/minikafka-sim-*"))  # noqa: E731
        _wait_for(lambda: len(seeds()) >= jobs, f"{jobs} seed(s) under way", process)
        process.send_signal(sig)
        out, err = process.communicate(timeout=DEADLINE_S)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 128 + sig, (process.returncode, err)
    assert err == f"minikafka simulate: stopped by {sig.name}; the seeds under way were not finished\n", err
    assert "Traceback" not in out
    assert list(scratch.iterdir()) == []


def test_a_violation_ends_the_pool_without_a_workers_traceback_or_scratch(tmp_path: Path) -> None:
    """Seed 1 breaks at its first commit (the planted bug) while the other worker runs seed 2 or 3: the parent ends
    the pool."""
    command = [
        sys.executable,
        "-m",
        "minikafka.launcher",
        "simulate",
        "--seeds",
        "2",
        "--jobs",
        "2",
        "--faults",
        "kill",
    ]
    command += ["--duration-ms", "2000", "--planted-bug", "commit-stored-one-ahead", "--group-consumers", "1"]
    done = subprocess.run([*command, "--scratch", str(tmp_path)], capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 1 and "broke CommittedOffsetWithinLog" in done.stdout, (done.stdout, done.stderr)
    assert done.stderr == "", done.stderr
    assert list(tmp_path.iterdir()) == []

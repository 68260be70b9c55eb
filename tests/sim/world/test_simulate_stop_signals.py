"""`minikafka simulate` stopped by SIGTERM or SIGINT while seeds run: it says so in one line, exits 128 + the signal's
number, prints no traceback (neither its own nor a pool worker's) and leaves no scratch directory behind."""

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
        # every worker is inside a seed once it has made its scratch directory
        _wait_for(lambda: len(list(scratch.iterdir())) >= jobs, f"{jobs} seed(s) under way", process)
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

"""The server end of a two-process baseline: a benchmark script started again as `python SCRIPT serve ...`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def serving(script: str, *args: str) -> Iterator[None]:
    """Run `script serve ARGS` as an exec'd child (no fork in a process that may hold gRPC's threads) until the
    block ends; it enters once the child printed "ready"."""
    server = subprocess.Popen([sys.executable, script, "serve", *args], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        if server.stdout.readline().strip() != "ready":
            raise RuntimeError(f"{script} serve {' '.join(args)} did not start")
        yield
    finally:
        server.kill()
        server.wait()

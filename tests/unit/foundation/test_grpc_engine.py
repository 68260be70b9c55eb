"""gRPC's I/O engine is chosen before grpc is imported: by `import minikafka`, unless the environment chose."""

from __future__ import annotations

import os
import subprocess
import sys

from common.grpc_engine import CLASSIC_IO_EXPERIMENTS, use_classic_io

PROBE = "import sys, os, minikafka; print('grpc' in sys.modules, os.environ.get('GRPC_EXPERIMENTS'))"


def test_classic_io_is_chosen_unless_the_environment_chose() -> None:
    environ: dict[str, str] = {}
    use_classic_io(environ)
    assert environ == {"GRPC_EXPERIMENTS": CLASSIC_IO_EXPERIMENTS}
    chosen = {"GRPC_EXPERIMENTS": ""}  # empty: gRPC's defaults, as a user may ask
    use_classic_io(chosen)
    assert chosen == {"GRPC_EXPERIMENTS": ""}


def run_probe(environ: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE], env=environ, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_minikafka_sets_it_before_grpc_is_loaded() -> None:
    """grpc reads GRPC_EXPERIMENTS once, on import: the entry point must set it without importing grpc itself."""
    environ = {key: value for key, value in os.environ.items() if key != "GRPC_EXPERIMENTS"}
    assert run_probe(environ) == f"False {CLASSIC_IO_EXPERIMENTS}"
    assert run_probe({**environ, "GRPC_EXPERIMENTS": "-event_engine_client"}) == "False -event_engine_client"

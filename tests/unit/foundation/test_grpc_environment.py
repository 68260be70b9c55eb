"""gRPC core's environment is set before grpc is imported: by `import minikafka`, unless the environment chose."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from minikafka.common.grpc_environment import GRPC_ENVIRONMENT, configure_grpc_environment

PROBE = (
    "import json, os, sys, minikafka; "
    "print(json.dumps(['grpc' in sys.modules, {k: os.environ.get(k) for k in sorted(sys.argv[1:])}]))"
)


def test_each_setting_applies_unless_the_environment_chose() -> None:
    environ: dict[str, str] = {}
    configure_grpc_environment(environ)
    assert environ == GRPC_ENVIRONMENT
    chosen = {"GRPC_EXPERIMENTS": ""}  # empty: gRPC's default engine, as a user may ask
    configure_grpc_environment(chosen)
    assert chosen == {**GRPC_ENVIRONMENT, "GRPC_EXPERIMENTS": ""}


def run_probe(environ: dict[str, str]) -> list[object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *GRPC_ENVIRONMENT], env=environ, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_importing_minikafka_sets_it_before_grpc_is_loaded() -> None:
    """grpc reads these once, on import: the entry point must set them without importing grpc itself."""
    clean = {key: value for key, value in os.environ.items() if key not in GRPC_ENVIRONMENT}
    assert run_probe(clean) == [False, GRPC_ENVIRONMENT]
    chosen = run_probe({**clean, "GRPC_EXPERIMENTS": "-event_engine_client"})
    assert chosen == [False, {**GRPC_ENVIRONMENT, "GRPC_EXPERIMENTS": "-event_engine_client"}]

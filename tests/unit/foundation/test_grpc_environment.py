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


def test_grpc_core_prints_its_errors_but_not_its_info_lines() -> None:
    """An INFO line of gRPC core (here its `api` trace, as "Got goaway" is one) stays out of a minikafka process's
    stderr, and of its children's, which inherit the variable; an error line (an unknown experiment) still shows."""
    clean = {key: value for key, value in os.environ.items() if key not in GRPC_ENVIRONMENT}
    script = "import minikafka, grpc; grpc.insecure_channel('127.0.0.1:1').close()"
    for environ, shown in (({"GRPC_TRACE": "api"}, False), ({"GRPC_VERBOSITY": "INFO", "GRPC_TRACE": "api"}, True)):
        done = subprocess.run([sys.executable, "-c", script], env={**clean, **environ}, capture_output=True, text=True)
        assert ("grpc_init" in done.stderr) == shown, done.stderr[-2000:]
    unknown = {**clean, "GRPC_EXPERIMENTS": "no_such_experiment"}
    done = subprocess.run([sys.executable, "-c", script], env=unknown, capture_output=True, text=True)
    assert "Unknown experiment: no_such_experiment" in done.stderr

"""Faults against a docker-compose cluster (`minikafka fault ... --compose FILE`), through the container engine's
CLI (docker or podman), recorded as the local cluster's faults are: a `fault_injected` line in RUN/logs/faults.jsonl.

Services are named by role and node id (`controller-101`, `broker-1`), as in the repository's docker-compose.yml.
A fault goes to the service's container through the engine itself (`docker kill`, `podman pause`), found by the
labels both compose tools put on it (service and project directory): so it needs no particular compose tool, and
works with podman-compose 1.0.3, which has no kill, pause or unpause, as with `docker compose`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from minikafka.common.event_log import render_json_line, utc_timestamp

# docker-compose.yml's stop_grace_period: a stop or reboot waits as `compose stop` would, as long as a broker's
# controlled shutdown may take (graceful_stop.BROKER_STOP_TIMEOUT_S).
STOP_GRACE_S = 330
# The engine's verb for each fault a container can take; a reboot is a restart (the data volume stays).
ENGINE_VERBS: Mapping[str, tuple[str, ...]] = {
    "kill": ("kill", "-s", "SIGKILL"),
    "stop": ("stop", "-t", str(STOP_GRACE_S)),
    "start": ("start",),
    "pause": ("pause",),
    "resume": ("unpause",),
    "reboot": ("restart", "-t", str(STOP_GRACE_S)),
}
ENGINES = ("docker", "podman")
SERVICE_LABEL = "com.docker.compose.service"
WORKING_DIR_LABEL = "com.docker.compose.project.working_dir"  # the compose file's directory, as a real path
_SERVICE = re.compile(r"^  (controller|broker)-(\d+):\s*$", re.MULTILINE)
_ENGINE_TIMEOUT_S = 120
_PROBE_TIMEOUT_S = 20
_MESSAGE_CHARS = 600


class ComposeFaultError(Exception):
    """A fault that cannot be injected into the compose cluster; the message is one line."""


@dataclass(frozen=True)
class ComposeNode:
    role: str
    node_id: int

    @property
    def service(self) -> str:
        return f"{self.role}-{self.node_id}"


def compose_nodes(compose_text: str) -> dict[int, ComposeNode]:
    """The minikafka services of a compose file, by node id."""
    return {int(m.group(2)): ComposeNode(m.group(1), int(m.group(2))) for m in _SERVICE.finditer(compose_text)}


def engine_answers(engine: str) -> str | None:
    """None when `engine info` works (a docker CLI needs its daemon), else the engine's own words on why not."""
    try:
        result = subprocess.run([engine, "info"], capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return None if result.returncode == 0 else engine_message(result.stderr)


def choose_engine(
    requested: str | None,
    environ: Mapping[str, str],
    which: Callable[[str], str | None] = shutil.which,
    probe: Callable[[str], str | None] = engine_answers,
) -> str:
    """`--engine`, else MINIKAFKA_CONTAINER_ENGINE, else the first of docker and podman that is installed and
    answers (a docker CLI whose daemon is not running is passed over)."""
    engine = requested or environ.get("MINIKAFKA_CONTAINER_ENGINE")
    if engine:
        if engine not in ENGINES:
            raise ComposeFaultError(f"unknown container engine {engine!r}: use {' or '.join(ENGINES)}")
        return engine
    silent: list[str] = []
    for candidate in ENGINES:
        if not which(candidate):
            continue
        problem = probe(candidate)
        if problem is None:
            return candidate
        silent.append(f"{candidate} does not answer ({problem})")
    if silent:
        raise ComposeFaultError("; ".join(silent) + ": start its daemon, or choose an engine with --engine")
    raise ComposeFaultError("neither docker nor podman is on PATH: a compose cluster needs one of them")


def engine_message(stderr: str) -> str:
    """An engine's error output as one line: all of it (the last line alone is often just 'See --help')."""
    text = " ".join(line.strip() for line in stderr.splitlines() if line.strip()) or "no message"
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 3] + "..."


def container_query(engine: str, compose_file: Path, service: str) -> list[str]:
    """E.g. `docker ps -a --filter label=com.docker.compose.service=broker-1 --filter label=...working_dir=DIR`."""
    directory = compose_file.resolve().parent
    return [
        engine,
        "ps",
        "-a",
        "--filter",
        f"label={SERVICE_LABEL}={service}",
        "--filter",
        f"label={WORKING_DIR_LABEL}={directory}",
        "--format",
        "{{.Names}}",
    ]


def engine_command(engine: str, fault: str, container: str) -> list[str]:
    """E.g. `docker kill -s SIGKILL minikafka-broker-1-1`."""
    verb = ENGINE_VERBS.get(fault)
    if verb is None:
        supported = ", ".join(ENGINE_VERBS)
        raise ComposeFaultError(f"'{fault}' is not available against a compose cluster (available: {supported})")
    return [engine, *verb, container]


def _run(command: list[str]) -> str:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=_ENGINE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ComposeFaultError(f"{' '.join(command)}: {error}") from None
    if result.returncode != 0:
        raise ComposeFaultError(f"{' '.join(command)} failed ({result.returncode}): {engine_message(result.stderr)}")
    return result.stdout


def find_container(engine: str, compose_file: Path, service: str) -> str:
    """The name of the service's container in the project of `compose_file`'s directory."""
    names = _run(container_query(engine, compose_file, service)).split()
    if not names:
        raise ComposeFaultError(
            f"{engine} has no container of service {service} from {compose_file.resolve().parent} "
            "(is the cluster up, started from that compose file?)"
        )
    return names[0]


def fault_line(fault: str, node: ComposeNode, engine: str) -> str:
    """The `fault_injected` event, in the shape the local cluster's faults have (engine and service for a pid)."""
    return render_json_line(
        {
            "ts": utc_timestamp(),
            "node": "fault-injector",
            "level": "info",
            "event": "fault_injected",
            "fault": fault,
            "target": node.service,
            "target_id": node.node_id,
            "role": node.role,
            "engine": engine,
            "service": node.service,
        }
    )


def inject(compose_file: Path, engine: str, fault: str, node_id: int, run_dir: Path) -> ComposeNode:
    """Run the engine's command for `fault` on node `node_id`, then record it in run_dir/logs/faults.jsonl."""
    try:
        nodes = compose_nodes(compose_file.read_text(encoding="utf-8"))
    except OSError as error:
        raise ComposeFaultError(f"cannot read {compose_file}: {error.strerror}") from None
    node = nodes.get(node_id)
    if node is None:
        raise ComposeFaultError(f"{compose_file} has no node {node_id} (nodes: {', '.join(map(str, sorted(nodes)))})")
    command = engine_command(engine, fault, node.service)  # an unknown fault fails before the engine is asked
    command[-1] = find_container(engine, compose_file, node.service)
    _run(command)
    path = run_dir / "logs" / "faults.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as stream:
        stream.write(fault_line(fault, node, engine) + "\n")
    return node

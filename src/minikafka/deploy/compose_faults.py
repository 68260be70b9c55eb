"""Faults against a docker-compose cluster (`minikafka fault ... --compose FILE`), through the container engine's
CLI (docker or podman), recorded as the local cluster's faults are: a `fault_injected` line in RUN/logs/faults.jsonl.

Services are named by role and node id (`controller-101`, `broker-1`), as in the repository's docker-compose.yml.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from minikafka.common.event_log import render_json_line, utc_timestamp

# The engine's verb for each fault a container can take; a reboot is a restart (the data volume stays).
ENGINE_VERBS: Mapping[str, tuple[str, ...]] = {
    "kill": ("kill", "-s", "SIGKILL"),
    "stop": ("stop",),
    "start": ("start",),
    "pause": ("pause",),
    "resume": ("unpause",),
    "reboot": ("restart",),
}
ENGINES = ("docker", "podman")
_SERVICE = re.compile(r"^  (controller|broker)-(\d+):\s*$", re.MULTILINE)


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


def choose_engine(
    requested: str | None, environ: Mapping[str, str], which: Callable[[str], str | None] = shutil.which
) -> str:
    """`--engine`, else MINIKAFKA_CONTAINER_ENGINE, else the first of docker and podman found on PATH."""
    engine = requested or environ.get("MINIKAFKA_CONTAINER_ENGINE")
    if engine:
        if engine not in ENGINES:
            raise ComposeFaultError(f"unknown container engine {engine!r}: use {' or '.join(ENGINES)}")
        return engine
    for candidate in ENGINES:
        if which(candidate):
            return candidate
    raise ComposeFaultError("neither docker nor podman is on PATH: a compose cluster needs one of them")


def engine_command(engine: str, compose_file: Path, fault: str, service: str) -> list[str]:
    """E.g. `docker compose -f docker-compose.yml kill -s SIGKILL broker-1`."""
    verb = ENGINE_VERBS.get(fault)
    if verb is None:
        supported = ", ".join(ENGINE_VERBS)
        raise ComposeFaultError(f"'{fault}' is not available against a compose cluster (available: {supported})")
    return [engine, "compose", "-f", str(compose_file), *verb, service]


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
    command = engine_command(engine, compose_file, fault, node.service)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ComposeFaultError(f"{' '.join(command)}: {error}") from None
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise ComposeFaultError(f"{' '.join(command)} failed ({result.returncode}): {last}")
    path = run_dir / "logs" / "faults.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as stream:
        stream.write(fault_line(fault, node, engine) + "\n")
    return node

"""The config keys every minikafka process has (controllers and brokers alike)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from minikafka.common.config import ConfigError, at_least, config_key, one_of, subset_of
from minikafka.common.endpoints import Listener, parse_listeners, parse_voters


def _listeners_ok(text: str) -> str | None:
    try:
        parse_listeners(text)
    except ValueError as error:
        return str(error)
    return None


def _voters_ok(text: str) -> str | None:
    try:
        parse_voters(text)
    except ValueError as error:
        return str(error)
    return None


@dataclass(frozen=True)
class NodeConfig:
    node_id: int = config_key(
        "node.id", doc="The id of this node, unique across controllers and brokers.", validator=at_least(0)
    )
    process_roles: tuple[str, ...] = config_key(
        "process.roles",
        doc="The roles of this process: broker or controller.",
        validator=subset_of("broker", "controller"),
    )
    listeners: str = config_key(
        "listeners",
        doc="Where this node's gRPC server listens, e.g. PLAINTEXT://127.0.0.1:9092.",
        validator=_listeners_ok,
    )
    controller_quorum_voters: str = config_key(
        "controller.quorum.voters", doc="The controller quorum: id@host:port,...", validator=_voters_ok
    )
    log_dirs: str = config_key("log.dirs", doc="The directory holding this node's data (metadata and partition logs).")
    advertised_listeners: str = config_key(
        "advertised.listeners",
        "",
        "The addresses other nodes and clients use to reach this node, by listener name; empty: listeners.",
        lambda text: _listeners_ok(text) if text else None,
    )
    cluster_id: str = config_key("cluster.id", "minikafka", "The cluster id every request carries.")
    log_level: str = config_key(
        "log.level", "info", "The lowest structured-log level written.", one_of("debug", "info", "warning", "error")
    )
    event_log_dir: str = config_key(
        "minikafka.event.log.dir", "", "Where the JSON-lines event log <node>.jsonl goes; empty: <log.dirs>/../logs."
    )
    node_name: str = config_key(
        "minikafka.node.name", "", "The node label in logs; empty: controller-<id> or broker-<id>."
    )

    role = "node"

    def validate(self) -> None:
        if self.role not in self.process_roles:
            raise ConfigError(
                f"invalid value '{','.join(self.process_roles)}' for 'process.roles': this command runs a {self.role}",
                "process.roles",
            )
        bound = {listener.name for listener in self.bound_listeners}
        unknown = sorted({listener.name for listener in self.advertised} - bound)
        if unknown:
            raise ConfigError(
                f"invalid value '{self.advertised_listeners}' for 'advertised.listeners': listener "
                f"{unknown[0]} is not in listeners",
                "advertised.listeners",
            )
        if len(self.process_roles) != 1:
            raise ConfigError(
                "invalid value for 'process.roles': combined mode (broker,controller) is not "
                "supported; run one process per role",
                "process.roles",
            )

    @property
    def listener(self) -> Listener:
        """The first listener: the one inter-node traffic uses unless a role chooses otherwise."""
        return parse_listeners(self.listeners)[0]

    @property
    def bound_listeners(self) -> tuple[Listener, ...]:
        return parse_listeners(self.listeners)

    @property
    def advertised(self) -> tuple[Listener, ...]:
        """What this node tells others, per listener name (defaults to where it listens)."""
        return parse_listeners(self.advertised_listeners) if self.advertised_listeners else self.bound_listeners

    @property
    def voters(self) -> dict[int, tuple[str, int]]:
        return parse_voters(self.controller_quorum_voters)

    @property
    def data_dir(self) -> Path:
        return Path(self.log_dirs.split(",")[0])

    @property
    def label(self) -> str:
        return self.node_name or f"{self.role}-{self.node_id}"

    @property
    def events_dir(self) -> Path:
        return Path(self.event_log_dir) if self.event_log_dir else self.data_dir.parent / "logs"

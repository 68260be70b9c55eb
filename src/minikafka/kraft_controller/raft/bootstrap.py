"""The controller quorum's bootstrap, written when a controller's metadata log directory is formatted (Kafka's
bootstrap checkpoint with its KRaftVersionRecord and VotersRecord).

kraft.version 0 (no file): a static voter set of ids, `controller.quorum.voters`; a voter is named by its id
alone. kraft.version 1 (KIP-853): each voter is named by id and directory id. An initial controller is formatted
with the voter set; a controller formatted to join later (or again, after its disk was lost) is formatted without
one, and stays an observer: it fetches, and never votes, until the voter set names its directory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.raft.file_log import METADATA_PARTITION_DIR
from minikafka.storage.checkpoint import write_atomically
from minikafka.storage.meta_properties import MetaProperties, new_directory_id, write_meta_properties

BOOTSTRAP_FILE = "bootstrap-voters.json"


@dataclass(frozen=True)
class QuorumBootstrap:
    kraft_version: int
    voters: dict[int, str] | None  # id -> directory id; None: formatted without the voter set (to join)
    endpoints: dict[int, str] = field(default_factory=dict)  # id -> host:port, as formatted (if given)


def bootstrap_path(log_dir: Path) -> Path:
    return log_dir / METADATA_PARTITION_DIR / BOOTSTRAP_FILE


def read_bootstrap(log_dir: Path) -> QuorumBootstrap:
    path = bootstrap_path(log_dir)
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        return QuorumBootstrap(0, None)
    except json.JSONDecodeError as error:
        raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"corrupt {path}: {error}") from None
    voters = document.get("voters")
    parsed = None if voters is None else {int(v["id"]): str(v["directory_id"]) for v in voters}
    endpoints = {int(v["id"]): str(v["endpoint"]) for v in voters or () if v.get("endpoint")}
    return QuorumBootstrap(int(document["kraft_version"]), parsed, endpoints)


def format_controller(
    log_dir: Path,
    cluster_id: str,
    node_id: int,
    directory_id: str,
    initial_voters: Mapping[int, str] | None,
    endpoints: Mapping[int, str] | None = None,
) -> MetaProperties:
    """Format a controller's directory for kraft.version 1: its identity, and the initial voter set (None: none,
    the controller joins as an observer) with the voters' endpoints where given."""
    meta = MetaProperties(cluster_id, node_id, directory_id)
    write_meta_properties(log_dir, meta)
    voters = None
    if initial_voters is not None:
        known = endpoints or {}
        voters = [
            {"id": i, "directory_id": d} | ({"endpoint": known[i]} if known.get(i) else {})
            for i, d in sorted(initial_voters.items())
        ]
    path = bootstrap_path(log_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps({"kraft_version": 1, "voters": voters}) + "\n")
    return meta


def format_initial_controllers(log_dirs: Mapping[int, Path], cluster_id: str) -> dict[int, str]:
    """`kafka-storage format --initial-controllers`: every controller's directory gets its id and the voter set
    naming them all; the voter set (id -> directory id)."""
    voters = {node_id: new_directory_id() for node_id in log_dirs}
    for node_id, log_dir in log_dirs.items():
        format_controller(log_dir, cluster_id, node_id, voters[node_id], voters)
    return voters

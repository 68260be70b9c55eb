"""A log directory's identity file, Kafka's `meta.properties` (version 1): the cluster, the node, and the
directory's own id (KIP-858/KIP-853), made once when the directory is formatted and never changed after. A
directory that lost its disk is formatted again and gets a new id: that is how the controller quorum tells a
wiped controller from the voter it replaces."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from minikafka.common.clock import new_random
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.storage.checkpoint import write_atomically

META_PROPERTIES = "meta.properties"
VERSION = 1


@dataclass(frozen=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: str
    version: int = VERSION

    def text(self) -> str:
        """Java properties, in the keys Kafka writes for version 1."""
        return (
            "#\n"
            f"cluster.id={self.cluster_id}\n"
            f"directory.id={self.directory_id}\n"
            f"node.id={self.node_id}\n"
            f"version={self.version}\n"
        )


def new_directory_id() -> str:
    """A random id as Kafka prints a Uuid: 16 bytes, URL-safe base64 without padding (22 characters). Drawn from
    the shell's random source, so a simulated loop's seed replays it."""
    rng = new_random()
    while True:
        raw = rng.getrandbits(128).to_bytes(16, "big")
        # Kafka reserves the ids whose first 8 bytes are zero (the unassigned, lost and migrating directories).
        if raw[:8] != bytes(8):
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_meta_properties(log_dir: Path) -> MetaProperties | None:
    """The directory's identity, or None when it was never formatted."""
    path = log_dir / META_PROPERTIES
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    values = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    try:
        return MetaProperties(
            values["cluster.id"], int(values["node.id"]), values["directory.id"], int(values["version"])
        )
    except (KeyError, ValueError) as error:
        raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"malformed {path}: {error!r}") from None


def write_meta_properties(log_dir: Path, meta: MetaProperties) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    write_atomically(log_dir / META_PROPERTIES, meta.text())


def ensure_meta_properties(log_dir: Path, cluster_id: str, node_id: int) -> tuple[MetaProperties, bool]:
    """The directory's identity, formatting it with a new directory id when it has none; (identity, formatted
    now). A directory formatted for another cluster or node is refused, as Kafka refuses to start on it."""
    meta = read_meta_properties(log_dir)
    if meta is None:
        meta = MetaProperties(cluster_id, node_id, new_directory_id())
        write_meta_properties(log_dir, meta)
        return meta, True
    if meta.cluster_id != cluster_id:
        raise KafkaError(
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            f"{log_dir / META_PROPERTIES} has cluster.id {meta.cluster_id}, but this node's is {cluster_id}",
        )
    if meta.node_id != node_id:
        raise KafkaError(
            ErrorCode.KAFKA_STORAGE_ERROR,
            f"{log_dir / META_PROPERTIES} has node.id {meta.node_id}, but this node's is {node_id}",
        )
    return meta, False

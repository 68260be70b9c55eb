"""A controller's directory identity (meta.properties) and the voter set it starts from (KIP-853's bootstrap)."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.common.config import load_config
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.process import quorum_identity
from minikafka.kraft_controller.raft.bootstrap import format_controller, format_initial_controllers, read_bootstrap
from minikafka.storage.meta_properties import (
    META_PROPERTIES,
    ensure_meta_properties,
    new_directory_id,
    read_meta_properties,
)


def config(node_id: int, log_dir: Path, check: bool = True) -> ControllerConfig:
    return load_config(
        ControllerConfig,
        {
            "node.id": str(node_id),
            "process.roles": "controller",
            "listeners": "CONTROLLER://127.0.0.1:1",
            "controller.quorum.voters": "1@127.0.0.1:1,2@127.0.0.1:2,3@127.0.0.1:3",
            "log.dirs": str(log_dir),
            "minikafka.raft.directory.id.check": str(check).lower(),
        },
    )


def test_meta_properties_are_kafkas_version_1_and_made_once(tmp_path: Path) -> None:
    meta, formatted = ensure_meta_properties(tmp_path, "cluster-a", 2)
    assert formatted and len(meta.directory_id) == 22
    text = (tmp_path / META_PROPERTIES).read_text()
    assert {"cluster.id=cluster-a", f"directory.id={meta.directory_id}", "node.id=2", "version=1"} <= set(
        text.splitlines()
    )
    assert ensure_meta_properties(tmp_path, "cluster-a", 2) == (meta, False)
    assert read_meta_properties(tmp_path) == meta
    assert new_directory_id() != new_directory_id()


def test_a_directory_of_another_cluster_or_node_is_refused(tmp_path: Path) -> None:
    ensure_meta_properties(tmp_path, "cluster-a", 2)
    with pytest.raises(KafkaError) as error:
        ensure_meta_properties(tmp_path, "cluster-b", 2)
    assert error.value.code == ErrorCode.INCONSISTENT_CLUSTER_ID
    with pytest.raises(KafkaError, match="node.id 2"):
        ensure_meta_properties(tmp_path, "cluster-a", 3)


def test_initial_controllers_start_as_voters_named_by_directory(tmp_path: Path) -> None:
    dirs = {i: tmp_path / f"c{i}" for i in (1, 2, 3)}
    voters = format_initial_controllers(dirs, "minikafka")
    identity = quorum_identity(config(2, dirs[2]), dirs[2])
    assert identity.voter_directories == voters and not identity.observer_only
    assert identity.directory_id == voters[2]
    assert read_bootstrap(dirs[1]).kraft_version == 1


def test_a_controller_formatted_without_the_voter_set_is_an_observer(tmp_path: Path) -> None:
    format_controller(tmp_path, "minikafka", 2, new_directory_id(), None)
    assert quorum_identity(config(2, tmp_path), tmp_path).observer_only
    # With the check off (voters by id only, as before KIP-853) it votes as the voter of its id.
    unchecked = quorum_identity(config(2, tmp_path, check=False), tmp_path)
    assert unchecked.voter_directories is None and not unchecked.observer_only


def test_an_unformatted_directory_is_a_static_quorum(tmp_path: Path) -> None:
    identity = quorum_identity(config(1, tmp_path), tmp_path)
    assert identity.voter_directories is None and not identity.observer_only
    assert read_meta_properties(tmp_path) is not None  # formatted now, with a directory id

"""`minikafka controller-format` (Kafka's `kafka-storage format` for a controller): --standalone,
--initial-controllers and --no-initial-controllers, and the quorum a controller then starts from."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.cli import main
from minikafka.common.config import load_config
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.process import quorum_identity
from minikafka.kraft_controller.raft.bootstrap import read_bootstrap
from minikafka.storage.meta_properties import read_meta_properties

DIRECTORY_101 = "J8aAPcfLQt2bqs1JT_rMgQ"


def write_config(tmp_path: Path, node_id: int, extra: str = "") -> Path:
    path = tmp_path / f"controller-{node_id}.properties"
    path.write_text(
        f"node.id={node_id}\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.1.{node_id - 100}:9093\n"
        f"controller.quorum.bootstrap.servers=127.0.1.1:9093\nlog.dirs={tmp_path / str(node_id)}\n{extra}"
    )
    return path


def loaded(path: Path) -> ControllerConfig:
    properties = dict(line.split("=", 1) for line in path.read_text().splitlines() if line)
    return load_config(ControllerConfig, properties)


def test_standalone_is_a_quorum_of_this_controller_at_its_endpoint(tmp_path: Path) -> None:
    path = write_config(tmp_path, 101)
    assert main(["controller-format", "--config", str(path), "--standalone"]) == 0
    meta = read_meta_properties(tmp_path / "101")
    assert meta is not None and meta.node_id == 101
    bootstrap = read_bootstrap(tmp_path / "101")
    assert bootstrap.kraft_version == 1 and bootstrap.voters == {101: meta.directory_id}
    assert bootstrap.endpoints == {101: "127.0.1.1:9093"}
    identity = quorum_identity(loaded(path), tmp_path / "101")
    assert identity.voter_directories == {101: meta.directory_id} and not identity.observer_only


def test_initial_controllers_name_each_voter_its_directory_and_endpoint(tmp_path: Path) -> None:
    path = write_config(tmp_path, 102)
    voters = f"101@127.0.1.1:9093:{DIRECTORY_101},102@127.0.1.2:9093:AAAAAAAAAAEAAAAAAAAAAg"
    assert main(["controller-format", "--config", str(path), "--initial-controllers", voters]) == 0
    bootstrap = read_bootstrap(tmp_path / "102")
    assert bootstrap.voters == {101: DIRECTORY_101, 102: "AAAAAAAAAAEAAAAAAAAAAg"}
    assert bootstrap.endpoints == {101: "127.0.1.1:9093", 102: "127.0.1.2:9093"}
    meta = read_meta_properties(tmp_path / "102")
    assert meta is not None and meta.directory_id == "AAAAAAAAAAEAAAAAAAAAAg"


def test_no_initial_controllers_joins_as_an_observer(tmp_path: Path) -> None:
    path = write_config(tmp_path, 104)
    assert main(["controller-format", "--config", str(path), "--no-initial-controllers"]) == 0
    assert read_bootstrap(tmp_path / "104").voters is None
    assert quorum_identity(loaded(path), tmp_path / "104").observer_only


def test_a_formatted_directory_is_refused_and_an_unnamed_controller_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, 101)
    assert main(["controller-format", "--config", str(path), "--standalone"]) == 0
    assert main(["controller-format", "--config", str(path), "--standalone"]) == 1
    assert "already formatted" in capsys.readouterr().err
    assert main(["controller-format", "--config", str(path), "--standalone", "--ignore-formatted"]) == 0
    other = write_config(tmp_path, 103)
    assert main(["controller-format", "--config", str(other), "--initial-controllers", f"101@h:1:{DIRECTORY_101}"]) == 1
    assert "does not name this controller" in capsys.readouterr().err
    assert main(["controller-format", "--config", str(other), "--initial-controllers", "101@h:1"]) == 1
    assert "Traceback" not in capsys.readouterr().err

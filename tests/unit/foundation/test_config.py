from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.common.config import (
    ConfigError,
    describe_keys,
    load_config,
    load_config_file,
    parse_overrides,
    parse_properties,
    to_properties,
)
from minikafka.kraft_controller.config import ControllerConfig

BROKER = {
    "node.id": "1",
    "process.roles": "broker",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.quorum.voters": "10@127.0.0.1:9093,11@127.0.0.1:9094,12@127.0.0.1:9095",
    "log.dirs": "/tmp/run/broker-1/data",
}
CONTROLLER = {
    "node.id": "10",
    "process.roles": "controller",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.quorum.voters": "10@127.0.0.1:9093,11@127.0.0.1:9094,12@127.0.0.1:9095",
    "log.dirs": "/tmp/run/controller-10/data",
}


def test_good_broker_config_has_kafka_defaults_and_typed_values() -> None:
    config = load_config(BrokerConfig, {**BROKER, "log.segment.bytes": "1048576", "log.simulate.page.cache": "true"})
    assert config.node_id == 1
    assert config.log_segment_bytes == 1048576
    assert config.log_simulate_page_cache is True
    assert config.session_timeout_ms == 9000
    assert config.replica_lag_time_max_ms == 30000
    assert config.log_flush_interval_ms is None
    assert config.listener.address == "127.0.0.1:9092"
    assert config.voters[11] == ("127.0.0.1", 9094)
    assert config.label == "broker-1"


def test_good_controller_config() -> None:
    config = load_config(ControllerConfig, CONTROLLER)
    assert config.alter_partition_broker_epoch_check is True
    assert config.alter_partition_partition_epoch_check is True
    assert config.election_timeout_ms == 1000
    assert config.label == "controller-10"


def test_unknown_key_is_named() -> None:
    with pytest.raises(ConfigError) as error:
        load_config(BrokerConfig, {**BROKER, "log.segmnet.bytes": "10"})
    assert error.value.key == "log.segmnet.bytes"
    assert "unknown config key 'log.segmnet.bytes'" in str(error.value)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("log.segment.bytes", "lots", "expected int"),
        ("log.simulate.page.cache", "yes", "expected true or false"),
        ("broker.session.timeout.ms", "0", "must be at least 1"),
        ("listeners", "127.0.0.1:9092", "expected NAME://host:port"),
        ("controller.quorum.voters", "a@b", "expected id@host:port"),
        ("process.roles", "zookeeper", "unknown value(s) zookeeper"),
    ],
)
def test_bad_value_is_named(key: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(BrokerConfig, {**BROKER, key: value})
    assert error.value.key == key
    assert expected in str(error.value)
    assert "\n" not in str(error.value)


def test_missing_required_key() -> None:
    props = dict(BROKER)
    del props["log.dirs"]
    with pytest.raises(ConfigError, match="missing required config key 'log.dirs'"):
        load_config(BrokerConfig, props)


def test_cross_field_heartbeat_must_be_below_session_timeout() -> None:
    with pytest.raises(ConfigError) as error:
        load_config(
            BrokerConfig, {**BROKER, "broker.session.timeout.ms": "1000", "broker.heartbeat.interval.ms": "1000"}
        )
    assert error.value.key == "broker.heartbeat.interval.ms"
    assert "must be less than broker.session.timeout.ms (1000)" in str(error.value)
    with pytest.raises(ConfigError):
        load_config(ControllerConfig, {**CONTROLLER, "broker.heartbeat.interval.ms": "9000"})


def test_role_and_voter_cross_checks() -> None:
    with pytest.raises(ConfigError, match="this command runs a controller"):
        load_config(ControllerConfig, {**CONTROLLER, "process.roles": "broker"})
    with pytest.raises(ConfigError, match="node.id 13 is not a voter"):
        load_config(ControllerConfig, {**CONTROLLER, "node.id": "13"})
    with pytest.raises(ConfigError, match="it is a controller"):
        load_config(BrokerConfig, {**BROKER, "node.id": "10"})


def test_properties_syntax() -> None:
    text = "# comment\n! also comment\n\na=1\nb : two words \nc   3\nd=first \\\n   second\n"
    assert parse_properties(text) == {"a": "1", "b": "two words", "c": "3", "d": "first second"}
    with pytest.raises(ConfigError, match="f:2: malformed line"):
        parse_properties("a=1\nnovalue\n", "f")
    with pytest.raises(ConfigError, match="duplicate key 'a'"):
        parse_properties("a=1\na=2\n", "f")


def test_overrides_win_over_file(tmp_path: Path) -> None:
    path = tmp_path / "broker.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in BROKER.items()))
    config = load_config_file(BrokerConfig, path, parse_overrides(["min.insync.replicas=2"]))
    assert config.min_insync_replicas == 2
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_overrides(["min.insync.replicas"])


def test_round_trip_through_properties() -> None:
    config = load_config(BrokerConfig, {**BROKER, "log.flush.interval.ms": "250"})
    again = load_config(BrokerConfig, parse_properties(to_properties(config)))
    assert again == config


def test_every_key_is_documented() -> None:
    for cls in (BrokerConfig, ControllerConfig):
        rows = describe_keys(cls)
        assert rows
        for row in rows:
            assert row["doc"], row["name"]
            assert row["name"] == row["name"].lower()

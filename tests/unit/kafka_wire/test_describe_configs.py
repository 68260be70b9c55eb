"""DescribeConfigs' entries: every declared broker key with Kafka's value format, source, type and sensitivity;
topic configs falling back to their broker-level synonyms; the request's synonyms and documentation flags."""

from __future__ import annotations

from minikafka.broker.config import BrokerConfig
from minikafka.broker.kafka_wire.api_versions import DESCRIBE_CONFIGS
from minikafka.broker.kafka_wire.config_entries import (
    BOOLEAN,
    DEFAULT_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    GROUP_CONFIG,
    INT,
    LIST,
    LONG,
    PASSWORD,
    SHORT,
    STATIC_BROKER_CONFIG,
    STRING,
    DynamicBrokerValues,
    Synonym,
    broker_entries,
    cluster_default_entries,
    group_entries,
    topic_entries,
)
from minikafka.broker.kafka_wire.config_resources import broker_name_problem
from minikafka.broker.kafka_wire.describe import Include, _entry
from minikafka.broker.kafka_wire.framing import response_class
from minikafka.common.config import config_keys, load_config
from minikafka.common.topic_config import DYNAMIC_BROKER_CONFIGS, TOPIC_CONFIGS, config_problem

BASE = {
    "node.id": "1",
    "process.roles": "broker",
    "listeners": "GRPC://127.0.0.1:9092",
    "controller.quorum.voters": "101@127.0.0.1:9000",
    "log.dirs": "/tmp/broker-1",
}


def _config(**overrides: str) -> BrokerConfig:
    return load_config(BrokerConfig, {**BASE, **{k.replace("_", "."): v for k, v in overrides.items()}})


def _by_name(config: BrokerConfig) -> dict:
    return {entry.name: entry for entry in broker_entries(config)}


def test_every_declared_broker_key_is_listed_read_only_but_the_dynamic_ones() -> None:
    entries = _by_name(_config())
    assert set(entries) == {key.name for _, key in config_keys(BrokerConfig)} | {"broker.id"}
    writable = {name for name, entry in entries.items() if not entry.read_only}
    assert writable == set(DYNAMIC_BROKER_CONFIGS) & set(entries)
    assert {"log.retention.ms", "min.insync.replicas", "message.max.bytes"} <= writable


def test_values_and_sources() -> None:
    entries = _by_name(_config(log_segment_bytes="1048576", message_max_bytes="1048588"))
    assert (entries["log.segment.bytes"].value, entries["log.segment.bytes"].source) == ("1048576", 4)
    # given in the properties, though equal to the default: still the broker's static config
    assert entries["message.max.bytes"].source == STATIC_BROKER_CONFIG
    # Kafka's log.retention.ms has no default: null, derived from log.retention.hours
    assert (entries["log.retention.ms"].value, entries["log.retention.ms"].source) == (None, DEFAULT_CONFIG)
    assert (entries["log.retention.hours"].value, entries["log.retention.hours"].source) == ("168", DEFAULT_CONFIG)
    assert entries["auto.create.topics.enable"].value == "true"
    assert entries["sasl.enabled.mechanisms"].value == "SCRAM-SHA-256,SCRAM-SHA-512"
    assert entries["log.flush.interval.ms"].value is None  # unset, as Kafka's null default
    assert entries["node.id"].value == entries["broker.id"].value == "1"
    assert entries["broker.id"].source == STATIC_BROKER_CONFIG


def test_config_types() -> None:
    entries = _by_name(_config())
    expected = {
        "log.segment.bytes": INT,
        "log.retention.ms": LONG,
        "offsets.topic.replication.factor": SHORT,
        "auto.create.topics.enable": BOOLEAN,
        "listeners": STRING,
        "sasl.enabled.mechanisms": LIST,
        "ssl.key.password": PASSWORD,
    }
    assert {name: entries[name].config_type for name in expected} == expected


def test_secrets_are_sensitive_and_never_returned() -> None:
    entries = _by_name(_config(ssl_key_password="secret", sasl_plain_users="alice:pw"))
    for name in ("ssl.key.password", "sasl.plain.users"):
        entry = entries[name]
        assert entry.sensitive and entry.value is None and entry.source == STATIC_BROKER_CONFIG
        assert all(synonym.value is None for synonym in entry.synonyms)
    assert not entries["ssl.keystore.location"].sensitive


def test_synonyms_list_the_entry_then_its_default() -> None:
    entries = _by_name(_config(log_segment_bytes="1048576"))
    assert entries["log.segment.bytes"].synonyms == (
        Synonym("log.segment.bytes", "1048576", STATIC_BROKER_CONFIG),
        Synonym("log.segment.bytes", "1073741824", DEFAULT_CONFIG),
    )
    assert entries["log.roll.ms"].synonyms == ()  # a null default is not listed
    assert entries["log.roll.hours"].synonyms == (Synonym("log.roll.hours", "168", DEFAULT_CONFIG),)
    assert entries["node.id"].synonyms == (Synonym("node.id", "1", STATIC_BROKER_CONFIG),)  # required: no default


def test_topic_configs_fall_back_to_the_broker_synonym() -> None:
    entries = {e.name: e for e in topic_entries(_config(log_segment_bytes="1048576"), {"retention.ms": "5000"})}
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.read_only) == ("5000", DYNAMIC_TOPIC_CONFIG, False)
    # Kafka's log.retention.ms has no default of its own (log.retention.hours gives it): no DEFAULT_CONFIG synonym
    assert retention.synonyms == (Synonym("retention.ms", "5000", DYNAMIC_TOPIC_CONFIG),)
    assert (entries["segment.bytes"].value, entries["segment.bytes"].source) == ("1048576", STATIC_BROKER_CONFIG)
    assert (entries["cleanup.policy"].value, entries["cleanup.policy"].source) == ("delete", DEFAULT_CONFIG)
    assert entries["flush.ms"].value == str(2**63 - 1)
    assert entries["retention.ms"].config_type == LONG and entries["segment.bytes"].config_type == INT
    assert entries["segment.bytes"].doc and not entries["segment.bytes"].sensitive


def test_retention_and_roll_derive_from_hours_and_minutes_as_kafkas() -> None:
    """log.retention.ms, else log.retention.minutes, else log.retention.hours; a negative value means no limit;
    log.roll.ms else log.roll.hours; a topic's retention.ms shows the derived value, with no synonym, as Kafka's
    dropWhile leaves none when log.retention.ms itself is not set."""
    assert (_config().retention_ms, _config().roll_ms, _config().roll_jitter_ms) == (604800000, 604800000, 0)
    assert _config(log_retention_hours="24").retention_ms == 86400000
    assert _config(log_retention_hours="24", log_retention_minutes="30").retention_ms == 1800000
    assert _config(log_retention_minutes="30", log_retention_ms="5").retention_ms == 5
    assert _config(log_retention_hours="-1").retention_ms == -1
    assert _config(log_roll_hours="2", log_roll_jitter_hours="1").log_config().segment_ms == 7200000
    assert _config(log_roll_jitter_hours="1").log_config().segment_jitter_ms == 3600000
    config = _config(log_retention_hours="24")
    topic = {e.name: e for e in topic_entries(config, {})}
    assert (topic["retention.ms"].value, topic["retention.ms"].source, topic["retention.ms"].synonyms) == (
        "86400000",
        DEFAULT_CONFIG,
        (),
    )
    assert (topic["segment.jitter.ms"].value, topic["segment.index.bytes"].value) == ("0", "10485760")
    assert config.log_config({"retention.ms": "7"}).retention_ms == 7


def test_synonyms_and_documentation_only_when_asked() -> None:
    cls = response_class(DESCRIBE_CONFIGS, 4)
    entry = _by_name(_config(log_segment_bytes="1048576"))["log.segment.bytes"]
    bare = _entry(cls, entry, Include(synonyms=False, documentation=False))
    assert bare.synonyms == () and bare.documentation is None
    assert (bare.value, bare.config_source, bare.config_type, bare.read_only) == ("1048576", 4, INT, False)
    full = _entry(cls, entry, Include(synonyms=True, documentation=True))
    assert [(s.name, s.value, s.source) for s in full.synonyms] == [
        ("log.segment.bytes", "1048576", 4),
        ("log.segment.bytes", "1073741824", 5),
    ]
    assert full.documentation == entry.doc
    assert _entry(response_class(DESCRIBE_CONFIGS, 1), entry, Include(True, True)).synonyms  # v1 has no doc field


def test_broker_resource_names() -> None:
    assert broker_name_problem("", 1) is None and broker_name_problem("1", 1) is None
    assert "expected 1 or empty string" in (broker_name_problem("2", 1) or "")
    assert "must be an integer" in (broker_name_problem("x", 1) or "")


def test_dynamic_broker_values_come_first_in_kafkas_order() -> None:
    dynamic = DynamicBrokerValues(own={"log.retention.ms": "1000"}, cluster={"log.retention.ms": "2000"})
    config = _config(log_retention_ms="3000")
    retention = _by_name_with(config, dynamic)["log.retention.ms"]
    assert (retention.value, retention.source) == ("1000", 2)
    assert [(s.value, s.source) for s in retention.synonyms] == [
        ("1000", 2),
        ("2000", 3),
        ("3000", 4),
    ]
    cluster_only = DynamicBrokerValues(cluster={"log.retention.ms": "2000"})
    topic = {e.name: e for e in topic_entries(config, {}, cluster_only)}["retention.ms"]
    assert (topic.value, topic.source) == ("2000", 3)
    assert [(s.name, s.source) for s in topic.synonyms] == [("log.retention.ms", 3), ("log.retention.ms", 4)]
    [entry] = cluster_default_entries({"min.insync.replicas": "2"})
    assert (entry.name, entry.value, entry.source, entry.config_type) == ("min.insync.replicas", "2", 3, INT)


def _by_name_with(config: BrokerConfig, dynamic: DynamicBrokerValues) -> dict:
    return {entry.name: entry for entry in broker_entries(config, dynamic)}


def test_a_dynamic_value_of_a_key_the_broker_has_no_setting_for_is_listed() -> None:
    dynamic = DynamicBrokerValues(
        own={"sasl.kerberos.min.time.before.relogin": "58000"},
        cluster={"sasl.kerberos.min.time.before.relogin": "60000", "sasl.login.refresh.buffer.seconds": "30"},
    )
    entries = _by_name_with(_config(), dynamic)
    relogin = entries["sasl.kerberos.min.time.before.relogin"]
    assert (relogin.value, relogin.source, relogin.config_type, relogin.read_only) == ("58000", 2, LONG, False)
    assert [(s.value, s.source) for s in relogin.synonyms] == [("58000", 2), ("60000", 3)]
    assert entries["sasl.login.refresh.buffer.seconds"].config_type == SHORT


def test_a_groups_configs_its_own_value_else_the_coordinators_default() -> None:
    entries = {e.name: e for e in group_entries(_config(), {"consumer.heartbeat.interval.ms": "6000"})}
    assert set(entries) == {
        "consumer.heartbeat.interval.ms",
        "consumer.session.timeout.ms",
        "share.heartbeat.interval.ms",
        "share.record.lock.duration.ms",
        "share.session.timeout.ms",
    }
    own, default = entries["consumer.heartbeat.interval.ms"], entries["consumer.session.timeout.ms"]
    assert (own.value, own.source, own.config_type, own.read_only) == ("6000", GROUP_CONFIG, INT, False)
    assert (default.value, default.source) == ("45000", DEFAULT_CONFIG)
    assert {e.name: e.value for e in group_entries(_config(group_consumer_session_timeout_ms="50000"), {})}[
        "consumer.session.timeout.ms"
    ] == "50000"


def test_a_topic_config_at_a_derived_broker_default_lists_no_synonym_as_kafka() -> None:
    """What Kafka answers (kafkajs's describeConfigs spec checks it): retention.ms, segment.ms and flush.ms fall back
    to broker keys Kafka declares without a default, so their synonyms are empty; compression.type's broker key has
    one, listed as DEFAULT_CONFIG."""
    entries = {e.name: e for e in topic_entries(_config(), {})}
    for name in ("retention.ms", "segment.ms", "flush.ms"):
        assert (entries[name].source, entries[name].synonyms) == (DEFAULT_CONFIG, ())
    assert entries["retention.ms"].value == "604800000"
    assert entries["compression.type"].synonyms == (Synonym("compression.type", "producer", DEFAULT_CONFIG),)


def test_tiered_storages_topic_configs_as_a_kafka_broker_without_remote_storage_takes_them() -> None:
    """Kafka 4's topic config list, the tiered storage ones included: remote.storage.enable=true is refused with
    Kafka's message; the local retentions fall back to their broker synonyms (-2: the topic's retention)."""
    refused = config_problem(TOPIC_CONFIGS, "remote.storage.enable", "true")
    assert refused is not None and "Tiered Storage functionality is disabled in the broker" in refused
    assert config_problem(TOPIC_CONFIGS, "remote.storage.enable", "false") is None
    assert "at least -2" in str(config_problem(TOPIC_CONFIGS, "local.retention.ms", "-3"))
    entries = {e.name: e for e in topic_entries(_config(), {"local.retention.bytes": "1000"})}
    remote = entries["remote.storage.enable"]
    assert (remote.value, remote.source, remote.config_type, remote.synonyms) == ("false", DEFAULT_CONFIG, BOOLEAN, ())
    local_ms = entries["local.retention.ms"]
    assert (local_ms.value, [(s.name, s.source) for s in local_ms.synonyms]) == (
        "-2",
        [("log.local.retention.ms", DEFAULT_CONFIG)],
    )
    assert entries["local.retention.bytes"].value == "1000"
    assert {"remote.log.copy.disable", "remote.log.delete.on.disable"} <= set(entries)

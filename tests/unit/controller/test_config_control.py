"""IncrementalAlterConfigs and AlterConfigs in the pure controller: ConfigRecords for topics, one broker and the
cluster default, Kafka's errors, validate_only, and KIP-966's min.insync.replicas rules."""

from __future__ import annotations

from controller_harness import Harness
from test_eligible_leader_replicas import fence, make, state

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.config_control import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResponse,
)
from minikafka.kraft_controller.metadata.records import ConfigRecord, ConfigResourceType

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
SET, DELETE, APPEND, SUBTRACT = AlterConfigOp.SET, AlterConfigOp.DELETE, AlterConfigOp.APPEND, AlterConfigOp.SUBTRACT


def alter(
    harness: Harness,
    resource_type: int,
    name: str,
    *ops: tuple[str, AlterConfigOp, str | None],
    validate_only: bool = False,
    incremental: bool = True,
) -> tuple[ErrorCode, str]:
    configs = tuple(AlterableConfig(key, op, value) for key, op, value in ops)
    request = AlterConfigsRequest((AlterConfigsResource(resource_type, name, configs),), validate_only, incremental)
    response: AlterConfigsResponse = harness.commit(harness.controller.alter_configs(request))
    return response.results[0].error_code, response.results[0].error_message


def with_topic() -> Harness:
    harness = Harness()
    harness.start_broker(1)
    harness.create_topic("t", assignment=[[1]])
    return harness


def test_set_and_delete_topic_configs_are_config_records() -> None:
    harness = with_topic()
    before = len(harness.committed)
    assert alter(harness, TOPIC, "t", ("retention.ms", SET, "1000"), ("segment.bytes", SET, "1024"))[0] == 0
    assert [r for _, r in harness.committed[before:]] == [
        ConfigRecord(TOPIC, "t", "retention.ms", "1000"),
        ConfigRecord(TOPIC, "t", "segment.bytes", "1024"),
    ]
    assert alter(harness, TOPIC, "t", ("retention.ms", DELETE, None))[0] == ErrorCode.NONE
    assert dict(harness.image.topic_configs["t"]) == {"segment.bytes": "1024"}


def test_broker_and_cluster_default_configs() -> None:
    harness = with_topic()
    assert alter(harness, BROKER, "1", ("log.retention.ms", SET, "5000"))[0] == ErrorCode.NONE
    assert alter(harness, BROKER, "", ("log.retention.bytes", SET, "100"))[0] == ErrorCode.NONE
    assert harness.image.dynamic_broker_config("log.retention.ms", 1) == "5000"
    assert harness.image.dynamic_broker_config("log.retention.ms", 2) is None
    assert harness.image.dynamic_broker_config("log.retention.bytes", 2) == "100"


def test_kafkas_errors_and_nothing_written() -> None:
    harness = with_topic()
    before = len(harness.committed)
    code, message = alter(harness, TOPIC, "t", ("no.such.key", SET, "1"))
    assert (code, message) == (ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such.key")
    code, message = alter(harness, TOPIC, "t", ("retention.ms", SET, "soon"))
    assert code == ErrorCode.INVALID_CONFIG and message.startswith("Invalid value soon for configuration retention.ms")
    assert alter(harness, TOPIC, "missing", ("retention.ms", SET, "1"))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert alter(harness, BROKER, "x", ("log.retention.ms", SET, "1"))[0] == ErrorCode.INVALID_REQUEST
    assert alter(harness, BROKER, "1", ("log.retention.ms", SET, "soon"))[0] == ErrorCode.INVALID_CONFIG
    code, message = alter(harness, TOPIC, "t", ("retention.ms", APPEND, "1"))
    assert code == ErrorCode.INVALID_CONFIG and "non-list" in message
    # one bad key refuses the whole resource
    assert alter(harness, TOPIC, "t", ("retention.ms", SET, "1"), ("segment.bytes", SET, "1"))[0] != 0
    assert len(harness.committed) == before


def test_a_broker_config_the_controller_does_not_define_is_stored_as_given() -> None:
    # Kafka's controller checks only a broker resource's name; the broker refuses its own static keys before
    # forwarding, and any other name (a plugin's setting, or a topic config's name as kafkajs's spec sets) is stored.
    harness = with_topic()
    assert alter(harness, BROKER, "1", ("cleanup.policy", SET, "delete"))[0] == ErrorCode.NONE
    assert alter(harness, BROKER, "", ("my.plugin.setting", SET, "x,y"))[0] == ErrorCode.NONE
    # of unknown type, so not a list: Kafka refuses APPEND and SUBTRACT on it
    assert alter(harness, BROKER, "", ("my.plugin.setting", APPEND, "z"))[0] == ErrorCode.INVALID_CONFIG
    assert harness.image.dynamic_broker_config("cleanup.policy", 1) == "delete"
    assert harness.image.dynamic_broker_config("my.plugin.setting", 2) == "x,y"
    assert alter(harness, BROKER, "1", ("cleanup.policy", DELETE, None))[0] == ErrorCode.NONE
    assert harness.image.dynamic_broker_config("cleanup.policy", 1) is None


def test_validate_only_answers_without_records() -> None:
    harness = with_topic()
    before = len(harness.committed)
    assert alter(harness, TOPIC, "t", ("retention.ms", SET, "1000"), validate_only=True)[0] == ErrorCode.NONE
    assert len(harness.committed) == before and harness.image.topic_config("t", "retention.ms") is None


def test_append_and_subtract_on_a_list_config() -> None:
    harness = with_topic()
    assert alter(harness, TOPIC, "t", ("cleanup.policy", APPEND, "delete"))[0] == ErrorCode.NONE
    assert harness.image.topic_config("t", "cleanup.policy") == "delete"
    assert alter(harness, TOPIC, "t", ("cleanup.policy", APPEND, "compact"))[0] == ErrorCode.NONE
    assert harness.image.topic_config("t", "cleanup.policy") == "delete,compact"
    assert alter(harness, TOPIC, "t", ("cleanup.policy", APPEND, "forever"))[0] == ErrorCode.INVALID_CONFIG
    assert alter(harness, TOPIC, "t", ("cleanup.policy", SUBTRACT, "delete,compact"))[0] == ErrorCode.NONE
    assert harness.image.topic_config("t", "cleanup.policy") is None


def test_legacy_alter_configs_replaces_every_dynamic_config_of_the_resource() -> None:
    harness = with_topic()
    alter(harness, TOPIC, "t", ("retention.ms", SET, "1000"), ("segment.bytes", SET, "1024"))
    assert alter(harness, TOPIC, "t", ("retention.bytes", SET, "10"), incremental=False)[0] == ErrorCode.NONE
    assert dict(harness.image.topic_configs["t"]) == {"retention.bytes": "10"}


def test_with_the_elr_min_isr_stays_cluster_wide() -> None:
    harness = with_topic()
    code, message = alter(harness, BROKER, "1", ("min.insync.replicas", SET, "2"))
    assert (code, message) == (
        ErrorCode.INVALID_CONFIG,
        "Broker-level min.insync.replicas cannot be altered while ELR is enabled.",
    )
    code, message = alter(harness, BROKER, "", ("min.insync.replicas", DELETE, None))
    assert (code, message) == (
        ErrorCode.INVALID_CONFIG,
        "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.",
    )
    assert alter(harness, BROKER, "", ("min.insync.replicas", SET, "2"))[0] == ErrorCode.NONE
    assert harness.image.min_insync_replicas("t", 1) == 2
    off = make(eligible_leader_replicas_version=0)
    assert alter(off, BROKER, "1", ("min.insync.replicas", SET, "2"))[0] == ErrorCode.NONE


def test_a_min_isr_change_clears_the_elrs_chosen_under_the_old_value() -> None:
    harness = make()
    for b in (1, 2, 3):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]], **{"min.insync.replicas": "2"})
    fence(harness, 3)
    fence(harness, 3, 2)
    assert state(harness, topic_id)[2] == (2,)
    assert alter(harness, TOPIC, "t", ("min.insync.replicas", SET, "3"))[0] == ErrorCode.NONE
    assert state(harness, topic_id)[2:] == ((), ())
    assert harness.committed[-1][1].reason == "min_isr_config_change"  # type: ignore[union-attr]


def test_the_cluster_wide_unclean_leader_election_enable_applies_to_topics_without_their_own() -> None:
    from minikafka.kraft_controller.control.replication_control import unclean_enabled

    harness = with_topic()
    assert not unclean_enabled(harness.image, "t", False)
    assert alter(harness, BROKER, "", ("unclean.leader.election.enable", SET, "true"))[0] == ErrorCode.NONE
    assert unclean_enabled(harness.image, "t", False)
    assert alter(harness, TOPIC, "t", ("unclean.leader.election.enable", SET, "false"))[0] == ErrorCode.NONE
    assert not unclean_enabled(harness.image, "t", False)


def test_kafkas_sasl_listener_configs_are_taken_for_a_broker_and_the_cluster_default() -> None:
    """Kafka takes them without a listener prefix (librdkafka's test 0081 alters one on a broker): stored, typed."""
    harness = with_topic()
    setting = ("sasl.kerberos.min.time.before.relogin", SET, "58000")
    assert alter(harness, BROKER, "1", setting, incremental=False)[0] == ErrorCode.NONE
    assert harness.image.dynamic_broker_config("sasl.kerberos.min.time.before.relogin", 1) == "58000"
    assert alter(harness, BROKER, "", ("sasl.login.refresh.window.factor", SET, "0.9"))[0] == ErrorCode.NONE
    code, message = alter(harness, BROKER, "1", ("sasl.kerberos.min.time.before.relogin", SET, "soon"))
    assert code == ErrorCode.INVALID_CONFIG and "type LONG" in message
    code, message = alter(harness, BROKER, "1", ("sasl.login.refresh.buffer.seconds", SET, "40000"))
    assert code == ErrorCode.INVALID_CONFIG and "type SHORT" in message
    assert alter(harness, BROKER, "1", ("no.such.broker.key", SET, "1"))[0] == ErrorCode.NONE  # stored as given


GROUP = ConfigResourceType.GROUP


def test_group_configs_are_config_records_checked_as_kafkas_group_config() -> None:
    """librdkafka's 0081 sets and deletes consumer.session.timeout.ms of a group (Kafka 4's group configs)."""
    harness = with_topic()
    assert alter(harness, GROUP, "my-group", ("consumer.session.timeout.ms", SET, "50000"))[0] == ErrorCode.NONE
    assert dict(harness.image.group_configs["my-group"]) == {"consumer.session.timeout.ms": "50000"}
    assert harness.committed[-1][1] == ConfigRecord(GROUP, "my-group", "consumer.session.timeout.ms", "50000")
    snapshot = harness.image.to_records()
    assert ConfigRecord(GROUP, "my-group", "consumer.session.timeout.ms", "50000") in snapshot
    assert alter(harness, GROUP, "my-group", ("consumer.session.timeout.ms", DELETE, None))[0] == ErrorCode.NONE
    assert "my-group" not in harness.image.group_configs


def test_group_configs_refused_as_kafka_refuses_them() -> None:
    harness = with_topic()
    before = len(harness.committed)
    assert alter(harness, GROUP, "g", ("no.such.key", SET, "1")) == (
        ErrorCode.INVALID_CONFIG,
        "Unknown group config name: no.such.key",
    )
    assert alter(harness, GROUP, "g", ("consumer.session.timeout.ms", SET, "1000")) == (
        ErrorCode.INVALID_CONFIG,
        "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
    )
    assert alter(harness, GROUP, "g", ("consumer.heartbeat.interval.ms", SET, "15000"))[0] == ErrorCode.NONE
    assert alter(harness, GROUP, "g", ("consumer.session.timeout.ms", SET, "45000"))[0] == ErrorCode.NONE
    code, message = alter(harness, GROUP, "g", ("consumer.heartbeat.interval.ms", SET, "16000"))
    assert code == ErrorCode.INVALID_CONFIG and "must be less than or equal to" in message
    assert alter(harness, GROUP, "", ("consumer.session.timeout.ms", SET, "50000")) == (
        ErrorCode.INVALID_REQUEST,
        "Default group resources are not allowed.",
    )
    assert len(harness.committed) == before + 2

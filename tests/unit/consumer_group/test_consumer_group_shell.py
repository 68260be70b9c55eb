"""The coordinator's side of KIP-848 groups: a classic group with members refuses consumer-protocol members, an
emptied group is dropped, commits and fetches are checked by member epoch, timers fence with an event, and the
APIs are advertised only when group.coordinator.rebalance.protocols lists consumer."""

from __future__ import annotations

import uuid

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.consumer_group import shell
from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest
from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerGroupConfig, ConsumerGroupState
from minikafka.broker.group.state import Group, GroupState
from minikafka.broker.kafka_wire import api_versions, group_apis
from minikafka.common.config import ConfigError, load_config
from minikafka.common.errors import ErrorCode

CONFIG = ConsumerGroupConfig(session_timeout_ms=45000, heartbeat_interval_ms=5000)
TOPICS = {"t": 4}
TOPIC_IDS = {"t": uuid.UUID(int=7)}


def join(group: ConsumerGroup | None, classic: Group | None = None, member_id: str = "m1") -> shell.ShellStep:
    request = HeartbeatRequest(member_id, 0, 30000, ("t",), None, frozenset())
    return shell.heartbeat(group, classic, "g", request, TOPICS, TOPIC_IDS, CONFIG, 0)


def test_a_classic_group_with_members_refuses_a_consumer_protocol_member_with_group_id_not_found() -> None:
    classic = Group("g", state=GroupState.STABLE)
    step = join(None, classic)
    assert step.response.error == ErrorCode.GROUP_ID_NOT_FOUND
    assert step.group is None


def test_an_empty_classic_group_with_offsets_only_lets_a_consumer_group_take_its_id() -> None:
    step = join(None, Group("g", state=GroupState.EMPTY))
    assert step.response.error == ErrorCode.NONE and step.response.member_epoch == 1
    assert step.group is not None
    names = [event.name for event in step.events]
    assert names == [
        "consumer_group_member_joined",
        "consumer_group_target_assignment",
        "consumer_group_member_assignment",
    ]
    held = step.events[-1].fields
    assert (held["member_epoch"], held["assigned"], held["pending_revocation"]) == (1, ["t-0", "t-1", "t-2", "t-3"], [])


def test_the_last_member_leaving_leaves_the_group_empty_as_kafka_keeps_it() -> None:
    joined = join(None)
    left = shell.heartbeat(joined.group, None, "g", HeartbeatRequest("m1", -1), TOPICS, TOPIC_IDS, CONFIG, 10)
    assert left.response.error == ErrorCode.NONE and left.group is not None
    assert left.group.state == ConsumerGroupState.EMPTY and not left.group.members
    assert left.group.group_epoch > joined.group.group_epoch  # type: ignore[union-attr]
    assert [(e.name, e.fields["reason"]) for e in left.events] == [("consumer_group_member_left", "left")]
    # An admin tool commits to an Empty group; a new member carries on from its epoch.
    assert shell.validate_commit(left.group, "", -1, 9) == ErrorCode.NONE
    rejoined = join(left.group, member_id="m3")
    assert rejoined.group is not None and rejoined.group.group_epoch > left.group.group_epoch


def test_a_silent_member_is_fenced_by_the_tick_with_an_event() -> None:
    group = join(join(None).group, member_id="m2").group
    assert group is not None
    step = shell.tick(group, TOPICS, TOPIC_IDS, CONFIG, CONFIG.session_timeout_ms)
    assert step.group is not None and not step.group.members  # both silent since time 0: Empty
    assert {event.fields["member_id"] for event in step.events} == {"m1", "m2"}
    assert {event.fields["reason"] for event in step.events} == {"session timeout"}


def test_commits_need_the_members_current_epoch() -> None:
    group = join(None).group
    assert group is not None
    assert shell.validate_commit(group, "m1", 1, 9) == ErrorCode.NONE
    assert shell.validate_commit(group, "m1", 0, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert shell.validate_commit(group, "m1", 2, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert shell.validate_commit(group, "gone", 1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert shell.validate_commit(group, "", -1, 9) == ErrorCode.UNKNOWN_MEMBER_ID  # not empty: no admin commit
    assert shell.validate_commit(group, "m1", 1, 8) == ErrorCode.UNSUPPORTED_VERSION


def test_a_transactional_commit_is_checked_by_member_epoch_in_any_version() -> None:
    """TxnOffsetCommit carries the member epoch in generation_id (KIP-447 with KIP-848): an exactly-once consumer of a
    consumer-protocol group commits inside its transactions, and a zombie at an old epoch is refused."""
    group = join(None).group
    assert group is not None
    assert shell.validate_commit(group, "m1", 1, 3, transactional=True) == ErrorCode.NONE
    assert shell.validate_commit(group, "m1", 0, 3, transactional=True) == ErrorCode.STALE_MEMBER_EPOCH
    assert shell.validate_commit(group, "gone", 1, 3, transactional=True) == ErrorCode.UNKNOWN_MEMBER_ID
    # The member fields are optional in TxnOffsetCommit: naming none of them is not checked.
    assert shell.validate_commit(group, "", -1, 3, transactional=True) == ErrorCode.NONE
    assert shell.validate_commit(group, "", -1, 3, transactional=True, group_instance_id="i") != ErrorCode.NONE


def test_fetches_by_a_member_need_its_current_epoch_and_admin_fetches_pass() -> None:
    group = join(None).group
    assert group is not None
    assert shell.validate_fetch(group, None, -1) == ErrorCode.NONE
    assert shell.validate_fetch(group, "m1", 1) == ErrorCode.NONE
    assert shell.validate_fetch(group, "m1", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert shell.validate_fetch(group, "gone", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def advertised(hidden: frozenset[int]) -> set[int]:
    return {key.api_key for key in api_versions.response(3, hidden=hidden).api_keys}


def test_consumer_group_heartbeat_is_advertised_only_when_the_consumer_protocol_is_enabled() -> None:
    assert group_apis.CONSUMER_GROUP_HEARTBEAT in advertised(group_apis.hidden_apis(("classic", "consumer")))
    hidden = group_apis.hidden_apis(("classic",))
    assert group_apis.CONSUMER_GROUP_HEARTBEAT not in advertised(hidden)
    assert not api_versions.supports(group_apis.CONSUMER_GROUP_HEARTBEAT, 0, hidden)
    assert api_versions.supports(group_apis.CONSUMER_GROUP_HEARTBEAT, 1)


BROKER = {
    "node.id": "1",
    "process.roles": "broker",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.quorum.voters": "10@127.0.0.1:9093",
    "log.dirs": "/tmp/unused",
}


def test_rebalance_protocols_default_to_kafka_4s_and_refuse_unknown_ones_or_no_classic() -> None:
    assert load_config(BrokerConfig, BROKER).group_coordinator_rebalance_protocols == ("classic", "consumer")
    only_classic = {**BROKER, "group.coordinator.rebalance.protocols": "classic"}
    assert load_config(BrokerConfig, only_classic).group_coordinator_rebalance_protocols == ("classic",)
    for bad in ("classic,share", "consumer"):
        with pytest.raises(ConfigError, match="group.coordinator.rebalance.protocols"):
            load_config(BrokerConfig, {**BROKER, "group.coordinator.rebalance.protocols": bad})


def test_consumer_assignors_default_to_kafka_4s_take_class_names_and_refuse_unknown_ones() -> None:
    assert load_config(BrokerConfig, BROKER).consumer_assignors == ("uniform", "range")
    by_class = {**BROKER, "group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor"}
    assert load_config(BrokerConfig, by_class).consumer_assignors == ("range",)
    for bad in ("sticky", ""):
        with pytest.raises(ConfigError, match="group.consumer.assignors"):
            load_config(BrokerConfig, {**BROKER, "group.consumer.assignors": bad})

"""The replication throttle's parts: Kafka's validator of the throttled-replicas lists, the partitions a broker
takes from them, the rate measured over sampled windows, and the settings a broker takes from its metadata."""

from __future__ import annotations

from immutables import Map

from minikafka.broker.config import BrokerConfig
from minikafka.broker.kafka_wire.config_entries import DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, LIST, topic_entries
from minikafka.broker.replica.replication_quota import UNBOUNDED, ReplicationQuota
from minikafka.broker.replication_throttles import ReplicationThrottles
from minikafka.common.config import load_config
from minikafka.common.throttled_replicas import throttled_partitions
from minikafka.common.topic_config import DYNAMIC_BROKER_CONFIGS, TOPIC_CONFIGS, config_problem
from minikafka.kraft_controller.metadata.image import CLUSTER_DEFAULT, MetadataImage

LEADER, FOLLOWER = "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"


def _config(**overrides: str) -> BrokerConfig:
    props = {
        "node.id": "2",
        "process.roles": "broker",
        "listeners": "GRPC://127.0.0.1:9092",
        "controller.quorum.voters": "101@127.0.0.1:9093",
        "log.dirs": "/tmp/broker-2",
    }
    return load_config(BrokerConfig, {**props, **overrides})


def test_the_lists_are_validated_with_kafkas_message() -> None:
    for good in ("*", " * ", "", "0:1", "0:1, 1:2,2:3", "0:1,"):
        assert config_problem(TOPIC_CONFIGS, LEADER, good) is None, good
    for bad in ("*,0:1", "0", "0:x", "a:1", "0:1,,1:2", "-1:2", "*,"):
        assert config_problem(TOPIC_CONFIGS, FOLLOWER, bad) == (
            f"Invalid value {bad} for configuration {FOLLOWER}: must be the literal '*' or a list of replicas in "
            "the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
        ), bad


def test_a_broker_throttles_its_own_entries_or_every_partition() -> None:
    assert throttled_partitions("*", 7) is None
    assert throttled_partitions("0:1,1:2,3:2,4:3", 2) == frozenset({1, 3})
    assert throttled_partitions("0:1", 2) == frozenset()
    assert throttled_partitions("", 2) == frozenset()


def test_the_rates_are_dynamic_broker_configs_and_the_lists_topic_configs_without_a_broker_synonym() -> None:
    for rate in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
        assert config_problem(DYNAMIC_BROKER_CONFIGS, rate, "1048576") is None
        assert "at least 0" in str(config_problem(DYNAMIC_BROKER_CONFIGS, rate, "-1"))
    assert "" not in DYNAMIC_BROKER_CONFIGS
    entries = {e.name: e for e in topic_entries(_config(), {FOLLOWER: "0:2"})}
    assert (entries[LEADER].value, entries[LEADER].source, entries[LEADER].config_type) == ("", DEFAULT_CONFIG, LIST)
    assert (entries[FOLLOWER].value, entries[FOLLOWER].source) == ("0:2", DYNAMIC_TOPIC_CONFIG)
    assert [s.source for s in entries[FOLLOWER].synonyms] == [DYNAMIC_TOPIC_CONFIG]


def test_the_rate_is_measured_over_the_windows_from_the_oldest_and_at_least_one_window() -> None:
    quota = ReplicationQuota(bound=1000, window_num=3, window_ms=1000)
    assert not quota.exceeded(0)
    quota.record(900, 0)
    assert quota.rate(0) == 900  # one window at least: not 900 bytes in 0 ms
    assert not quota.exceeded(500)
    quota.record(200, 500)
    assert quota.exceeded(500)  # 1100 bytes within the first window
    assert quota.rate(1100) == 1000  # 1100 bytes over 1.1 s
    assert not quota.exceeded(1100)
    assert quota.rate(3000) == 0  # every window expired after window.num of them
    assert not quota.exceeded(3000)


def test_an_unbounded_quota_is_never_exceeded() -> None:
    quota = ReplicationQuota()
    quota.record(10**12, 0)
    assert quota.bound == UNBOUNDED and not quota.exceeded(0)


def test_a_broker_takes_its_throttles_from_the_metadata_its_own_rate_before_the_cluster_default() -> None:
    throttles = ReplicationThrottles.from_config(_config(**{"replication.quota.window.num": "3"}))
    assert throttles.leader.window_num == 3 and throttles.leader.bound == UNBOUNDED
    image = MetadataImage(
        topic_configs=Map({"a": Map({LEADER: "*"}), "b": Map({FOLLOWER: "0:2,1:3"}), "c": Map({FOLLOWER: "0:1"})}),
        broker_configs=Map(
            {
                CLUSTER_DEFAULT: Map(
                    {"leader.replication.throttled.rate": "100", "follower.replication.throttled.rate": "500"}
                ),
                "2": Map({"leader.replication.throttled.rate": "200"}),
            }
        ),
    )
    changed = throttles.update(image)
    assert [(c.side, c.rate, c.topics) for c in changed] == [("leader", 200, {"a": "*"}), ("follower", 500, {"b": [0]})]
    assert throttles.update(image) == []
    assert throttles.leader.is_throttled("a", 9) and not throttles.follower.is_throttled("b", 1)
    assert not throttles.follower.is_throttled("c", 0)  # the entry names another broker
    assert throttles.leader_withholds("a", 0, 3, {1, 2}, 0) is False  # under the rate
    throttles.record_sent([("a", 0, 300), ("z", 0, 10**9)], 0)  # an unthrottled topic's bytes do not count
    assert throttles.leader_withholds("a", 0, 3, {1, 2}, 0)
    assert not throttles.leader_withholds("a", 0, 2, {1, 2}, 0)  # in the ISR

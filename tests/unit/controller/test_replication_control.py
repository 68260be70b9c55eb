"""Topic creation, fencing elections, ISR removal and last replica standing."""

from __future__ import annotations

import uuid

import pytest
from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.requests import (
    CreatableTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    ReplicaAssignment,
)
from minikafka.kraft_controller.metadata.records import (
    NO_LEADER,
    ConfigRecord,
    ConfigResourceType,
    FenceBroker,
    Partition,
    PartitionChange,
    RemoveTopic,
    Topic,
)


def create(harness, *topics: CreatableTopic, validate_only: bool = False):  # type: ignore[no-untyped-def]
    return harness.commit(harness.controller.create_topics(CreateTopicsRequest(topics, validate_only)))


def test_round_robin_assignment_over_unfenced_brokers(harness) -> None:  # type: ignore[no-untyped-def]
    for b in (1, 2, 3):
        harness.start_broker(b)
    harness.register(4)  # fenced: never placed
    topic_id = harness.create_topic("t", partitions=6, rf=2)
    parts = [harness.partition(topic_id, i) for i in range(6)]
    assert all(set(p.replicas) <= {1, 2, 3} and len(set(p.replicas)) == 2 for p in parts)
    assert sorted(p.leader for p in parts) == [1, 1, 2, 2, 3, 3]  # leaders spread evenly
    assert all(p.isr == p.replicas and p.leader == p.replicas[0] for p in parts)
    assert all((p.leader_epoch, p.partition_epoch) == (0, 0) for p in parts)
    # No config given, none stored: the cluster-wide one the controller wrote with the ELR feature applies.
    assert harness.image.topic_configs.get("t") is None
    assert harness.image.min_insync_replicas("t", 2) == 1


def test_given_assignment_and_configs(harness) -> None:  # type: ignore[no-untyped-def]
    for b in (1, 2, 3):
        harness.start_broker(b)
    harness.register(4)
    topic_id = harness.create_topic("t", assignment=[[3, 1], [4, 2]], **{"min.insync.replicas": "2"})
    p0, p1 = harness.partition(topic_id, 0), harness.partition(topic_id, 1)
    assert (p0.replicas, p0.isr, p0.leader) == ((3, 1), (3, 1), 3)
    assert (p1.replicas, p1.isr, p1.leader) == ((4, 2), (2,), 2)  # fenced 4 is a replica, not in the ISR
    assert harness.image.min_insync_replicas("t", 1) == 2


def test_create_topics_writes_kafkas_config_records_between_topic_and_partitions(harness) -> None:  # type: ignore[no-untyped-def]
    """As Kafka's ReplicationControlManager: the TopicRecord, then one ConfigRecord (resource type TOPIC) per
    config given, then the PartitionRecords, in the same batch."""
    harness.start_broker(1)
    configs = {"min.insync.replicas": "1", "cleanup.policy": "compact"}
    result = harness.controller.create_topics(CreateTopicsRequest((CreatableTopic("t", 2, 1, (), configs),)))
    kinds = [type(record) for record in result.records]
    assert kinds == [Topic, ConfigRecord, ConfigRecord, Partition, Partition]
    assert [r for r in result.records if isinstance(r, ConfigRecord)] == [
        ConfigRecord(ConfigResourceType.TOPIC, "t", "cleanup.policy", "compact"),
        ConfigRecord(ConfigResourceType.TOPIC, "t", "min.insync.replicas", "1"),
    ]
    harness.commit(result)
    assert harness.image.topic_config("t", "cleanup.policy") == "compact"
    # A snapshot writes them as Kafka's too.
    assert ConfigRecord(ConfigResourceType.TOPIC, "t", "cleanup.policy", "compact") in harness.image.to_records()


@pytest.mark.parametrize(
    ("topic", "error"),
    [
        (CreatableTopic("bad name!"), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (CreatableTopic(".."), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (CreatableTopic("x" * 250), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (CreatableTopic("exists"), ErrorCode.TOPIC_ALREADY_EXISTS),
        (CreatableTopic("t", num_partitions=0), ErrorCode.INVALID_PARTITIONS),
        (CreatableTopic("t", replication_factor=0), ErrorCode.INVALID_REPLICATION_FACTOR),
        (CreatableTopic("t", replication_factor=3), ErrorCode.INVALID_REPLICATION_FACTOR),
        (CreatableTopic("t", configs={"no.such": "1"}), ErrorCode.INVALID_CONFIG),
        (CreatableTopic("t", configs={"min.insync.replicas": "0"}), ErrorCode.INVALID_CONFIG),
        (CreatableTopic("t", 1, -1, (ReplicaAssignment(0, (1,)),)), ErrorCode.INVALID_REQUEST),
        (CreatableTopic("t", assignments=(ReplicaAssignment(1, (1,)),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (CreatableTopic("t", assignments=(ReplicaAssignment(0, (1, 1)),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (CreatableTopic("t", assignments=(ReplicaAssignment(0, (7,)),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (CreatableTopic("t", assignments=(ReplicaAssignment(0, (3,)),)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (
            CreatableTopic("t", assignments=(ReplicaAssignment(0, (1,)), ReplicaAssignment(1, (1, 2)))),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ),
    ],
)
def test_create_topic_errors(harness, topic: CreatableTopic, error: ErrorCode) -> None:  # type: ignore[no-untyped-def]
    harness.start_broker(1)
    harness.start_broker(2)
    harness.register(3)  # registered but fenced
    harness.create_topic("exists")
    before = harness.image
    with capture_logs() as logs:
        response = create(harness, topic)
    assert response.topics[0].error_code is error and response.topics[0].topic_id is None
    assert [e["error"] for e in logs if e["event"] == "create_topic_rejected"] == [error.name]
    assert harness.image == before


def test_duplicate_names_in_one_request_and_validate_only(harness) -> None:  # type: ignore[no-untyped-def]
    harness.start_broker(1)
    response = create(harness, CreatableTopic("a"), CreatableTopic("a"), CreatableTopic("b"))
    assert [t.error_code for t in response.topics] == [ErrorCode.INVALID_REQUEST] * 2 + [ErrorCode.NONE]
    before = harness.image
    checked = create(harness, CreatableTopic("c"), validate_only=True)
    assert checked.topics[0].error_code is ErrorCode.NONE and harness.image == before


def test_topic_ids_are_seeded_and_distinct(make_harness) -> None:  # type: ignore[no-untyped-def]
    ids = []
    for _ in range(2):
        h = make_harness(seed=7)
        h.start_broker(1)
        ids.append([h.create_topic(name) for name in ("a", "b", "c")])
    assert ids[0] == ids[1] and len(set(ids[0])) == 3 and all(i.version == 4 for i in ids[0])


def fence(harness, broker_id: int) -> tuple:  # type: ignore[no-untyped-def]
    """Silence `broker_id` past its session while everyone else heartbeats, then tick."""
    harness.advance(1001)
    for b, reg in harness.image.brokers.items():
        if b != broker_id and not reg.fenced:
            harness.heartbeat(b, reg.broker_epoch)
    return harness.tick()


def test_fencing_the_leader_elects_from_the_isr_and_bumps_epochs(harness) -> None:  # type: ignore[no-untyped-def]
    for b in (1, 2, 3):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]])
    with capture_logs() as logs:
        records = fence(harness, 1)
    assert isinstance(records[0], PartitionChange) and isinstance(records[-1], FenceBroker)
    p = harness.partition(topic_id)
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (2, (2, 3), 1, 1)
    [elected] = [e for e in logs if e["event"] == "leader_elected"]
    assert elected["leader"] == 2 and elected["previous_leader"] == 1 and elected["unclean"] is False
    assert elected["reason"] == "fence:session_timeout" and elected["leader_epoch"] == 1


def test_fencing_a_follower_shrinks_isr_without_moving_leader_epoch(harness) -> None:  # type: ignore[no-untyped-def]
    for b in (1, 2, 3):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]])
    fence(harness, 3)
    p = harness.partition(topic_id)
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (1, (1, 2), 0, 1)


def test_election_skips_fenced_and_shutting_down_isr_members(harness) -> None:  # type: ignore[no-untyped-def]
    epochs = {b: harness.start_broker(b) for b in (1, 2, 3)}
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]])
    harness.heartbeat(2, epochs[2], want_shutdown=True)  # 2 leaves the ISR (controlled shutdown)
    fence(harness, 1)
    p = harness.partition(topic_id)
    assert (p.leader, p.isr) == (3, (3,))


def test_last_replica_standing_keeps_isr_and_returns_as_leader(make_harness) -> None:  # type: ignore[no-untyped-def]
    harness = make_harness(eligible_leader_replicas_version=0)  # Kafka 3.x: the last ISR member stays
    for b in (1, 2):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2]])
    fence(harness, 2)
    assert harness.partition(topic_id).isr == (1,)
    fence(harness, 1)
    p = harness.partition(topic_id)
    assert (p.leader, p.isr, p.leader_epoch) == (NO_LEADER, (1,), 1)  # no leader: 2 is not in the ISR
    # 2 returns first: it is not an ISR member, so the partition stays leaderless (no unclean election)
    harness.heartbeat(2, harness.epoch(2))
    assert harness.partition(topic_id).leader == NO_LEADER
    # 1 re-registers (new incarnation) and catches up: elected again from the ISR it never left
    new_epoch = harness.register(1)
    with capture_logs() as logs:
        harness.heartbeat(1, new_epoch)
    p = harness.partition(topic_id)
    assert (p.leader, p.isr, p.leader_epoch) == (1, (1,), 2)
    assert [e["reason"] for e in logs if e["event"] == "leader_elected"] == ["unfence"]


def test_unknown_topic_id_is_not_a_topic(harness) -> None:  # type: ignore[no-untyped-def]
    assert harness.image.topic(uuid.uuid4()) is None


def test_delete_topics_removes_existing_ones_and_names_the_unknown(harness) -> None:  # type: ignore[no-untyped-def]
    harness.start_broker(1)
    topic_id = harness.create_topic("t", **{"min.insync.replicas": "1"})
    with capture_logs() as logs:
        result = harness.controller.delete_topics(DeleteTopicsRequest(("t", "nope")))
    assert result.records == (RemoveTopic(topic_id),)
    codes = [(t.name, t.topic_id, t.error_code) for t in result.response.topics]
    assert codes == [("t", topic_id, ErrorCode.NONE), ("nope", None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert [e["topic"] for e in logs if e["event"] == "delete_topic_rejected"] == ["nope"]
    harness.commit(result)
    assert "t" not in harness.image.topics_by_name and harness.image.topic_configs.get("t") is None
    recreated = harness.create_topic("t")
    assert recreated != topic_id and harness.partition(recreated).partition_epoch == 0


def test_delete_topics_naming_a_topic_twice_refuses_it_once_and_deletes_the_others(harness) -> None:  # type: ignore[no-untyped-def]
    # Kafka's ControllerApis: a duplicated name gets one INVALID_REQUEST "Duplicate topic name." and is not deleted.
    harness.start_broker(1)
    twice = harness.create_topic("t", **{"min.insync.replicas": "1"})
    once = harness.create_topic("u", **{"min.insync.replicas": "1"})
    result = harness.controller.delete_topics(DeleteTopicsRequest(("t", "u", "t", "t")))
    assert result.records == (RemoveTopic(once),)
    answers = [(t.name, t.topic_id, t.error_code, t.error_message) for t in result.response.topics]
    assert answers == [
        ("t", None, ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        ("u", once, ErrorCode.NONE, ""),
    ]
    harness.commit(result)
    assert harness.image.topics_by_name["t"].topic_id == twice

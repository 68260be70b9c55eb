"""describe_record_event: the replay-time events the shell logs, with committed values."""

from __future__ import annotations

from controller_harness import Harness

from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_state_machine import describe_record_event
from minikafka.kraft_controller.metadata.image import MetadataImage


def replayed_events(h: Harness) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    image = MetadataImage()
    events = []
    for offset, record in h.committed:
        image = image.replay(record, offset)
        events.append(describe_record_event(record, image))
    return events


def test_events_carry_committed_values(harness: Harness) -> None:
    for b in (1, 2):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2]])
    harness.advance(1001)
    harness.heartbeat(2, harness.epoch(2))
    harness.tick()
    events = replayed_events(harness)
    names = [name for name, _ in events]
    assert events[0] == ("feature_level_changed", {"name": "eligible.leader.replicas.version", "feature_level": 1})
    assert events[1] == ("broker_config_changed", {"broker": "", "name": "min.insync.replicas", "value": "1"})
    assert names[2:6] == ["broker_registered", "broker_unfenced", "broker_registered", "broker_unfenced"]
    assert events[2][1]["broker_epoch"] == 2 and events[4][1]["broker_epoch"] == 4
    assert ("topic_created", {"topic": "t", "topic_id": str(topic_id)}) in events
    created = [f for n, f in events if n == "partition_changed" and f["reason"] == "create"]
    assert created == [
        {
            "topic": "t",
            "topic_id": str(topic_id),
            "partition": 0,
            "reason": "create",
            "leader": 1,
            "isr": [1, 2],
            "replicas": [1, 2],
            "adding_replicas": [],
            "removing_replicas": [],
            "leader_epoch": 0,
            "partition_epoch": 0,
            "leader_recovery_state": "RECOVERED",
            "elr": [],
            "last_known_elr": [],
        }
    ]
    name, fields = events[-2]
    assert name == "partition_changed" and fields["reason"] == "fence:session_timeout"
    assert (fields["leader"], fields["isr"], fields["leader_epoch"], fields["partition_epoch"]) == (2, [2], 1, 1)
    assert events[-1] == (
        "broker_fenced",
        {"broker_id": 1, "broker_epoch": 2, "reason": "session_timeout", "applied": True},
    )


def test_control_config_from_process_config() -> None:
    settings = ControllerConfig.__new__(ControllerConfig)
    for name, value in {
        "session_timeout_ms": 1234,
        "alter_partition_broker_epoch_check": True,
        "default_replication_factor": 3,
        "num_partitions": 4,
    }.items():
        object.__setattr__(settings, name, value)
    assert ControlConfig.from_settings(settings) == ControlConfig(1234, True, 3, 4)
    assert ControlConfig().alter_partition_broker_epoch_check is True  # the KIP-903 check is on by default


def test_topic_deleted_event_names_the_topic_from_the_image_before(harness: Harness) -> None:
    from minikafka.kraft_controller.control.requests import DeleteTopicsRequest

    harness.start_broker(1)
    topic_id = harness.create_topic("t", partitions=2)
    before = harness.image
    [record] = harness.controller.delete_topics(DeleteTopicsRequest(("t",))).records
    after = before.replay(record, before.offset + 1)
    assert describe_record_event(record, after, before) == (
        "topic_deleted",
        {"topic": "t", "topic_id": str(topic_id), "partitions": 2},
    )

"""ConfigRecord (Kafka's: resource type, name, key, value or null) for topics, one broker and the cluster default:
encoding, replay into the image, snapshots, the min.insync.replicas precedence, and the ELR safety records."""

from __future__ import annotations

import pytest

from minikafka.kraft_controller.control.config_control import elr_safety_records
from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_state_machine import feature_records
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    ConfigRecord,
    ConfigResourceType,
    FeatureLevel,
    Record,
    decode_record,
    encode_record,
)

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
MIN_ISR = "min.insync.replicas"


def _image(*records: Record) -> MetadataImage:
    image = MetadataImage()
    for offset, record in enumerate(records):
        image = image.replay(record, offset)
    return image


@pytest.mark.parametrize(
    "record",
    [
        ConfigRecord(TOPIC, "orders", "retention.ms", "1000"),
        ConfigRecord(BROKER, "1", "log.retention.ms", None),
        ConfigRecord(BROKER, "", MIN_ISR, "2"),
    ],
)
def test_config_records_round_trip(record: ConfigRecord) -> None:
    assert decode_record(encode_record(record)) == record


def test_min_insync_replicas_precedence_topic_then_broker_then_cluster_then_static() -> None:
    image = _image(ConfigRecord(BROKER, "", MIN_ISR, "2"))
    assert image.min_insync_replicas("t", 1) == 2 and image.min_insync_replicas("t", 1, broker_id=3) == 2
    image = image.replay(ConfigRecord(BROKER, "3", MIN_ISR, "3"), 1)
    assert image.min_insync_replicas("t", 1, broker_id=3) == 3
    assert image.min_insync_replicas("t", 1) == 2  # the controller reads the cluster default
    image = image.replay(ConfigRecord(TOPIC, "t", MIN_ISR, "1"), 2)
    assert image.min_insync_replicas("t", 5, broker_id=3) == 1
    image = _image(ConfigRecord(BROKER, "", MIN_ISR, "2"), ConfigRecord(BROKER, "", MIN_ISR, None))
    assert image.min_insync_replicas("t", 4) == 4 and not image.broker_configs


def test_a_snapshot_replays_broker_and_topic_configs_to_an_equal_image() -> None:
    image = _image(
        ConfigRecord(BROKER, "", MIN_ISR, "2"),
        ConfigRecord(BROKER, "1", "log.retention.ms", "5000"),
        ConfigRecord(TOPIC, "orders", "retention.ms", "100"),
    )
    again = MetadataImage.from_records(image.to_records(), image.offset)
    assert again == image
    assert again.topic_config("orders", "retention.ms") == "100"


def test_elr_safety_writes_the_cluster_default_and_deletes_per_broker_values() -> None:
    image = _image(FeatureLevel(ELIGIBLE_LEADER_REPLICAS_VERSION, 1), ConfigRecord(BROKER, "2", MIN_ISR, "1"))
    assert elr_safety_records(image, 3) == [
        ConfigRecord(BROKER, "", MIN_ISR, "3"),
        ConfigRecord(BROKER, "2", MIN_ISR, None),
    ]
    assert elr_safety_records(_image(FeatureLevel(ELIGIBLE_LEADER_REPLICAS_VERSION, 1)), 2) == [
        ConfigRecord(BROKER, "", MIN_ISR, "2")
    ]
    assert elr_safety_records(_image(), 2) == []  # ELR off: every node applies its own


def test_the_controller_writes_the_cluster_min_isr_with_the_elr_feature_and_keeps_an_existing_one() -> None:
    records = feature_records(MetadataImage(), ControlConfig(min_insync_replicas=2, transaction_version=0))
    assert records == [FeatureLevel(ELIGIBLE_LEADER_REPLICAS_VERSION, 1), ConfigRecord(BROKER, "", MIN_ISR, "2")]
    image = _image(*records, ConfigRecord(BROKER, "", MIN_ISR, "3"))
    assert feature_records(image, ControlConfig(min_insync_replicas=2, transaction_version=0)) == []
    without_elr = ControlConfig(eligible_leader_replicas_version=0, transaction_version=0)
    assert feature_records(MetadataImage(), without_elr) == []


def test_topic_overrides_take_the_topic_value_then_the_broker_synonyms() -> None:
    image = _image(
        ConfigRecord(BROKER, "", "log.retention.ms", "100"),
        ConfigRecord(BROKER, "2", "log.retention.ms", "200"),
        ConfigRecord(BROKER, "", "message.max.bytes", "5000"),
        ConfigRecord(TOPIC, "t", "segment.bytes", "1024"),
    )
    assert image.topic_overrides("t", 1) == {
        "retention.ms": "100",
        "max.message.bytes": "5000",
        "segment.bytes": "1024",
    }
    assert image.topic_overrides("t", 2)["retention.ms"] == "200"
    assert image.topic_overrides("other", None) == {"retention.ms": "100", "max.message.bytes": "5000"}

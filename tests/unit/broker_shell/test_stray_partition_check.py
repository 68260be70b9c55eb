"""Stray partitions are deleted only against caught-up metadata: a partial image lacks topics created later, and
their logs must not be deleted as strays (before the fix the check ran on whatever image it had after 15 s)."""

from __future__ import annotations

from types import SimpleNamespace

from minikafka.broker.config import BrokerConfig
from minikafka.broker.metadata_listener import MetadataListener
from minikafka.broker.process import StrayPartitionCheck
from minikafka.common.config import load_config

BROKER = {
    "node.id": "1",
    "process.roles": "broker",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.quorum.voters": "10@127.0.0.1:9093",
    "log.dirs": "/tmp/unused",
}


class RecordingLogs:
    def __init__(self) -> None:
        self.checked: list[object] = []
        self.deleting: list[bool] = []

    def delete_stray_partitions(self, image: object, broker_id: int, delete: bool = True) -> list[str]:
        self.checked.append(image)
        self.deleting.append(delete)
        return []


def listener(offset: int, high_watermark: int) -> MetadataListener:
    metadata = MetadataListener()
    metadata.image = SimpleNamespace(offset=offset)  # type: ignore[assignment]
    metadata.high_watermark = high_watermark
    return metadata


def test_the_check_waits_for_caught_up_metadata_and_runs_once() -> None:
    logs = RecordingLogs()
    metadata = listener(offset=40, high_watermark=120)
    check = StrayPartitionCheck(logs, metadata, 1)  # type: ignore[arg-type]
    assert not check.run() and logs.checked == []
    metadata.image = SimpleNamespace(offset=119)  # type: ignore[assignment]
    assert check.run() and len(logs.checked) == 1
    assert check.run() and len(logs.checked) == 1
    assert logs.deleting == [True]


def test_the_check_deletes_by_default_and_only_reports_when_switched_off() -> None:
    config = load_config(BrokerConfig, BROKER)
    assert config.stray_partition_check_enable is True
    off = load_config(BrokerConfig, {**BROKER, "minikafka.stray.partition.check.enable": "false"})
    assert off.stray_partition_check_enable is False
    logs = RecordingLogs()
    check = StrayPartitionCheck(logs, listener(offset=5, high_watermark=5), 1, off.stray_partition_check_enable)  # type: ignore[arg-type]
    assert check.run() and logs.deleting == [False]


def test_an_empty_quorum_is_not_caught_up() -> None:
    assert not listener(offset=-1, high_watermark=0).caught_up
    assert listener(offset=10, high_watermark=12).caught_up

"""KAFKA-15582/15586 on the broker: a clean stop leaves `.kafka_cleanshutdown` with the broker epoch; the next start
takes it (once: a later crash must look unclean) and registers naming that epoch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from minikafka.broker.clean_shutdown import (
    CLEAN_SHUTDOWN_FILE,
    NO_PREVIOUS_BROKER_EPOCH,
    record_clean_shutdown,
    take_previous_broker_epoch,
)
from minikafka.broker.config import BrokerConfig
from minikafka.broker.lifecycle import SendRegistration
from minikafka.broker.lifecycle_manager import LifecycleManager
from minikafka.common.config import load_config

BROKER = {
    "node.id": "1",
    "process.roles": "broker",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.quorum.voters": "10@127.0.0.1:9093",
    "log.dirs": "/tmp/unused",
}


def test_a_clean_stop_is_read_once(tmp_path: Path) -> None:
    assert take_previous_broker_epoch(tmp_path) == NO_PREVIOUS_BROKER_EPOCH  # never stopped cleanly
    record_clean_shutdown(tmp_path, 42)
    assert json.loads((tmp_path / CLEAN_SHUTDOWN_FILE).read_text()) == {"version": 0, "brokerEpoch": 42}
    assert take_previous_broker_epoch(tmp_path) == 42
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert take_previous_broker_epoch(tmp_path) == NO_PREVIOUS_BROKER_EPOCH  # this incarnation may still crash


def test_an_unreadable_file_counts_as_unclean(tmp_path: Path) -> None:
    (tmp_path / CLEAN_SHUTDOWN_FILE).write_text("{not json")
    assert take_previous_broker_epoch(tmp_path) == NO_PREVIOUS_BROKER_EPOCH
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()


async def test_the_registration_names_the_previous_epoch() -> None:
    config = load_config(BrokerConfig, BROKER)
    requests: list[Any] = []
    for previous in (42, NO_PREVIOUS_BROKER_EPOCH):
        manager = LifecycleManager(config, lambda: 0, previous_broker_epoch=previous)
        requests.append(manager._registration_request(SendRegistration(1, manager.incarnation_id)))
        await manager.controller.close()
    assert [r.previous_broker_epoch for r in requests] == [42, -1]
    assert all(r.HasField("previous_broker_epoch") for r in requests)

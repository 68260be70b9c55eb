"""Kafka's CleanShutdownFileHandler (KAFKA-15582): a broker that stops cleanly leaves `.kafka_cleanshutdown` in its
log dir, naming its broker epoch. The next start takes the file away (a later crash must not look clean) and
registers naming that epoch; the controller treats any other registration of a new incarnation as an unclean
shutdown, after which the broker may have lost its unflushed tail (KIP-966 drops it from every ELR)."""

from __future__ import annotations

import json
from pathlib import Path

import structlog

from minikafka.storage.checkpoint import fsync_directory, write_atomically

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
NO_PREVIOUS_BROKER_EPOCH = -1


def take_previous_broker_epoch(log_dir: Path) -> int:
    """The epoch the last incarnation stopped cleanly with, or -1; the file is gone afterwards."""
    path = log_dir / CLEAN_SHUTDOWN_FILE
    try:
        content = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return NO_PREVIOUS_BROKER_EPOCH
    try:
        epoch = int(json.loads(content)["brokerEpoch"])
    except (ValueError, KeyError, TypeError) as error:
        structlog.get_logger().warning("clean_shutdown_file_unreadable", path=str(path), error=str(error))
        epoch = NO_PREVIOUS_BROKER_EPOCH
    path.unlink()
    fsync_directory(log_dir)
    return epoch


def record_clean_shutdown(log_dir: Path, broker_epoch: int) -> None:
    write_atomically(log_dir / CLEAN_SHUTDOWN_FILE, json.dumps({"version": 0, "brokerEpoch": broker_epoch}))

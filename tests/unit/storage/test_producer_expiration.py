"""producer.id.expiration.ms (Kafka's ProducerStateManager.removeExpiredProducers), with the time passed in: an idle
producer without an open transaction is forgotten, in memory and in the next snapshot, and its next batch is a new
producer's (accepted at any sequence, as Kafka 4.x does)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

from immutables import Map

from minikafka.broker.process import producer_id_expiration_ms
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch
from minikafka.common.topic_config import DYNAMIC_BROKER_CONFIGS, PRODUCER_ID_EXPIRATION_MS, config_problem
from minikafka.kraft_controller.metadata.image import CLUSTER_DEFAULT, MetadataImage
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.producer_state import Accepted, Duplicate, ProducerBatch, ProducerState

EXPIRATION_MS = 86400000
T0 = 1_700_000_000_000  # epoch ms: record timestamps are wall-clock


def batch(pid: int, seq: int, timestamp: int, transactional: bool = False) -> ProducerBatch:
    return ProducerBatch(pid, 0, seq, 1, timestamp, transactional)


def state_with(*batches: ProducerBatch) -> ProducerState:
    state = ProducerState()
    for offset, appended in enumerate(batches):
        state = state.with_batch(appended, 2 * offset, 2 * offset + 1)
    return state


def test_a_producer_idle_for_the_expiration_is_forgotten_and_a_recent_one_kept() -> None:
    state = state_with(batch(1, 0, T0), batch(2, 0, T0 + 1000))
    assert state.without_expired(T0 + EXPIRATION_MS - 1, EXPIRATION_MS).producer_ids == ()
    expired = state.without_expired(T0 + EXPIRATION_MS, EXPIRATION_MS)
    assert expired.producer_ids == (1,)
    assert expired.state.entry(1) is None and expired.state.entry(2) is not None
    assert expired.state.end_offset == state.end_offset


def test_a_producer_with_an_open_transaction_never_expires_and_its_marker_counts_as_a_write() -> None:
    state = state_with(batch(1, 0, T0, transactional=True))
    assert state.without_expired(T0 + 10 * EXPIRATION_MS, EXPIRATION_MS).producer_ids == ()
    ended = state.with_marker(EndTxnMarker(1, 0, True, 0), 2, T0 + 5000).state
    assert ended.without_expired(T0 + 5000 + EXPIRATION_MS - 1, EXPIRATION_MS).producer_ids == ()
    assert ended.without_expired(T0 + 5000 + EXPIRATION_MS, EXPIRATION_MS).producer_ids == (1,)


def test_an_expired_producer_s_next_batch_is_a_new_producer_s() -> None:
    state = state_with(batch(1, 0, T0), batch(1, 2, T0))
    assert state.check_client_batch(batch(1, 0, T0)) == Duplicate(0, 1)
    forgotten = state.without_expired(T0 + EXPIRATION_MS, EXPIRATION_MS).state
    assert forgotten.check_client_batch(batch(1, 0, T0)) == Accepted()  # a retry is no longer recognised
    assert forgotten.check_client_batch(batch(1, 40, T0)) == Accepted()  # nor a gap refused


def test_the_last_timestamp_reads_back_from_a_snapshot() -> None:
    state = state_with(batch(1, 0, T0)).with_marker(EndTxnMarker(2, 0, False, 3), 4, T0 + 7).state
    restored = ProducerState.from_snapshot(state.to_snapshot())
    assert restored == state
    assert restored.entry(2) is not None and restored.entry(2).last_timestamp == T0 + 7


def idempotent(pid: int, seq: int, timestamp: int, attributes: int = 0) -> bytes:
    records = [Record(b"v%d" % i, timestamp_ms=timestamp) for i in range(2)]
    return build_batch(records, producer_id=pid, producer_epoch=0, base_sequence=seq, attributes=attributes)


def test_a_log_forgets_expired_producers_across_a_restart(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), 0)
    log.append_as_leader(idempotent(1, 0, T0), 1, 0)
    log.append_as_leader(idempotent(2, 0, T0 + 1000), 1, 0)
    log.append_as_leader(idempotent(3, 0, T0, TRANSACTIONAL_FLAG), 1, 0)
    assert log.remove_expired_producers(T0 + EXPIRATION_MS, EXPIRATION_MS) == (1,)
    log.close(0)  # its snapshot is written without producer 1
    reopened = PartitionLog.open(tmp_path / "t-0", LogConfig(), 0)
    assert reopened.producer_state.entry(1) is None
    assert reopened.producer_state.entry(2) is not None and reopened.producer_state.entry(3) is not None
    assert not reopened.append_as_leader(idempotent(1, 0, T0), 1, 0).duplicate  # appended again: forgotten


def test_the_expiration_is_a_dynamic_broker_config_the_broker_reads_at_each_check() -> None:
    assert config_problem(DYNAMIC_BROKER_CONFIGS, PRODUCER_ID_EXPIRATION_MS, "60000") is None
    assert "at least 1" in (config_problem(DYNAMIC_BROKER_CONFIGS, PRODUCER_ID_EXPIRATION_MS, "0") or "")
    config = SimpleNamespace(node_id=1, producer_id_expiration_ms=EXPIRATION_MS)
    image = MetadataImage()
    broker = SimpleNamespace(config=config, manager=SimpleNamespace(metadata=SimpleNamespace(image=image)))
    assert producer_id_expiration_ms(broker) == EXPIRATION_MS  # type: ignore[arg-type]
    cluster = dataclasses.replace(
        image, broker_configs=Map({CLUSTER_DEFAULT: Map({PRODUCER_ID_EXPIRATION_MS: "5000"})})
    )
    broker.manager.metadata.image = cluster
    assert producer_id_expiration_ms(broker) == 5000  # type: ignore[arg-type]
    own = dataclasses.replace(
        cluster, broker_configs=cluster.broker_configs.set("1", Map({PRODUCER_ID_EXPIRATION_MS: "7000"}))
    )
    broker.manager.metadata.image = own
    assert producer_id_expiration_ms(broker) == 7000  # type: ignore[arg-type]

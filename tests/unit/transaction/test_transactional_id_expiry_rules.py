"""The expiry of transactional ids (transactional.id.expiration.ms): which ids expire, the tombstones' write and
its outcome, and a tombstone replayed when a coordinator loads the partition."""

from __future__ import annotations

from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.transaction import core
from minikafka.broker.transaction.core import Reply, TxnConfig, TxnStep, WriteState
from minikafka.broker.transaction.id_expiry import (
    MAX_TOMBSTONES_PER_WRITE,
    WriteTombstones,
    expire_ids,
    tombstones_written,
)
from minikafka.broker.transaction.records import encode_key, encode_value, tombstone_batch
from minikafka.broker.transaction.shard import TxnReplay, TxnShard
from minikafka.broker.transaction.state import TxnMetadata, TxnState
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch, iter_batches

CONFIG = TxnConfig(max_timeout_ms=900_000)
EXPIRATION = 10_000
P0 = TopicPartitionKey("orders", 0)


def completed(step: TxnStep) -> TxnMetadata:
    assert step.metadata is not None
    [write] = [e for e in step.effects if isinstance(e, WriteState)]
    done = core.written(step.metadata, write.target, write.request_id, ErrorCode.NONE)
    assert done.metadata is not None
    return done.metadata


def initialised(tid: str, now: int, producer_id: int = 100) -> TxnMetadata:
    return completed(core.init_producer_id(None, tid, 60_000, None, producer_id, 1, now, CONFIG))


def ongoing(tid: str, now: int) -> TxnMetadata:
    return completed(core.add_partitions(initialised(tid, 0), 100, 0, [P0], 2, now))


def committed(tid: str, now: int) -> TxnMetadata:
    prepared = completed(core.end_txn(ongoing(tid, 0), 100, 0, True, 3, now))
    return completed(core.markers_written(prepared, now))


def test_an_id_expires_once_unused_for_the_expiration_time_counted_from_its_last_use() -> None:
    txns = {"old": initialised("old", 0), "recent": initialised("recent", 5_000)}
    assert expire_ids(txns, EXPIRATION - 1, EXPIRATION, 7).write is None
    expiry = expire_ids(txns, EXPIRATION, EXPIRATION, 7)
    assert expiry.write == WriteTombstones(7, ("old",))
    assert expiry.dying["old"].pending == TxnState.DEAD
    # A later use (a commit at 8 s) moves the expiry on.
    assert expire_ids({"t": committed("t", 8_000)}, EXPIRATION + 1, EXPIRATION, 8).write is None
    assert expire_ids({"t": committed("t", 8_000)}, 8_000 + EXPIRATION, EXPIRATION, 8).write is not None


def test_only_ids_without_a_transaction_under_way_expire() -> None:
    far = 10 * EXPIRATION
    prepared = ongoing("prepared", 0).evolve(state=TxnState.PREPARE_COMMIT)
    writing = initialised("writing", 0).evolve(pending=TxnState.ONGOING)
    txns = {
        "ongoing": ongoing("ongoing", 0),
        "prepared": prepared,
        "writing": writing,
        "empty": initialised("empty", 0),
        "committed": committed("committed", 0),
    }
    expiry = expire_ids(txns, far, EXPIRATION, 1)
    assert expiry.write is not None and expiry.write.transactional_ids == ("committed", "empty")


def test_an_id_pending_dead_gets_concurrent_transactions_then_is_removed_once_the_tombstone_is_stored() -> None:
    txns = {"t": initialised("t", 0)}
    expiry = expire_ids(txns, EXPIRATION, EXPIRATION, 4)
    assert expiry.write is not None
    txns.update(expiry.dying)
    retried = core.init_producer_id(txns["t"], "t", 60_000, None, 200, 9, EXPIRATION, CONFIG)
    assert retried.effects == (Reply(9, ErrorCode.CONCURRENT_TRANSACTIONS),)
    outcome = tombstones_written(txns, expiry.write, 3, ErrorCode.NONE)
    assert outcome.removed == ("t",) and not outcome.kept
    assert outcome.event.name == "transactional_ids_expired"
    assert outcome.event.fields == {"partition": 3, "transactional_ids": ["t"], "count": 1}
    # Gone: the next InitProducerId starts afresh, with a new producer id.
    assert core.needs_new_producer_id(None)
    fresh = completed(core.init_producer_id(None, "t", 60_000, None, 200, 10, EXPIRATION + 1, CONFIG))
    assert (fresh.producer_id, fresh.producer_epoch) == (200, 0)


def test_a_failed_tombstone_write_keeps_the_id_as_it_was() -> None:
    before = committed("t", 0)
    expiry = expire_ids({"t": before}, EXPIRATION, EXPIRATION, 4)
    assert expiry.write is not None
    outcome = tombstones_written(expiry.dying, expiry.write, 0, ErrorCode.NOT_ENOUGH_REPLICAS)
    assert outcome.removed == () and outcome.kept == {"t": before}
    assert outcome.event.name == "transactional_ids_expiry_failed"
    assert outcome.event.fields["error"] == "NOT_ENOUGH_REPLICAS"
    # Tried again at the next check.
    assert expire_ids(outcome.kept, EXPIRATION + 1, EXPIRATION, 5).write == WriteTombstones(5, ("t",))


def test_loading_a_partition_replays_a_tombstone_as_the_ids_removal() -> None:
    kept, expired = committed("kept", 0), committed("expired", 0)
    states = build_batch([Record(encode_value(m), encode_key(m.transactional_id)) for m in (kept, expired)])
    shard = TxnShard(partition=0, leader_epoch=1)
    replay = TxnReplay(shard, resume=lambda _shard: None)
    for data in (states, tombstone_batch(("expired",), 0)):
        for batch in iter_batches(data):
            replay.records(None, batch.records())
    assert replay.install() == {"transactional_ids": 1}
    assert set(shard.txns) == {"kept"}


def test_one_check_writes_at_most_a_batchs_worth_of_tombstones_the_rest_wait() -> None:
    idle = initialised("t", 0)
    txns = {f"t{i:04d}": idle.evolve(transactional_id=f"t{i:04d}") for i in range(MAX_TOMBSTONES_PER_WRITE + 1)}
    expiry = expire_ids(txns, EXPIRATION, EXPIRATION, 1)
    assert expiry.write is not None and len(expiry.write.transactional_ids) == MAX_TOMBSTONES_PER_WRITE
    txns.update(expiry.dying)
    outcome = tombstones_written(txns, expiry.write, 0, ErrorCode.NONE)
    assert outcome.event.fields["count"] == MAX_TOMBSTONES_PER_WRITE
    assert len(outcome.event.fields["transactional_ids"]) == 20
    for tid in outcome.removed:
        del txns[tid]
    assert expire_ids(txns, EXPIRATION, EXPIRATION, 2).write == WriteTombstones(2, (f"t{MAX_TOMBSTONES_PER_WRITE}",))

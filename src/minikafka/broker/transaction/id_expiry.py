"""The expiry of transactional ids (Kafka's TransactionStateManager.removeExpiredTransactionalIds), checked every
transaction.remove.expired.transaction.cleanup.interval.ms: an id with no transaction under way (Empty,
CompleteCommit, CompleteAbort) and nothing written for it for transactional.id.expiration.ms gets a tombstone in
__transaction_state, stored with acks=all before the id leaves memory, so a new coordinator does not load it. Until
then its pending state is Dead (every request for it gets CONCURRENT_TRANSACTIONS); a failed write keeps the id,
tried again at the next check. Pure: the shell passes the time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minikafka.broker.transaction.core import TxnEvent
from minikafka.broker.transaction.state import TxnMetadata, TxnState
from minikafka.common.errors import ErrorCode

# Tombstones per write: the ids past it wait for the next check (Kafka bounds the batch by its maximum size).
MAX_TOMBSTONES_PER_WRITE = 1000
EVENT_IDS = 20  # the ids an event names; its `count` says how many there were


@dataclass(frozen=True)
class WriteTombstones:
    """Append a tombstone for each id to the shard's __transaction_state partition; the outcome goes to
    `tombstones_written`."""

    request_id: int
    transactional_ids: tuple[str, ...]


@dataclass(frozen=True)
class IdExpiry:
    """The ids now pending Dead, and their write (None: nothing expires now)."""

    dying: dict[str, TxnMetadata]
    write: WriteTombstones | None


@dataclass(frozen=True)
class TombstonesOutcome:
    """What the shard keeps of the ids once their tombstones' write finished, the ids it drops, and the event."""

    kept: dict[str, TxnMetadata]
    removed: tuple[str, ...]
    event: TxnEvent


def is_expired(metadata: TxnMetadata, now_ms: int, expiration_ms: int) -> bool:
    """Kafka's shouldExpire: no transaction under way, no write pending, and unused for the expiration time."""
    return metadata.pending is None and metadata.state.is_complete and now_ms - metadata.last_update_ms >= expiration_ms


def expire_ids(txns: Mapping[str, TxnMetadata], now_ms: int, expiration_ms: int, request_id: int) -> IdExpiry:
    """The shard's expired ids move to pending Dead, their tombstones written under `request_id`."""
    expired = [tid for tid, metadata in txns.items() if is_expired(metadata, now_ms, expiration_ms)]
    expired = sorted(expired)[:MAX_TOMBSTONES_PER_WRITE]
    if not expired:
        return IdExpiry({}, None)
    dying = {tid: txns[tid].evolve(pending=TxnState.DEAD) for tid in expired}
    return IdExpiry(dying, WriteTombstones(request_id, tuple(expired)))


def tombstones_written(
    txns: Mapping[str, TxnMetadata], write: WriteTombstones, partition: int, error: ErrorCode
) -> TombstonesOutcome:
    """The tombstones' write finished (`error` NONE: stored by the ISR). Stored, the ids still pending Dead go;
    failed, they stay as they were."""
    dying = {tid: txns[tid] for tid in write.transactional_ids if tid in txns and txns[tid].pending == TxnState.DEAD}
    if error != ErrorCode.NONE:
        kept = {tid: metadata.evolve(pending=None) for tid, metadata in dying.items()}
        fields = {**_named(partition, sorted(dying)), "error": error.name}
        return TombstonesOutcome(kept, (), TxnEvent("transactional_ids_expiry_failed", fields))
    removed = tuple(sorted(dying))
    return TombstonesOutcome({}, removed, TxnEvent("transactional_ids_expired", _named(partition, list(removed))))


def _named(partition: int, transactional_ids: list[str]) -> dict[str, object]:
    return {"partition": partition, "transactional_ids": transactional_ids[:EVENT_IDS], "count": len(transactional_ids)}

"""The transaction coordinator's decisions, pure (Kafka's TransactionCoordinator): each function takes a
transactional id's metadata (None: never seen), the request and the time, and returns the metadata to keep and the
effects for the shell: answer a request, write a state to __transaction_state (acks=all), write markers to the
transaction's partitions, log an event.

A state is in force only once written: until then the metadata carries it as `pending`, and every other request
for the id gets CONCURRENT_TRANSACTIONS. A transaction ends in two writes around its markers: PrepareCommit (or
PrepareAbort), after which the client has its answer and the outcome is decided, then the markers, then
CompleteCommit (or CompleteAbort). A coordinator that takes over a partition finds a Prepare state and writes the
markers again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.transaction.state import (
    EPOCH_BUMP_VERSION,
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TxnMetadata,
    TxnState,
    epoch_exhausted,
    new_metadata,
)
from minikafka.common.errors import ErrorCode


@dataclass(frozen=True)
class TxnConfig:
    max_timeout_ms: int  # transaction.max.timeout.ms


@dataclass(frozen=True)
class Reply:
    request_id: int
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class WriteState:
    """Append `target` to __transaction_state; its outcome goes to `written` (with `request_id`, if any)."""

    target: TxnMetadata
    request_id: int | None


@dataclass(frozen=True)
class WriteMarkers:
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartitionKey]
    transaction_version: int = 0  # the producer's (clientTransactionVersion): the leaders check markers by it


@dataclass(frozen=True)
class TxnEvent:
    name: str
    fields: dict[str, Any]


@dataclass(frozen=True)
class RetryCompletion:
    """The CompleteCommit or CompleteAbort write failed while this broker still coordinates the transaction: write
    it again after a back-off (`markers_written` once more), as Kafka's marker channel manager retries it."""


Effect = Reply | WriteState | WriteMarkers | TxnEvent | RetryCompletion


@dataclass(frozen=True)
class TxnStep:
    metadata: TxnMetadata | None
    effects: tuple[Effect, ...] = ()


def _refuse(metadata: TxnMetadata | None, request_id: int, error: ErrorCode) -> TxnStep:
    return TxnStep(metadata, (Reply(request_id, error),))


def _write(metadata: TxnMetadata, target: TxnMetadata, request_id: int | None) -> TxnStep:
    return TxnStep(metadata.evolve(pending=target.state), (WriteState(target.evolve(pending=None), request_id),))


# ---- InitProducerId ----


def needs_new_producer_id(metadata: TxnMetadata | None) -> bool:
    """Whether InitProducerId will hand out a new producer id (the shell allocates it before asking)."""
    return metadata is None or metadata.producer_epoch >= MAX_PRODUCER_EPOCH - 1


def init_producer_id(
    metadata: TxnMetadata | None,
    transactional_id: str,
    timeout_ms: int,
    expected: tuple[int, int] | None,
    fresh_producer_id: int,
    request_id: int,
    now_ms: int,
    config: TxnConfig,
) -> TxnStep:
    """Kafka's handleInitProducerId for a transactional id: a new or bumped epoch fences every older producer of
    the id; a transaction under way is aborted first (the client retries on CONCURRENT_TRANSACTIONS).
    `expected` is KIP-360's (producer id, epoch) the client already holds, or None."""
    if not 0 < timeout_ms <= config.max_timeout_ms:
        return _refuse(metadata, request_id, ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    if metadata is None:
        metadata = new_metadata(transactional_id, fresh_producer_id, timeout_ms, now_ms)
    if metadata.pending is not None or metadata.state.is_prepare or metadata.state == TxnState.PREPARE_EPOCH_FENCE:
        return _refuse(metadata, request_id, ErrorCode.CONCURRENT_TRANSACTIONS)
    if metadata.state == TxnState.ONGOING:
        step = _fence_and_abort(metadata, now_ms, "a new producer of the id")
        return TxnStep(step.metadata, step.effects + (Reply(request_id, ErrorCode.CONCURRENT_TRANSACTIONS),))
    if expected is not None and expected[0] != NO_PRODUCER_ID:
        current = (metadata.producer_id, metadata.producer_epoch)
        if expected == (metadata.producer_id, metadata.last_producer_epoch) and metadata.last_producer_epoch >= 0:
            # A retry of the bump that already happened: answer it again (KIP-360).
            return TxnStep(metadata, (Reply(request_id, ErrorCode.NONE, *current),))
        if expected != current:
            return _refuse(metadata, request_id, ErrorCode.PRODUCER_FENCED)
    if metadata.producer_epoch >= MAX_PRODUCER_EPOCH - 1:
        producer_id, epoch, last_epoch = fresh_producer_id, 0, NO_PRODUCER_EPOCH
    else:
        producer_id, epoch, last_epoch = metadata.producer_id, metadata.producer_epoch + 1, metadata.producer_epoch
    target = metadata.evolve(
        producer_id=producer_id,
        producer_epoch=epoch,
        last_producer_epoch=last_epoch,
        timeout_ms=timeout_ms,
        state=TxnState.EMPTY,
        partitions=frozenset(),
        start_ms=-1,
        last_update_ms=now_ms,
    )
    return _write(metadata, target, request_id)


def _fence_and_abort(metadata: TxnMetadata, now_ms: int, reason: str) -> TxnStep:
    """Kafka's prepareFenceProducerEpoch then endTransaction(abort): the epoch is bumped so the producer of the
    transaction can write nothing more, and the transaction is aborted with the new epoch. A transaction of
    transaction version 2 is bumped once more by its end, as every one is: its producer's EndTxn at the old epoch
    is then no retry but fenced."""
    fenced = metadata.producer_epoch + 1
    bump_again = metadata.client_version >= EPOCH_BUMP_VERSION and fenced < MAX_PRODUCER_EPOCH
    epoch = fenced + 1 if bump_again else fenced
    target = metadata.evolve(
        producer_epoch=epoch,
        last_producer_epoch=epoch - 1,
        state=TxnState.PREPARE_ABORT,
        last_update_ms=now_ms,
    )
    step = _write(metadata, target, None)
    event = TxnEvent(
        "transaction_fenced_and_aborted",
        {
            "transactional_id": metadata.transactional_id,
            "producer_id": metadata.producer_id,
            "producer_epoch": epoch,
            "partitions": len(metadata.partitions),
            "reason": reason,
        },
    )
    return TxnStep(step.metadata, step.effects + (event,))


# ---- AddPartitionsToTxn / AddOffsetsToTxn ----


def _check_producer(metadata: TxnMetadata | None, producer_id: int, epoch: int) -> ErrorCode:
    if metadata is None or metadata.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if metadata.producer_epoch != epoch:
        return ErrorCode.PRODUCER_FENCED
    return ErrorCode.NONE


def add_partitions(
    metadata: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    partitions: Iterable[TopicPartitionKey],
    request_id: int,
    now_ms: int,
    version: int = 0,
) -> TxnStep:
    """Kafka's handleAddPartitionsToTransaction: the partitions join the transaction (which begins with the
    first), written before the answer. `version`: the producer's transaction version (2 when a broker adds them
    for it), kept with the transaction."""
    error = _check_producer(metadata, producer_id, epoch)
    if error != ErrorCode.NONE:
        return _refuse(metadata, request_id, error)
    assert metadata is not None
    if metadata.pending is not None or metadata.state.is_prepare or metadata.state == TxnState.PREPARE_EPOCH_FENCE:
        return _refuse(metadata, request_id, ErrorCode.CONCURRENT_TRANSACTIONS)
    added = frozenset(partitions)
    if metadata.state == TxnState.ONGOING and added <= metadata.partitions:
        return TxnStep(metadata, (Reply(request_id, ErrorCode.NONE),))
    starting = metadata.state != TxnState.ONGOING
    target = metadata.evolve(
        state=TxnState.ONGOING,
        partitions=(frozenset() if starting else metadata.partitions) | added,
        start_ms=now_ms if starting else metadata.start_ms,
        last_update_ms=now_ms,
        client_version=version,
    )
    return _write(metadata, target, request_id)


def verify_partitions(
    metadata: TxnMetadata | None, producer_id: int, epoch: int, partitions: Iterable[TopicPartitionKey]
) -> dict[TopicPartitionKey, ErrorCode]:
    """AddPartitionsToTxn v4+ with VerifyOnly (KIP-890 part 1), asked by a partition leader before it appends a
    transactional batch: each partition is NONE only if it is in the transaction under way of that producer."""
    error = _check_producer(metadata, producer_id, epoch)
    answers: dict[TopicPartitionKey, ErrorCode] = {}
    for partition in partitions:
        if error != ErrorCode.NONE:
            answers[partition] = error
        elif metadata is None or metadata.state != TxnState.ONGOING or partition not in metadata.partitions:
            answers[partition] = ErrorCode.INVALID_TXN_STATE
        else:
            answers[partition] = ErrorCode.NONE
    return answers


# ---- EndTxn ----

_RETRY_ANSWERS = {
    (TxnState.COMPLETE_COMMIT, True): ErrorCode.NONE,
    (TxnState.COMPLETE_ABORT, False): ErrorCode.NONE,
    (TxnState.PREPARE_COMMIT, True): ErrorCode.CONCURRENT_TRANSACTIONS,
    (TxnState.PREPARE_ABORT, False): ErrorCode.CONCURRENT_TRANSACTIONS,
}


def end_txn(
    metadata: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    commit: bool,
    request_id: int,
    now_ms: int,
    version: int = 0,
    fresh_producer_id: int = NO_PRODUCER_ID,
) -> TxnStep:
    """Kafka's handleEndTransaction from a client: an ongoing transaction moves to PrepareCommit/PrepareAbort
    (answered once written, the markers follow); a retry of an ending or ended one is answered as Kafka does;
    any other is INVALID_TXN_STATE. `version` is the producer's transaction version (2 for EndTxn v5): from 2 on
    the epoch is bumped by every EndTxn (`end_txn_v2`)."""
    if version >= EPOCH_BUMP_VERSION:
        return end_txn_v2(metadata, producer_id, epoch, commit, request_id, now_ms, version, fresh_producer_id)
    error = _check_producer(metadata, producer_id, epoch)
    if error != ErrorCode.NONE:
        return _refuse(metadata, request_id, error)
    assert metadata is not None
    if metadata.pending is not None or metadata.state == TxnState.PREPARE_EPOCH_FENCE:
        return _refuse(metadata, request_id, ErrorCode.CONCURRENT_TRANSACTIONS)
    if metadata.state != TxnState.ONGOING:
        return _refuse(metadata, request_id, _RETRY_ANSWERS.get((metadata.state, commit), ErrorCode.INVALID_TXN_STATE))
    state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
    target = metadata.evolve(state=state, last_update_ms=now_ms, client_version=version)
    return _write(metadata, target, request_id)


def end_txn_needs_new_producer_id(metadata: TxnMetadata | None, version: int) -> bool:
    """Whether an EndTxn will roll the producer over to a new id (the shell allocates it before asking)."""
    return version >= EPOCH_BUMP_VERSION and metadata is not None and epoch_exhausted(metadata.producer_epoch)


def _v2_epoch_answer(metadata: TxnMetadata, producer_id: int, epoch: int) -> tuple[ErrorCode, bool]:
    """Kafka's epoch checks of an EndTxn of version 2: (the error, whether it retries an EndTxn already done). The
    epoch the producer sends is the one of its transaction; once ended the coordinator holds that epoch + 1, so an
    EndTxn at the old epoch is a retry only where no newer transaction has begun, and fenced anywhere else."""
    retry_on_overflow = (
        metadata.previous_producer_id == producer_id
        and epoch == MAX_PRODUCER_EPOCH - 1
        and metadata.producer_epoch == 0
    )
    retry_on_bump = metadata.producer_id == producer_id and metadata.producer_epoch == epoch + 1
    if metadata.producer_id != producer_id and not retry_on_overflow:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING, False
    if metadata.state.is_prepare:
        valid = retry_on_bump
    elif metadata.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        valid = retry_on_bump or retry_on_overflow or epoch == metadata.producer_epoch
    else:
        valid = epoch == metadata.producer_epoch
    if not valid:
        return ErrorCode.PRODUCER_FENCED, False
    return ErrorCode.NONE, retry_on_bump or retry_on_overflow


def end_txn_v2(
    metadata: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    commit: bool,
    request_id: int,
    now_ms: int,
    version: int,
    fresh_producer_id: int,
) -> TxnStep:
    """KIP-890 part 2: the transaction ends with the producer epoch bumped, so its markers and every later
    request carry the new epoch and an EndTxn delayed from this transaction cannot end the next one. With nothing
    open an abort is still written (a v2 producer adds no partition itself, so it cannot know whether its
    transaction began); a commit is INVALID_TXN_STATE."""
    if metadata is None:
        return _refuse(metadata, request_id, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    error, retry = _v2_epoch_answer(metadata, producer_id, epoch)
    if error != ErrorCode.NONE:
        return _refuse(metadata, request_id, error)
    if metadata.pending is not None or metadata.state == TxnState.PREPARE_EPOCH_FENCE:
        return _refuse(metadata, request_id, ErrorCode.CONCURRENT_TRANSACTIONS)
    state = metadata.state
    if state.is_prepare:
        same = (state == TxnState.PREPARE_COMMIT) == commit
        return _refuse(metadata, request_id, ErrorCode.CONCURRENT_TRANSACTIONS if same else ErrorCode.INVALID_TXN_STATE)
    if state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT) and retry:
        if (state == TxnState.COMPLETE_COMMIT) != commit:
            return _refuse(metadata, request_id, ErrorCode.INVALID_TXN_STATE)
        answer = Reply(request_id, ErrorCode.NONE, metadata.producer_id, metadata.producer_epoch)
        return TxnStep(metadata, (answer,))
    if state != TxnState.ONGOING and commit:
        return _refuse(metadata, request_id, ErrorCode.INVALID_TXN_STATE)
    next_producer_id = NO_PRODUCER_ID
    if epoch_exhausted(metadata.producer_epoch):
        if fresh_producer_id == NO_PRODUCER_ID:
            return _refuse(metadata, request_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        next_producer_id = fresh_producer_id
    target = metadata.evolve(
        state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
        producer_epoch=metadata.producer_epoch + 1,
        last_producer_epoch=metadata.producer_epoch,
        next_producer_id=next_producer_id,
        client_version=version,
        start_ms=metadata.start_ms if state == TxnState.ONGOING else now_ms,
        last_update_ms=now_ms,
    )
    return _write(metadata, target, request_id)


# ---- the shell's outcomes ----

_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def written(metadata: TxnMetadata, target: TxnMetadata, request_id: int | None, error: ErrorCode) -> TxnStep:
    """A WriteState's outcome (Kafka's appendTransactionToLog callback): on success the target state is in force
    and its consequences follow; on failure the pending state is dropped and the client told (as Kafka maps
    append errors); a timed-out transaction's abort is tried again by the next timeout check, a completion after
    a back-off."""
    if error != ErrorCode.NONE:
        failed = metadata.evolve(pending=None)
        answer = _APPEND_ERRORS.get(error, error)
        effects: tuple[Effect, ...] = () if request_id is None else (Reply(request_id, answer),)
        event = TxnEvent(
            "transaction_state_write_failed",
            {"transactional_id": metadata.transactional_id, "state": target.state.display_name, "error": error.name},
        )
        # The markers are written: left in Prepare, the transaction would refuse its producer for good.
        completing = target.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        retry = (RetryCompletion(),) if completing and answer == ErrorCode.COORDINATOR_NOT_AVAILABLE else ()
        return TxnStep(failed, effects + (event,) + retry)
    done = target.evolve(pending=None)
    replies: tuple[Effect, ...] = ()
    if request_id is not None:
        replies = (Reply(request_id, ErrorCode.NONE, *_producer_after(done)),)
    if done.state.is_prepare:
        commit = done.state == TxnState.PREPARE_COMMIT
        markers = WriteMarkers(done.producer_id, done.producer_epoch, commit, done.partitions, done.client_version)
        return TxnStep(done, replies + (markers,))
    if done.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        event = TxnEvent(
            "transaction_completed",
            {
                "transactional_id": done.transactional_id,
                "producer_id": done.producer_id,
                "producer_epoch": done.producer_epoch,
                "result": "commit" if done.state == TxnState.COMPLETE_COMMIT else "abort",
                "partitions": len(metadata.partitions),
            },
        )
        return TxnStep(done, replies + (event,))
    return TxnStep(done, replies)


def markers_written(metadata: TxnMetadata, now_ms: int) -> TxnStep:
    """Every partition has its marker: the transaction is complete (Kafka's writeTxnCompletion)."""
    if metadata.pending is not None or not metadata.state.is_prepare:
        return TxnStep(metadata)
    complete = TxnState.COMPLETE_COMMIT if metadata.state == TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
    target = metadata.evolve(state=complete, partitions=frozenset(), last_update_ms=now_ms)
    if metadata.next_producer_id != NO_PRODUCER_ID:
        # The epoch ran out: the markers ended the transaction under the old id, the producer goes on with the new.
        target = target.evolve(
            producer_id=metadata.next_producer_id,
            producer_epoch=0,
            previous_producer_id=metadata.producer_id,
            next_producer_id=NO_PRODUCER_ID,
        )
    return _write(metadata, target, None)


def _producer_after(metadata: TxnMetadata) -> tuple[int, int]:
    """The producer id and epoch the client goes on with once this state is written: the next id at epoch 0
    where the transaction rolls over to one."""
    if metadata.next_producer_id != NO_PRODUCER_ID:
        return metadata.next_producer_id, 0
    return metadata.producer_id, metadata.producer_epoch


def resume(metadata: TxnMetadata) -> TxnStep:
    """A coordinator that loads a Prepare state finishes the transaction: its markers are written again."""
    if metadata.pending is None and metadata.state.is_prepare:
        commit = metadata.state == TxnState.PREPARE_COMMIT
        markers = WriteMarkers(
            metadata.producer_id, metadata.producer_epoch, commit, metadata.partitions, metadata.client_version
        )
        return TxnStep(metadata, (markers,))
    return TxnStep(metadata)


def expire(metadata: TxnMetadata, now_ms: int) -> TxnStep:
    """Kafka's abortTimedOutTransactions: a transaction open longer than its timeout is aborted, its producer
    fenced by an epoch bump."""
    if metadata.state != TxnState.ONGOING or metadata.pending is not None:
        return TxnStep(metadata)
    if now_ms - metadata.start_ms <= metadata.timeout_ms:
        return TxnStep(metadata)
    if metadata.producer_epoch >= MAX_PRODUCER_EPOCH - 1:
        return TxnStep(metadata)  # no epoch left to fence with: the next InitProducerId takes a new id
    return _fence_and_abort(metadata, now_ms, f"open longer than its timeout of {metadata.timeout_ms} ms")

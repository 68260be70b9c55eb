"""transaction.version 2 (KIP-890 part 2) in the coordinator's pure core: an EndTxn of version 5 bumps the producer
epoch, so the markers and the next transaction carry the new epoch and an EndTxn of the previous transaction that
arrives late is fenced; an epoch about to run out rolls over to a new producer id."""

from __future__ import annotations

from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.transaction import core
from minikafka.broker.transaction.core import Reply, TxnConfig, TxnStep, WriteMarkers, WriteState
from minikafka.broker.transaction.records import decode_value, encode_value
from minikafka.broker.transaction.state import MAX_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnMetadata, TxnState
from minikafka.common.errors import ErrorCode

CONFIG = TxnConfig(max_timeout_ms=900_000)
P0, P1 = TopicPartitionKey("orders", 0), TopicPartitionKey("orders", 1)
TXN = "payments-1"
TV2 = 2


def completed(step: TxnStep, error: ErrorCode = ErrorCode.NONE) -> TxnStep:
    assert step.metadata is not None
    [write] = [e for e in step.effects if isinstance(e, WriteState)]
    return core.written(step.metadata, write.target, write.request_id, error)


def replies(step: TxnStep) -> list[Reply]:
    return [e for e in step.effects if isinstance(e, Reply)]


def writes(step: TxnStep) -> list[WriteState]:
    return [e for e in step.effects if isinstance(e, WriteState)]


def markers(step: TxnStep) -> list[WriteMarkers]:
    return [e for e in step.effects if isinstance(e, WriteMarkers)]


def ongoing(epoch: int = 0, now: int = 0) -> TxnMetadata:
    ready = completed(core.init_producer_id(None, TXN, 60_000, None, 100, 1, now, CONFIG)).metadata
    assert ready is not None
    ready = ready.evolve(producer_epoch=epoch)
    step = completed(core.add_partitions(ready, 100, epoch, [P0, P1], 2, now))
    assert step.metadata is not None
    return step.metadata


def ended(metadata: TxnMetadata, commit: bool, epoch: int, fresh: int = NO_PRODUCER_ID) -> TxnMetadata:
    """EndTxn v5 from the producer at `epoch`, its state written, the markers written, the completion written."""
    prepared = completed(core.end_txn(metadata, 100, epoch, commit, 9, 10, TV2, fresh))
    assert prepared.metadata is not None and replies(prepared)[0].error == ErrorCode.NONE
    complete = completed(core.markers_written(prepared.metadata, 11))
    assert complete.metadata is not None
    return complete.metadata


def test_end_txn_v5_bumps_the_epoch_writes_the_markers_with_it_and_answers_it() -> None:
    step = core.end_txn(ongoing(), 100, 0, True, 9, 10, TV2)
    [write] = writes(step)
    assert (write.target.state, write.target.producer_epoch, write.target.last_producer_epoch) == (
        TxnState.PREPARE_COMMIT,
        1,
        0,
    )
    prepared = completed(step)
    assert replies(prepared) == [Reply(9, ErrorCode.NONE, 100, 1)]
    assert markers(prepared) == [WriteMarkers(100, 1, True, frozenset({P0, P1}), transaction_version=2)]
    assert prepared.metadata is not None
    complete = completed(core.markers_written(prepared.metadata, 11))
    assert complete.metadata is not None
    assert (complete.metadata.state, complete.metadata.producer_id, complete.metadata.producer_epoch) == (
        TxnState.COMPLETE_COMMIT,
        100,
        1,
    )


def test_end_txn_below_v5_keeps_the_epoch() -> None:
    prepared = completed(core.end_txn(ongoing(), 100, 0, True, 9, 10))
    assert replies(prepared) == [Reply(9, ErrorCode.NONE, 100, 0)]
    assert markers(prepared) == [WriteMarkers(100, 0, True, frozenset({P0, P1}))]


def test_a_delayed_end_txn_of_the_last_transaction_is_fenced_in_the_next_one() -> None:
    after = ended(ongoing(), commit=True, epoch=0)
    following = completed(core.add_partitions(after, 100, 1, [P0], 3, 20))
    assert following.metadata is not None and following.metadata.state == TxnState.ONGOING
    late = core.end_txn(following.metadata, 100, 0, True, 4, 21, TV2)
    assert replies(late) == [Reply(4, ErrorCode.PRODUCER_FENCED)]
    assert writes(late) == [] and late.metadata == following.metadata
    late_abort = core.end_txn(following.metadata, 100, 0, False, 5, 21, TV2)
    assert replies(late_abort) == [Reply(5, ErrorCode.PRODUCER_FENCED)]


def test_without_the_bump_the_same_late_end_txn_commits_the_next_transaction() -> None:
    prepared = completed(core.end_txn(ongoing(), 100, 0, True, 9, 10))
    assert prepared.metadata is not None
    after = completed(core.markers_written(prepared.metadata, 11)).metadata
    assert after is not None
    following = completed(core.add_partitions(after, 100, 0, [P0], 3, 20)).metadata
    assert following is not None
    late = completed(core.end_txn(following, 100, 0, True, 4, 21))
    assert replies(late) == [Reply(4, ErrorCode.NONE, 100, 0)]
    assert markers(late) == [WriteMarkers(100, 0, True, frozenset({P0}))]


def test_a_retried_end_txn_v5_is_answered_with_the_epoch_it_bumped_to() -> None:
    after = ended(ongoing(), commit=True, epoch=0)
    assert replies(core.end_txn(after, 100, 0, True, 4, 21, TV2)) == [Reply(4, ErrorCode.NONE, 100, 1)]
    assert replies(core.end_txn(after, 100, 0, False, 5, 21, TV2)) == [Reply(5, ErrorCode.INVALID_TXN_STATE)]
    # At the current epoch a commit with nothing open is not a retry: there is no transaction to commit.
    assert replies(core.end_txn(after, 100, 1, True, 6, 21, TV2)) == [Reply(6, ErrorCode.INVALID_TXN_STATE)]
    assert replies(core.end_txn(after, 100, 3, True, 7, 21, TV2)) == [Reply(7, ErrorCode.PRODUCER_FENCED)]


def test_a_retry_while_the_markers_are_written_is_concurrent_transactions() -> None:
    prepared = completed(core.end_txn(ongoing(), 100, 0, True, 9, 10, TV2))
    assert prepared.metadata is not None
    assert replies(core.end_txn(prepared.metadata, 100, 0, True, 4, 11, TV2)) == [
        Reply(4, ErrorCode.CONCURRENT_TRANSACTIONS)
    ]
    assert replies(core.end_txn(prepared.metadata, 100, 1, True, 5, 11, TV2)) == [Reply(5, ErrorCode.PRODUCER_FENCED)]


def test_an_abort_with_nothing_open_is_written_with_a_bumped_epoch() -> None:
    """A v2 producer adds no partition itself, so it cannot know whether its transaction began: it may abort."""
    after = ended(ongoing(), commit=True, epoch=0)
    step = core.end_txn(after, 100, 1, False, 4, 30, TV2)
    [write] = writes(step)
    assert (write.target.state, write.target.partitions, write.target.producer_epoch) == (
        TxnState.PREPARE_ABORT,
        frozenset(),
        2,
    )
    prepared = completed(step)
    assert replies(prepared) == [Reply(4, ErrorCode.NONE, 100, 2)]


def test_an_epoch_about_to_run_out_rolls_over_to_the_next_producer_id() -> None:
    worn = ongoing(epoch=MAX_PRODUCER_EPOCH - 1)
    assert core.end_txn_needs_new_producer_id(worn, TV2)
    assert not core.end_txn_needs_new_producer_id(worn, 0)
    assert not core.end_txn_needs_new_producer_id(ongoing(), TV2)
    step = core.end_txn(worn, 100, MAX_PRODUCER_EPOCH - 1, True, 9, 10, TV2, 555)
    [write] = writes(step)
    assert (write.target.producer_id, write.target.producer_epoch, write.target.next_producer_id) == (
        100,
        MAX_PRODUCER_EPOCH,
        555,
    )
    prepared = completed(step)
    # The markers end the transaction under the old id; the producer goes on with the new one.
    assert markers(prepared) == [
        WriteMarkers(100, MAX_PRODUCER_EPOCH, True, frozenset({P0, P1}), transaction_version=2)
    ]
    assert replies(prepared) == [Reply(9, ErrorCode.NONE, 555, 0)]
    assert prepared.metadata is not None
    complete = completed(core.markers_written(prepared.metadata, 11)).metadata
    assert complete is not None
    assert (complete.producer_id, complete.producer_epoch, complete.previous_producer_id) == (555, 0, 100)
    assert complete.next_producer_id == NO_PRODUCER_ID
    retried = core.end_txn(complete, 100, MAX_PRODUCER_EPOCH - 1, True, 12, 12, TV2)
    assert replies(retried) == [Reply(12, ErrorCode.NONE, 555, 0)]
    assert replies(core.add_partitions(complete, 555, 0, [P0], 13, 13)) == []


def test_a_roll_over_without_a_new_producer_id_is_not_written() -> None:
    worn = ongoing(epoch=MAX_PRODUCER_EPOCH - 1)
    step = core.end_txn(worn, 100, MAX_PRODUCER_EPOCH - 1, True, 9, 10, TV2)
    assert replies(step) == [Reply(9, ErrorCode.COORDINATOR_NOT_AVAILABLE)] and writes(step) == []


def test_a_version_2_state_record_keeps_its_tagged_fields() -> None:
    prepared = completed(core.end_txn(ongoing(epoch=MAX_PRODUCER_EPOCH - 1), 100, MAX_PRODUCER_EPOCH - 1, True, 9, 10,
                                      TV2, 555))  # fmt: skip
    assert prepared.metadata is not None
    metadata = prepared.metadata.evolve(last_producer_epoch=-1, previous_producer_id=42)
    assert metadata.client_version == TV2
    assert decode_value(TXN, encode_value(metadata)) == metadata
    plain = ongoing(now=77).evolve(last_producer_epoch=-1)
    assert encode_value(plain)[:2] == b"\x00\x00"  # version 0, as before, for a producer of version 0
    assert decode_value(TXN, encode_value(plain)) == plain


def test_a_coordinator_taking_over_mid_roll_over_finishes_it() -> None:
    """The Prepare state is read back from __transaction_state by the next coordinator: it writes the markers
    under the old id again, then completes the roll-over to the new one."""
    step = core.end_txn(ongoing(epoch=MAX_PRODUCER_EPOCH - 1), 100, MAX_PRODUCER_EPOCH - 1, True, 9, 10, TV2, 555)
    prepared = completed(step).metadata
    assert prepared is not None
    loaded = decode_value(TXN, encode_value(prepared))
    assert core.resume(loaded).effects == (
        WriteMarkers(100, MAX_PRODUCER_EPOCH, True, frozenset({P0, P1}), transaction_version=2),
    )
    complete = completed(core.markers_written(loaded, 11)).metadata
    assert complete is not None
    assert (complete.producer_id, complete.producer_epoch, complete.state) == (555, 0, TxnState.COMPLETE_COMMIT)


def test_a_timed_out_transaction_of_version_2_is_fenced_then_bumped_by_its_end() -> None:
    """Kafka's TV2 timeout: the fence bumps the epoch, the abort bumps it again, so the producer's own EndTxn at
    its old epoch is no retry (which would be answered NONE) but PRODUCER_FENCED."""
    ready = completed(core.init_producer_id(None, TXN, 60_000, None, 100, 1, 0, CONFIG)).metadata
    assert ready is not None
    open_ = completed(core.add_partitions(ready, 100, 0, [P0], 2, 1_000, TV2)).metadata
    assert open_ is not None and open_.client_version == TV2
    prepared = completed(core.expire(open_, 61_001))
    assert markers(prepared) == [WriteMarkers(100, 2, False, frozenset({P0}), transaction_version=2)]
    assert prepared.metadata is not None
    complete = completed(core.markers_written(prepared.metadata, 61_002)).metadata
    assert complete is not None and complete.state == TxnState.COMPLETE_ABORT
    assert replies(core.end_txn(complete, 100, 0, False, 5, 61_003, TV2)) == [Reply(5, ErrorCode.PRODUCER_FENCED)]
    # A transaction of version 0 is fenced with one bump, as before.
    assert markers(completed(core.expire(ongoing(now=1_000), 61_001)))[0].producer_epoch == 1

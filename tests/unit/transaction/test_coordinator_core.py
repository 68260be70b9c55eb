"""The transaction coordinator's pure core: Kafka's transitions and answers, run as the shell runs them (a write is
in force only once `written` says it succeeded)."""

from __future__ import annotations

from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.transaction import core
from minikafka.broker.transaction.core import Reply, TxnConfig, TxnStep, WriteMarkers, WriteState
from minikafka.broker.transaction.records import decode_key, decode_value, encode_key, encode_value
from minikafka.broker.transaction.state import MAX_PRODUCER_EPOCH, TxnMetadata, TxnState
from minikafka.common.errors import ErrorCode

CONFIG = TxnConfig(max_timeout_ms=900_000)
P0, P1 = TopicPartitionKey("orders", 0), TopicPartitionKey("orders", 1)
TXN = "payments-1"


def completed(step: TxnStep, error: ErrorCode = ErrorCode.NONE) -> TxnStep:
    """Run the step's one write to its end, as the shell does, and return the step `written` gives."""
    assert step.metadata is not None
    [write] = [e for e in step.effects if isinstance(e, WriteState)]
    return core.written(step.metadata, write.target, write.request_id, error)


def replies(step: TxnStep) -> list[Reply]:
    return [e for e in step.effects if isinstance(e, Reply)]


def initialised(metadata: TxnMetadata | None = None, now: int = 0) -> TxnMetadata:
    step = completed(core.init_producer_id(metadata, TXN, 60_000, None, 100, 1, now, CONFIG))
    assert step.metadata is not None and replies(step)[0].error == ErrorCode.NONE
    return step.metadata


def ongoing(now: int = 0) -> TxnMetadata:
    step = completed(core.add_partitions(initialised(), 100, 0, [P0, P1], 2, now))
    assert step.metadata is not None
    return step.metadata


def test_a_new_transactional_id_gets_its_producer_id_at_epoch_zero_once_written() -> None:
    step = core.init_producer_id(None, TXN, 60_000, None, 100, 1, 0, CONFIG)
    assert step.metadata is not None and step.metadata.pending == TxnState.EMPTY and not replies(step)
    done = completed(step)
    assert replies(done) == [Reply(1, ErrorCode.NONE, 100, 0)]
    assert done.metadata is not None and done.metadata.pending is None


def test_init_producer_id_again_bumps_the_epoch_and_fences_the_old_producer() -> None:
    again = completed(core.init_producer_id(initialised(), TXN, 60_000, None, 999, 3, 5, CONFIG))
    assert replies(again) == [Reply(3, ErrorCode.NONE, 100, 1)]
    assert again.metadata is not None
    fenced = core.add_partitions(again.metadata, 100, 0, [P0], 4, 6)
    assert replies(fenced) == [Reply(4, ErrorCode.PRODUCER_FENCED)]


def test_an_exhausted_epoch_takes_a_new_producer_id() -> None:
    worn = initialised().evolve(producer_epoch=MAX_PRODUCER_EPOCH - 1)
    assert core.needs_new_producer_id(worn)
    step = completed(core.init_producer_id(worn, TXN, 60_000, None, 555, 1, 0, CONFIG))
    assert replies(step) == [Reply(1, ErrorCode.NONE, 555, 0)]


def test_a_transaction_timeout_above_the_maximum_is_refused() -> None:
    step = core.init_producer_id(None, TXN, 900_001, None, 100, 1, 0, CONFIG)
    assert replies(step) == [Reply(1, ErrorCode.INVALID_TRANSACTION_TIMEOUT)] and step.metadata is None


def test_init_producer_id_during_a_transaction_aborts_it_with_a_bumped_epoch() -> None:
    step = core.init_producer_id(ongoing(), TXN, 60_000, None, 999, 7, 10, CONFIG)
    assert replies(step) == [Reply(7, ErrorCode.CONCURRENT_TRANSACTIONS)]
    [write] = [e for e in step.effects if isinstance(e, WriteState)]
    assert (write.target.state, write.target.producer_epoch) == (TxnState.PREPARE_ABORT, 1)
    prepared = completed(step)
    markers = [e for e in prepared.effects if isinstance(e, WriteMarkers)]
    assert markers == [WriteMarkers(100, 1, False, frozenset({P0, P1}))]


def test_kip_360_a_retried_bump_is_answered_again_and_a_stale_one_fenced() -> None:
    bumped = completed(core.init_producer_id(initialised(), TXN, 60_000, (100, 0), 999, 3, 5, CONFIG))
    assert replies(bumped) == [Reply(3, ErrorCode.NONE, 100, 1)]
    assert bumped.metadata is not None
    retried = core.init_producer_id(bumped.metadata, TXN, 60_000, (100, 0), 999, 4, 6, CONFIG)
    assert replies(retried) == [Reply(4, ErrorCode.NONE, 100, 1)]
    stale = core.init_producer_id(bumped.metadata, TXN, 60_000, (100, 7), 999, 5, 6, CONFIG)
    assert replies(stale) == [Reply(5, ErrorCode.PRODUCER_FENCED)]


def test_add_partitions_checks_the_producer_then_writes_ongoing() -> None:
    ready = initialised()
    assert replies(core.add_partitions(None, 100, 0, [P0], 1, 0)) == [Reply(1, ErrorCode.INVALID_PRODUCER_ID_MAPPING)]
    assert replies(core.add_partitions(ready, 101, 0, [P0], 1, 0)) == [Reply(1, ErrorCode.INVALID_PRODUCER_ID_MAPPING)]
    assert replies(core.add_partitions(ready, 100, 3, [P0], 1, 0)) == [Reply(1, ErrorCode.PRODUCER_FENCED)]
    step = core.add_partitions(ready, 100, 0, [P0], 1, 50)
    assert step.metadata is not None
    assert replies(core.add_partitions(step.metadata, 100, 0, [P1], 2, 51)) == [
        Reply(2, ErrorCode.CONCURRENT_TRANSACTIONS)
    ]
    done = completed(step)
    assert done.metadata is not None
    assert (done.metadata.state, done.metadata.partitions, done.metadata.start_ms) == (
        TxnState.ONGOING,
        frozenset({P0}),
        50,
    )
    again = core.add_partitions(done.metadata, 100, 0, [P0], 3, 60)
    assert replies(again) == [Reply(3, ErrorCode.NONE)] and not [e for e in again.effects if isinstance(e, WriteState)]


def test_end_txn_prepares_answers_then_writes_markers_then_completes() -> None:
    step = core.end_txn(ongoing(), 100, 0, True, 9, 100)
    prepared = completed(step)
    assert replies(prepared) == [Reply(9, ErrorCode.NONE, 100, 0)]
    assert [e for e in prepared.effects if isinstance(e, WriteMarkers)] == [
        WriteMarkers(100, 0, True, frozenset({P0, P1}))
    ]
    assert prepared.metadata is not None
    # Until the markers are written, a retry is CONCURRENT_TRANSACTIONS, an abort INVALID_TXN_STATE.
    assert replies(core.end_txn(prepared.metadata, 100, 0, True, 10, 101)) == [
        Reply(10, ErrorCode.CONCURRENT_TRANSACTIONS)
    ]
    assert replies(core.end_txn(prepared.metadata, 100, 0, False, 11, 101)) == [Reply(11, ErrorCode.INVALID_TXN_STATE)]
    complete = completed(core.markers_written(prepared.metadata, 102))
    assert complete.metadata is not None
    assert (complete.metadata.state, complete.metadata.partitions) == (TxnState.COMPLETE_COMMIT, frozenset())
    assert replies(core.end_txn(complete.metadata, 100, 0, True, 12, 103)) == [Reply(12, ErrorCode.NONE)]
    assert replies(core.end_txn(complete.metadata, 100, 0, False, 13, 103)) == [Reply(13, ErrorCode.INVALID_TXN_STATE)]


def test_a_completion_whose_write_fails_is_written_again_while_this_broker_coordinates() -> None:
    """Its markers are written: the transaction stays in PrepareCommit (CONCURRENT_TRANSACTIONS to its producer)
    only until the retried write lands, as Kafka retries the complete state's append; not once the partition
    moved (NOT_LEADER_OR_FOLLOWER: the next coordinator resumes it from the log)."""
    prepared = completed(core.end_txn(ongoing(), 100, 0, True, 9, 100))
    assert prepared.metadata is not None
    completing = core.markers_written(prepared.metadata, 102)
    timed_out = completed(completing, ErrorCode.REQUEST_TIMED_OUT)
    assert core.RetryCompletion() in timed_out.effects
    assert timed_out.metadata is not None and timed_out.metadata.state == TxnState.PREPARE_COMMIT
    again = completed(core.markers_written(timed_out.metadata, 103))
    assert again.metadata is not None and again.metadata.state == TxnState.COMPLETE_COMMIT
    moved = completed(completing, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert not [e for e in moved.effects if isinstance(e, core.RetryCompletion)]


def test_end_txn_without_a_transaction_is_invalid_txn_state() -> None:
    assert replies(core.end_txn(initialised(), 100, 0, True, 1, 0)) == [Reply(1, ErrorCode.INVALID_TXN_STATE)]


def test_a_failed_write_drops_the_pending_state_and_says_why_in_kafkas_terms() -> None:
    step = core.end_txn(ongoing(), 100, 0, True, 9, 100)
    failed = completed(step, ErrorCode.NOT_ENOUGH_REPLICAS)
    assert replies(failed) == [Reply(9, ErrorCode.COORDINATOR_NOT_AVAILABLE)]
    assert failed.metadata is not None
    assert (failed.metadata.state, failed.metadata.pending) == (TxnState.ONGOING, None)


def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced() -> None:
    open_ = ongoing(now=1_000)
    assert core.expire(open_, 61_000).effects == ()
    step = core.expire(open_, 61_001)
    prepared = completed(step)
    assert prepared.metadata is not None
    assert (prepared.metadata.state, prepared.metadata.producer_epoch) == (TxnState.PREPARE_ABORT, 1)
    assert [e for e in prepared.effects if isinstance(e, WriteMarkers)] == [
        WriteMarkers(100, 1, False, frozenset({P0, P1}))
    ]
    # The old producer's commit is refused: its epoch is fenced.
    assert replies(core.end_txn(prepared.metadata, 100, 0, True, 5, 61_002)) == [Reply(5, ErrorCode.PRODUCER_FENCED)]


def test_a_loaded_prepare_state_writes_its_markers_again() -> None:
    prepared = ongoing().evolve(state=TxnState.PREPARE_ABORT)
    assert core.resume(prepared).effects == (WriteMarkers(100, 0, False, frozenset({P0, P1})),)
    assert core.resume(ongoing()).effects == ()


def test_verify_only_accepts_just_the_partitions_of_the_transaction_under_way() -> None:
    answers = core.verify_partitions(ongoing(), 100, 0, [P0, TopicPartitionKey("other", 0)])
    assert answers == {P0: ErrorCode.NONE, TopicPartitionKey("other", 0): ErrorCode.INVALID_TXN_STATE}
    assert core.verify_partitions(initialised(), 100, 0, [P0]) == {P0: ErrorCode.INVALID_TXN_STATE}
    assert core.verify_partitions(ongoing(), 100, 1, [P0]) == {P0: ErrorCode.PRODUCER_FENCED}


def test_the_state_record_reads_back_equal() -> None:
    metadata = ongoing(now=77).evolve(last_producer_epoch=-1)
    assert decode_key(encode_key(TXN)) == TXN
    assert decode_value(TXN, encode_value(metadata)) == metadata

"""A transactional id's state at its coordinator (Kafka's TransactionMetadata and TransactionState): the producer id
and epoch it hands out, the partitions of the transaction under way, and where that transaction stands.
Immutable: every transition returns a new TxnMetadata."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from minikafka.broker.group.state import TopicPartitionKey

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 32767  # Short.MAX_VALUE: an epoch that would pass it takes a new producer id
EPOCH_BUMP_VERSION = 2  # transaction.version from which every EndTxn bumps the producer epoch (KIP-890 part 2)


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's isProducerEpochExhausted: the last epoch is kept for the coordinator to fence with."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


class TxnState(IntEnum):
    """Kafka's TransactionState ids, as the __transaction_state records store them."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """As DescribeTransactions and ListTransactions name it (Kafka's TransactionState.name)."""
        return "".join(word.capitalize() for word in self.name.split("_"))

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


# Kafka's TransactionState.validPreviousStates: the states each one may follow.
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset({TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    # From Empty or a completed transaction: an abort of transaction.version 2 with nothing open.
    TxnState.PREPARE_ABORT: frozenset(
        {
            TxnState.ONGOING,
            TxnState.PREPARE_EPOCH_FENCE,
            TxnState.EMPTY,
            TxnState.COMPLETE_COMMIT,
            TxnState.COMPLETE_ABORT,
        }
    ),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}


@dataclass(frozen=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    last_producer_epoch: int  # the epoch before the last bump (a retried InitProducerId is recognised by it)
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartitionKey]
    start_ms: int  # when the transaction under way began; -1 when none
    last_update_ms: int
    # A state being written to __transaction_state (Kafka's pendingState): nothing else may start meanwhile.
    pending: TxnState | None = None
    # transaction.version 2 (KIP-890 part 2): the producer id the transaction ended under before an epoch roll-over
    # (a retried EndTxn of it is recognised), and the one it rolls over to once its markers are written.
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_version: int = 0  # the transaction version of the producer's last EndTxn (Kafka's clientTransactionVersion)

    def evolve(self, **changes: Any) -> TxnMetadata:
        return dataclasses.replace(self, **changes)

    def can_move_to(self, state: TxnState) -> bool:
        return self.state in VALID_PREVIOUS[state]


def new_metadata(transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int) -> TxnMetadata:
    return TxnMetadata(
        transactional_id,
        producer_id,
        NO_PRODUCER_EPOCH,
        NO_PRODUCER_EPOCH,
        timeout_ms,
        TxnState.EMPTY,
        frozenset(),
        -1,
        now_ms,
    )

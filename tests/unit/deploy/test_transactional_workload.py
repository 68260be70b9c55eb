"""The chaos run's transactional producer against a scripted coordinator and leaders: what it sends to end a
transaction when a request fails, and the history lines it writes for it."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

from minikafka.common.errors import ErrorCode
from minikafka.deploy.transactional_workload import ChaosTransactionalProducer, Outcome, history_lines


class ScriptedBroker:
    """Answers AddPartitionsToTxn with NONE, each Produce with the next scripted error (NONE: appended at the next
    offset), EndTxn with `end_error`; remembers the EndTxn results asked for."""

    def __init__(self, produce_errors: list[ErrorCode], end_error: ErrorCode = ErrorCode.NONE) -> None:
        self.produce_errors, self.end_error = produce_errors, end_error
        self.ends: list[bool] = []
        self.next_offset = 10

    def connection(self, address: str) -> ScriptedBroker:
        return self

    async def any_broker(self, body: Any) -> Any:
        assert type(body).__name__ == "ApiVersionsRequest"  # transaction.version not finalized: version 0
        return SimpleNamespace(error_code=0, finalized_features=[], finalized_features_epoch=1)

    async def send(self, body: Any) -> Any:
        name = type(body).__name__
        if name == "AddPartitionsToTxnRequest":
            partitions = [SimpleNamespace(partition_error_code=0) for _ in body.v3_and_below_topics[0].partitions]
            return SimpleNamespace(results_by_topic_v3_and_below=[SimpleNamespace(results_by_partition=partitions)])
        if name == "ProduceRequest":
            error = self.produce_errors.pop(0)
            appended = error == ErrorCode.NONE
            line = SimpleNamespace(base_offset=self.next_offset if appended else -1, error_code=error.value)
            self.next_offset += 3 if appended else 0
            return SimpleNamespace(responses=[SimpleNamespace(partition_responses=[line])])
        assert name == "EndTxnRequest", name
        self.ends.append(body.committed)
        return SimpleNamespace(error_code=self.end_error.value)


def producer_of(broker: ScriptedBroker) -> ChaosTransactionalProducer:
    producer = ChaosTransactionalProducer(broker, "chaos-t0", "chaos-txn", [0, 1, 2])  # type: ignore[arg-type]
    producer.coordinator = "coordinator:1"
    producer.leaders = {0: "leader:1", 1: "leader:1", 2: "leader:1"}
    return producer


VALUES = {p: [f"t0-000007-{p}-{i}".encode() for i in range(3)] for p in (0, 1, 2)}


def run_transaction(broker: ScriptedBroker, commit: bool) -> Outcome:
    return asyncio.run(producer_of(broker).transaction(VALUES, commit))


def lines(outcome: Outcome) -> list[dict]:
    return [json.loads(line) for line in history_lines("chaos-txn", "chaos-t0", 7, outcome, 5.0).splitlines()]


def test_a_committed_transaction_logs_every_record_at_its_offset() -> None:
    broker = ScriptedBroker([ErrorCode.NONE] * 3)
    outcome = run_transaction(broker, commit=True)
    assert broker.ends == [True] and not outcome.failed
    written = lines(outcome)
    expected = [(p, 10 + 3 * p + i) for p in (0, 1, 2) for i in range(3)]
    assert [(w["partition"], w["offset"]) for w in written] == expected
    assert {(w["transaction"], w["transaction_end"], w["end_acknowledged"], w["error"]) for w in written} == {
        (7, "commit", True, None)
    }


def test_a_failed_produce_ends_the_transaction_with_an_abort() -> None:
    broker = ScriptedBroker([ErrorCode.NONE, ErrorCode.INVALID_TXN_STATE])
    outcome = run_transaction(broker, commit=True)
    assert broker.ends == [False] and outcome.failed and outcome.end_acknowledged
    by_partition: dict[int, dict] = {}
    for line in lines(outcome):
        by_partition.setdefault(line["partition"], line)  # each partition's first record
    assert by_partition[0]["offset"] == 10 and by_partition[0]["error"] is None
    assert (by_partition[1]["offset"], by_partition[1]["error"]) == (None, "INVALID_TXN_STATE")
    assert (by_partition[2]["error"], by_partition[2]["definite"]) == ("NOT_SENT", True)
    assert {w["transaction_end"] for w in by_partition.values()} == {"abort"}


def test_an_unanswered_commit_is_logged_as_not_acknowledged() -> None:
    broker = ScriptedBroker([ErrorCode.NONE] * 3, end_error=ErrorCode.PRODUCER_FENCED)
    outcome = run_transaction(broker, commit=True)
    assert broker.ends == [True] and outcome.failed  # the producer starts again with InitProducerId
    assert {(w["transaction_end"], w["end_acknowledged"]) for w in lines(outcome)} == {("commit", False)}


def test_a_crash_mid_transaction_leaves_half_the_batches_and_no_end_txn() -> None:
    broker = ScriptedBroker([ErrorCode.NONE] * 3)
    outcome = asyncio.run(producer_of(broker).crash(VALUES, commit=True, unanswered_commit=False))
    assert broker.ends == [] and not outcome.failed and not outcome.end_acknowledged
    written = lines(outcome)
    assert {w["transaction_end"] for w in written} == {"abort"}  # the next session's InitProducerId aborts it
    assert [w["partition"] for w in written if w["error"] is None] == [0, 0, 0]
    assert {w["error"] for w in written if w["partition"] != 0} == {"NOT_SENT"}


def test_a_crash_after_end_txn_commit_is_an_unanswered_commit() -> None:
    broker = ScriptedBroker([ErrorCode.NONE] * 3)
    outcome = asyncio.run(producer_of(broker).crash(VALUES, commit=True, unanswered_commit=True))
    assert broker.ends in ([], [True])  # sent or not when the producer went: it never learns which
    assert {(w["transaction_end"], w["end_acknowledged"], w["error"]) for w in lines(outcome)} == {
        ("commit", False, None)
    }

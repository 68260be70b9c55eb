"""`TransactionalSession.send_offsets_to_transaction` (Kafka's sendOffsetsToTransaction): AddOffsetsToTxn to the
transaction coordinator (not at transaction version 2), then TxnOffsetCommit to the group's coordinator naming the
member and generation; retriable errors retried, a coordinator that moved looked up again, refusals raised with
Kafka's error name and code."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from minikafka.client import transactional_session
from minikafka.client.transaction_protocol import TransactionProtocol
from minikafka.client.transactional_session import ConsumerGroupMetadata, TransactionalSession
from minikafka.common.errors import ErrorCode, KafkaError

TXN_COORDINATOR, GROUP_COORDINATOR, MOVED_GROUP_COORDINATOR = "b1:9094", "b2:9094", "b3:9094"
GROUP = ConsumerGroupMetadata("eos", generation_id=4, member_id="m-1")


class FakeBrokers:
    """Answers FindCoordinator by key type, and AddOffsetsToTxn / TxnOffsetCommit with the scripted errors in
    turn (NONE once they run out); records (address, api key, version, request) of every other request."""

    def __init__(self, add_offsets: list[ErrorCode] | None = None, txn_commit: list[ErrorCode] | None = None) -> None:
        self.add_offsets = list(add_offsets or [])
        self.txn_commit = list(txn_commit or [])
        self.sent: list[tuple[str, int, int, Any]] = []
        self.group_lookups = 0

    async def any_broker(self, body: Any) -> Any:
        assert type(body).__api_key__ == 10
        if body.key_type == 1:
            host, _, port = TXN_COORDINATOR.partition(":")
        else:
            self.group_lookups += 1
            address = GROUP_COORDINATOR if self.group_lookups == 1 else MOVED_GROUP_COORDINATOR
            host, _, port = address.partition(":")
        return SimpleNamespace(error_code=0, host=host, port=int(port))

    def connection(self, address: str) -> Any:
        brokers = self

        class Connection:
            async def send(self, body: Any) -> Any:
                key, version = type(body).__api_key__, type(body).__version__
                brokers.sent.append((address, key, version, body))
                if key == 25:
                    return SimpleNamespace(error_code=_next(brokers.add_offsets))
                error = _next(brokers.txn_commit)
                topics = [
                    SimpleNamespace(partitions=[SimpleNamespace(error_code=error) for _ in t.partitions])
                    for t in body.topics
                ]
                return SimpleNamespace(topics=topics)

        return Connection()


def _next(errors: list[ErrorCode]) -> int:
    return int(errors.pop(0) if errors else ErrorCode.NONE)


def _session(brokers: FakeBrokers, v2: bool = False) -> TransactionalSession:
    session = TransactionalSession(brokers, "eos-1", "out", [0, 1], deadline_s=5.0)  # type: ignore[arg-type]
    session.producer_id, session.epoch = 7, 2
    session.protocol = TransactionProtocol(v2=v2, features_epoch=1)
    return session


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transactional_session, "RETRY_BACKOFF_S", 0.0)


async def test_add_offsets_then_txn_offset_commit_to_the_group_coordinator() -> None:
    brokers = FakeBrokers()
    await _session(brokers).send_offsets_to_transaction({("in", 1): 12, ("in", 0): 30, ("other", 2): 5}, GROUP)
    (add_to, add_key, _, add), (commit_to, commit_key, version, commit) = brokers.sent
    assert (add_to, add_key, add.group_id, add.producer_id, add.producer_epoch) == (TXN_COORDINATOR, 25, "eos", 7, 2)
    assert (commit_to, commit_key, version) == (GROUP_COORDINATOR, 28, 3)
    assert (commit.transactional_id, commit.member_id, commit.generation_id) == ("eos-1", "m-1", 4)
    assert (commit.producer_id, commit.producer_epoch) == (7, 2)
    offsets = {(t.name, p.partition_index): p.committed_offset for t in commit.topics for p in t.partitions}
    assert offsets == {("in", 0): 30, ("in", 1): 12, ("other", 2): 5}


async def test_transaction_version_2_sends_no_add_offsets() -> None:
    brokers = FakeBrokers()
    await _session(brokers, v2=True).send_offsets_to_transaction({("in", 0): 3}, GROUP)
    assert [(key, version) for _, key, version, _ in brokers.sent] == [(28, 5)]


async def test_no_offsets_sends_nothing() -> None:
    brokers = FakeBrokers()
    await _session(brokers).send_offsets_to_transaction({}, GROUP)
    assert brokers.sent == []


async def test_a_fenced_member_is_refused_with_kafkas_error() -> None:
    brokers = FakeBrokers(txn_commit=[ErrorCode.ILLEGAL_GENERATION])
    with pytest.raises(KafkaError) as refused:
        await _session(brokers).send_offsets_to_transaction({("in", 0): 3}, GROUP)
    assert refused.value.code == ErrorCode.ILLEGAL_GENERATION
    assert "ILLEGAL_GENERATION" in str(refused.value) and "22" in str(refused.value)
    assert [key for _, key, _, _ in brokers.sent] == [25, 28]  # not retried


async def test_a_fenced_producer_is_refused_at_add_offsets() -> None:
    brokers = FakeBrokers(add_offsets=[ErrorCode.PRODUCER_FENCED])
    with pytest.raises(KafkaError) as refused:
        await _session(brokers).send_offsets_to_transaction({("in", 0): 3}, GROUP)
    assert refused.value.code == ErrorCode.PRODUCER_FENCED
    assert [key for _, key, _, _ in brokers.sent] == [25]


async def test_a_moved_group_coordinator_is_looked_up_again() -> None:
    brokers = FakeBrokers(txn_commit=[ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS])
    session = _session(brokers)
    await session.send_offsets_to_transaction({("in", 0): 3}, GROUP)
    commits = [address for address, key, _, _ in brokers.sent if key == 28]
    assert commits == [GROUP_COORDINATOR, MOVED_GROUP_COORDINATOR, MOVED_GROUP_COORDINATOR]
    assert session.coordinator == TXN_COORDINATOR  # the transaction coordinator did not move


async def test_concurrent_transactions_is_retried() -> None:
    brokers = FakeBrokers(add_offsets=[ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS])
    await _session(brokers).send_offsets_to_transaction({("in", 0): 3}, GROUP)
    assert [key for _, key, _, _ in brokers.sent] == [25, 25, 25, 28]

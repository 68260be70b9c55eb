"""A delayed EndTxn (KIP-890 part 2): a transactional producer commits transaction 1, but its EndTxn(commit) is held
on the network; the producer retries it, the retry commits transaction 1, and the producer begins transaction 2 and
writes to orders-0. Only then does the held EndTxn(commit) of transaction 1 reach the coordinator. The producer then
decides to abort transaction 2.

Without transaction.version 2 the producer keeps one epoch across its transactions, so the late EndTxn carries the
epoch of the transaction under way: the coordinator takes it for transaction 2's commit, writes the COMMIT marker,
and transaction 2's record becomes visible to read_committed consumers although its producer aborts it (its abort is
refused INVALID_TXN_STATE: there is nothing left to abort). With transaction.version 2 every EndTxn bumps the
producer epoch and answers the new one (EndTxn v5): the late request carries transaction 1's epoch and is fenced
PRODUCER_FENCED, and transaction 2 ends as its producer says.

The hold is the client's: it builds the EndTxn before its retry and sends it after, as a request held in the
network would arrive. The producer picks its transaction version as Kafka's clients do, from the finalized
transaction.version in ApiVersions."""

from __future__ import annotations

import json

from minikafka.client.consumer import EARLIEST, READ_COMMITTED, Consumer, ConsumerConfig
from minikafka.client.features_command import describe_features
from minikafka.common.errors import ErrorCode
from minikafka.common.event_log import utc_timestamp
from minikafka.deploy.scenario import FAST_FAILOVER, Expect, Guard, Steps, Topology
from minikafka.deploy.scenario.clients import read_until_idle
from minikafka.deploy.scenario.transactions import WireTransactionalProducer, run_transactional_story

NAME = "delayed-end-txn"
TITLE = "an EndTxn delayed past its retry must not end the producer's next transaction"
GUARD = Guard(
    "transaction.version",
    on="2",
    off="0",
    protects="every EndTxn bumps the producer epoch (KIP-890 part 2): the late EndTxn of transaction 1 is fenced "
    "PRODUCER_FENCED, and transaction 2 is aborted as its producer asks: read_committed consumers never see it",
    without="the late EndTxn(commit) carries the epoch of transaction 2 and commits it: read_committed consumers "
    "read a record its producer aborted (an aborted read)",
)
TOPOLOGY = Topology(controllers=1, brokers=3, settings={**FAST_FAILOVER, "transaction.state.log.num.partitions": "1"})
LEADER, TOPIC, TXN = 1, "orders", "orders-writer"


def run(s: Steps) -> None:
    run_transactional_story(s, TOPIC, TXN, LEADER, _story)


def _transaction(s: Steps, producer: WireTransactionalProducer, number: int, value: bytes) -> None:
    added = s.loop.run(producer.add_partition())
    written = s.loop.run(producer.produce(producer.batch(value))) if added == ErrorCode.NONE else added
    implicit = producer.version >= 2
    s.check(
        f"the producer begins transaction {number} at epoch {producer.epoch}: "
        + (
            f"a transactional Produce v12 of {value.decode()}, which adds orders-0 to the transaction"
            if implicit
            else f"AddPartitionsToTxn orders-0, then a transactional produce of {value.decode()}"
        ),
        written == ErrorCode.NONE,
        "answered NONE",
        f"produce {written.name}" if implicit else f"AddPartitionsToTxn {added.name}, produce {written.name}",
    )


def _story(s: Steps, producer: WireTransactionalProducer) -> None:
    features = {f.feature: f for f in s.loop.run(describe_features(producer.client))}
    feature = features.get("transaction.version")
    s.check(
        "minikafka features describe",
        feature is not None and feature.finalized_version_level == (2 if s.guarded else 0),
        Expect(guarded="transaction.version finalized at 2", unguarded="transaction.version not finalized (0)"),
        "; ".join(
            f"{f.feature}: supported {f.supported_min_version}-{f.supported_max_version}, finalized "
            f"{f.finalized_version_level}"
            for f in features.values()
        ),
    )
    version = s.loop.run(producer.transaction_version())
    s.check(
        "the producer reads the finalized transaction.version in ApiVersions",
        version == (2 if s.guarded else 0),
        Expect(guarded="2: it speaks EndTxn v5, whose answer carries a new epoch", unguarded="0: EndTxn v3"),
        str(version),
    )
    s.loop.run(producer.init())
    _transaction(s, producer, 1, b"order-1")
    first_epoch = producer.epoch
    held = producer.end_request(commit=True)
    s.check("EndTxn(commit) of transaction 1 is sent, and held on the network", True, "it has not arrived", "held")
    retried = s.loop.run(producer.end(commit=True))
    s.check(
        "the producer retries EndTxn(commit) of transaction 1",
        retried == ErrorCode.NONE and producer.epoch == (first_epoch + 1 if s.guarded else first_epoch),
        Expect(
            guarded="answered NONE with the producer epoch bumped by one",
            unguarded="answered NONE; the epoch stays",
        ),
        f"{retried.name}, epoch {first_epoch} -> {producer.epoch}",
    )
    _wait_state(s, producer, "CompleteCommit", "transaction 1 is committed: its COMMIT marker is in orders-0")
    _transaction(s, producer, 2, b"order-2")
    late = s.loop.run(producer.send_end(held))
    s.check(
        "the held EndTxn(commit) of transaction 1 arrives at the coordinator",
        late == (ErrorCode.PRODUCER_FENCED if s.guarded else ErrorCode.NONE),
        Expect(
            guarded="refused PRODUCER_FENCED: its epoch is transaction 1's, older than the producer's",
            unguarded="answered NONE: the coordinator takes it for transaction 2's commit",
        ),
        late.name,
    )
    aborted = s.loop.run(producer.end(commit=False))
    s.check(
        "the producer aborts transaction 2",
        aborted == (ErrorCode.NONE if s.guarded else ErrorCode.INVALID_TXN_STATE),
        Expect(
            guarded="answered NONE: transaction 2 is aborted",
            unguarded="refused INVALID_TXN_STATE: the late EndTxn already committed it",
        ),
        aborted.name,
    )
    _wait_state(s, producer, "CompleteAbort" if s.guarded else "CompleteCommit", "the coordinator is done")
    s.quote_events("transaction_completed", transactional_id=TXN, limit=3)
    _read_committed(s, producer)


def _wait_state(s: Steps, producer: WireTransactionalProducer, state: str, expect: str) -> None:
    s.wait_for(
        f"wait for {TXN} to be {state} at its coordinator",
        lambda: s.loop.run(producer.state()) == state,
        expect,
        observed=lambda _: s.loop.run(producer.state()),
    )


def _read_committed(s: Steps, producer: WireTransactionalProducer) -> None:
    """Read orders-0 read_committed from the beginning, and write the history analyze checks (transaction 1
    committed, transaction 2 aborted by its producer; the read_committed read)."""
    read, ends = s.loop.run(_consume(s.cluster.bootstrap_servers))
    values = sorted(read.values())
    s.promise(
        "a read_committed consumer reads orders-0 from the beginning",
        values == ["order-1"],
        "order-1 only: transaction 1 committed, transaction 2 aborted",
        (", ".join(values) or "nothing") + ("" if "order-2" not in values else f": order-2 is {TXN}#2's, aborted"),
    )
    _write_history(s, read, ends)


async def _consume(bootstrap: list[str]) -> tuple[dict[int, str], list[dict]]:
    consumer = Consumer(bootstrap, ConsumerConfig(isolation_level=READ_COMMITTED))
    await consumer.assign(TOPIC, [0], EARLIEST)
    read = await read_until_idle(consumer, 10)
    await consumer.confirm_log_ends()
    ends = [end.to_json() for end in consumer.read_ends()]
    await consumer.close()
    return read, ends


def _write_history(s: Steps, read: dict[int, str], ends: list[dict]) -> None:
    history = s.cluster.run_dir / "history"
    history.mkdir(parents=True, exist_ok=True)
    now = utc_timestamp()
    produced = [
        {"ts": now, "topic": TOPIC, "partition": 0, "offset": None, "value": value, "acks": "all", "error": None,
         "latency_ms": None, "idempotent": True, "transactional_id": TXN, "transaction": number,
         "transaction_end": end, "end_acknowledged": acknowledged}
        for number, value, end, acknowledged in ((1, "order-1", "commit", True), (2, "order-2", "abort", s.guarded))
    ]  # fmt: skip
    consumed = [
        {"topic": TOPIC, "partition": 0, "offset": offset, "key": None, "value": value, "leader_epoch": None}
        for offset, value in sorted(read.items())
    ]
    (history / f"produce-{TOPIC}-txn.jsonl").write_text("".join(json.dumps(line) + "\n" for line in produced))
    (history / f"consume-{TOPIC}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in consumed + ends))

"""A hanging transaction (KIP-890): a transactional producer writes to payments-0, then a second produce of the
same transaction is held on the network; the producer gives up and aborts, the coordinator writes the ABORT marker,
and only then does the held produce arrive at the leader. A plain producer keeps writing after it.

With transaction.partition.verification.enable=true (Kafka's default since 3.6) the leader asks the coordinator
before appending the producer's first batch of a transaction, and the coordinator knows the transaction is over:
INVALID_TXN_STATE, nothing written, and the last stable offset follows the high watermark. Without it the late batch
opens a transaction no coordinator knows of: no marker will ever end it, so the LSO stops there for good and every
read_committed consumer of the partition stalls, however much is written after it.

The hold is the client's: it builds the produce before the abort and sends it after, as a request held in the
network would arrive (the cut and hold faults act between nodes, not between a client and a broker)."""

from minikafka.client.transactions_command import find_hanging
from minikafka.common.errors import ErrorCode
from minikafka.deploy.scenario import FAST_FAILOVER, Expect, Guard, Steps, Topology
from minikafka.deploy.scenario.transactions import WireTransactionalProducer, run_transactional_story

NAME = "hanging-transaction"
TITLE = "a transactional produce delayed past its transaction's abort must not open a transaction that never ends"
GUARD = Guard(
    "transaction.partition.verification.enable",
    on="true",
    off="false",
    protects="the leader verifies a producer's first transactional batch with the coordinator (KIP-890 part 1): "
    "the late produce is refused INVALID_TXN_STATE and the last stable offset keeps up with the high watermark",
    without="the late batch opens a transaction nobody will end: the LSO stops at it for good and read_committed "
    "consumers see nothing written after it",
)
TOPOLOGY = Topology(controllers=1, brokers=3, settings={**FAST_FAILOVER, "transaction.state.log.num.partitions": "1"})
LEADER, TOPIC, TXN = 1, "payments", "payments-writer"


def run(s: Steps) -> None:
    run_transactional_story(s, TOPIC, TXN, LEADER, _story)


def _story(s: Steps, producer: WireTransactionalProducer) -> None:
    s.loop.run(producer.init())
    added = s.loop.run(producer.add_partition())
    first = s.loop.run(producer.produce(producer.batch(b"payment-1"))) if added == ErrorCode.NONE else added
    s.check(
        "the producer begins a transaction: AddPartitionsToTxn payments-0, then a transactional produce",
        first == ErrorCode.NONE,
        "both answered NONE: the transaction is open at the coordinator and in payments-0",
        f"AddPartitionsToTxn {added.name}, produce {first.name}",
    )
    held = producer.batch(b"payment-2")
    s.check(
        "a second produce of the transaction is sent, and held on the network",
        True,
        "it has not reached broker 1",
        "held by the client",
    )
    aborted = s.loop.run(producer.end(commit=False))
    s.check("the producer gives up: EndTxn(abort)", aborted == ErrorCode.NONE, "answered NONE", aborted.name)
    s.wait_for(
        "wait for the coordinator to complete the abort",
        lambda: s.loop.run(producer.state()) == "CompleteAbort",
        "the ABORT marker is in payments-0 and the transaction is CompleteAbort",
        observed=lambda _: s.loop.run(producer.state()),
    )
    s.quote_events("transaction_completed", transactional_id=TXN, limit=1)
    late = s.loop.run(producer.produce(held))
    s.check(
        "the held produce arrives at broker 1",
        late == (ErrorCode.INVALID_TXN_STATE if s.guarded else ErrorCode.NONE),
        Expect(
            guarded="refused INVALID_TXN_STATE: the coordinator says payments-0 is in no ongoing transaction",
            unguarded="appended: it opens a transaction in payments-0 that no coordinator knows of",
        ),
        late.name,
    )
    if s.guarded:
        s.quote_events("transaction_verification_failed", node=f"broker-{LEADER}", limit=1)
    s.produce(TOPIC, 50, "plain acks=all writes after it are acknowledged")
    hwm, lso = s.loop.run(producer.offsets())
    s.promise(
        "the last stable offset of payments-0 (ListOffsets read_committed) against its high watermark",
        lso == hwm,
        "equal: nothing undecided holds read_committed consumers back",
        f"high watermark {hwm}, last stable offset {lso}"
        + ("" if lso == hwm else f": read_committed consumers see nothing from offset {lso} on"),
    )
    hanging = s.loop.run(find_hanging(producer.client))
    s.check(
        "minikafka transactions --find-hanging",
        [(h.topic, h.partition) for h in hanging] == ([] if s.guarded else [(TOPIC, 0)]),
        Expect(
            guarded="no transaction open in any log without its coordinator",
            unguarded=f"payments-0: producer {producer.producer_id}'s transaction, open in the log, that "
            f"{TXN}'s coordinator has as CompleteAbort",
        ),
        "; ".join(
            f"{h.topic}-{h.partition}: producer {h.producer_id} epoch {h.producer_epoch} open from offset "
            f"{h.current_txn_start_offset} (coordinator: {h.transactional_id} {h.coordinator_state})"
            for h in hanging
        )
        or "none",
    )
    s.final_read(TOPIC, "every acknowledged plain write is there")

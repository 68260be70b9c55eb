"""`minikafka transactions`: Kafka's kafka-transactions through the brokers' Kafka listeners. --list names every
transactional id and its state (ListTransactions on every broker); --describe shows one (DescribeTransactions at its
coordinator); --find-hanging lists the transactions open in a partition's log that no coordinator has under way
with that partition (DescribeProducers on each partition's leader, checked against DescribeTransactions): what a
late write outside a transaction leaves behind, and what holds a partition's last stable offset back. --abort ends
one of those (`transaction_abort.py`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass
from typing import Any

from minikafka.client.consumer_groups_command import kafka_bootstrap
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.client.transaction_abort import abort
from minikafka.common.cli_support import CliError, print_json, run_event_loop
from minikafka.common.errors import ErrorCode, KafkaError

METADATA, FIND_COORDINATOR, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 3, 10, 61, 65, 66
TRANSACTION_KEY_TYPE = 1


@dataclass(frozen=True)
class HangingTransaction:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    current_txn_start_offset: int
    transactional_id: str | None  # the id whose coordinator knows the producer, if one does
    coordinator_state: str | None  # that transaction's state there


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("transactions", help="list, describe and find hanging transactions")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="every transactional id and its state")
    action.add_argument("--describe", metavar="TRANSACTIONAL_ID", help="one transactional id")
    action.add_argument(
        "--find-hanging", action="store_true", help="transactions open in a log that no coordinator ends"
    )
    action.add_argument(
        "--abort", action="store_true", help="abort a hanging transaction (needs CLUSTER_ACTION on the cluster)"
    )
    abort_args = parser.add_argument_group("--abort", "the transaction: --start-offset, or the producer's three")
    abort_args.add_argument("--topic")
    abort_args.add_argument("--partition", type=int)
    abort_args.add_argument("--start-offset", type=int, help="where the transaction starts in the partition")
    abort_args.add_argument("--producer-id", type=int)
    abort_args.add_argument("--producer-epoch", type=int)
    abort_args.add_argument("--coordinator-epoch", type=int)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", metavar="RUN", help="the run directory (default: the newest under ./runs/)")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="any broker's Kafka listener")
    parser.set_defaults(func=transactions_command)


def transactions_command(args: argparse.Namespace) -> int:
    producer = _abort_target(args) if args.abort else None
    client = KafkaWireClient(kafka_bootstrap(args))

    async def run() -> Any:
        try:
            if args.list:
                return await list_transactions(client)
            if args.describe:
                return await describe(client, args.describe)
            if args.abort:
                return asdict(await abort(client, args.topic, args.partition, args.start_offset, producer))
            return [asdict(h) for h in await find_hanging(client)]
        finally:
            await client.close()

    try:
        result = run_event_loop(run())
    except KafkaError as error:
        raise CliError(f"{error.code.name}: {error.message}") from None
    if args.json:
        print_json(result)
    else:
        _print_text(args, result)
    return 0


def _abort_target(args: argparse.Namespace) -> tuple[int, int, int] | None:
    """The producer named by --producer-id, --producer-epoch and --coordinator-epoch; None with --start-offset."""
    if args.topic is None or args.partition is None:
        raise CliError("--abort needs --topic and --partition")
    if args.start_offset is not None:
        return None
    named = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
    if None in named:
        raise CliError(
            "The transaction to abort must be identified either with --start-offset or with --producer-id, "
            "--producer-epoch and --coordinator-epoch"
        )
    return (args.producer_id, args.producer_epoch, args.coordinator_epoch)


async def list_transactions(client: KafkaWireClient) -> list[dict[str, object]]:
    listed: dict[str, dict[str, object]] = {}
    for address in await _brokers(client):
        response = await client.connection(address).send(
            request_class(LIST_TRANSACTIONS, 0)(state_filters=(), producer_id_filters=())
        )
        for state in response.transaction_states:
            listed[state.transactional_id] = {
                "transactional_id": state.transactional_id,
                "producer_id": state.producer_id,
                "state": state.transaction_state,
            }
    return [listed[key] for key in sorted(listed)]


async def describe(client: KafkaWireClient, transactional_id: str) -> dict[str, object]:
    found = await client.any_broker(request_class(FIND_COORDINATOR, 3)(key=transactional_id, key_type=1))
    error = ErrorCode.of(found.error_code)
    if error != ErrorCode.NONE:
        raise KafkaError(error, f"FindCoordinator for transactional id {transactional_id}")
    response = await client.connection(f"{found.host}:{found.port}").send(
        request_class(DESCRIBE_TRANSACTIONS, 0)(transactional_ids=(transactional_id,))
    )
    state = response.transaction_states[0]
    error = ErrorCode.of(state.error_code)
    if error != ErrorCode.NONE:
        raise KafkaError(error, f"DescribeTransactions for {transactional_id}")
    return {
        "transactional_id": transactional_id,
        "coordinator": found.node_id,
        "state": state.transaction_state,
        "producer_id": state.producer_id,
        "producer_epoch": state.producer_epoch,
        "timeout_ms": int(state.transaction_timeout.total_seconds() * 1000),
        "start_time_ms": int(state.transaction_start_time.timestamp() * 1000),
        "partitions": [{"topic": t.topic, "partition": p} for t in state.topics for p in t.partitions],
    }


async def _brokers(client: KafkaWireClient) -> list[str]:
    response = await client.any_broker(request_class(METADATA, 9)(topics=(), allow_auto_topic_creation=False,
                                      include_cluster_authorized_operations=False,
                                      include_topic_authorized_operations=False))  # fmt: skip
    return [f"{b.host}:{b.port}" for b in response.brokers]


async def find_hanging(client: KafkaWireClient) -> list[HangingTransaction]:
    """Kafka's FindHangingTransactions: a producer whose transaction is open in a partition's log is hanging when
    the coordinator of no transactional id has that producer's transaction under way with the partition."""
    listed = await list_transactions(client)
    under_way: dict[int, dict[str, object]] = {}
    for entry in listed:
        if entry["state"] in ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"):
            under_way[int(str(entry["producer_id"]))] = await describe(client, str(entry["transactional_id"]))
    by_producer = {int(str(e["producer_id"])): e for e in listed}
    hanging = []
    for topic, partition, leader in await _partitions(client):
        for producer in await _open_producers(client, leader, topic, partition):
            known = under_way.get(producer.producer_id)
            in_it = known is not None and {"topic": topic, "partition": partition} in known["partitions"]  # type: ignore[operator]
            if not in_it:
                owner = by_producer.get(producer.producer_id)
                hanging.append(
                    HangingTransaction(
                        topic,
                        partition,
                        producer.producer_id,
                        producer.producer_epoch,
                        producer.current_txn_start_offset,
                        str(owner["transactional_id"]) if owner else None,
                        str(owner["state"]) if owner else None,
                    )
                )
    return hanging


async def _partitions(client: KafkaWireClient) -> list[tuple[str, int, str]]:
    """(topic, partition, its leader's Kafka address) of every partition with a leader, internal topics too."""
    response = await client.any_broker(request_class(METADATA, 9)(topics=None, allow_auto_topic_creation=False,
                                      include_cluster_authorized_operations=False,
                                      include_topic_authorized_operations=False))  # fmt: skip
    addresses = {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}
    return [
        (topic.name, p.partition_index, addresses[p.leader_id])
        for topic in response.topics
        for p in topic.partitions
        if p.leader_id in addresses
    ]


async def _open_producers(client: KafkaWireClient, leader: str, topic: str, partition: int) -> list[Any]:
    cls = request_class(DESCRIBE_PRODUCERS, 0)
    request = cls(topics=(nested(cls, "TopicRequest")(name=topic, partition_indexes=(partition,)),))
    response = await client.connection(leader).send(request)
    answer = response.topics[0].partitions[0]
    if ErrorCode.of(answer.error_code) != ErrorCode.NONE:
        return []
    return [p for p in answer.active_producers if p.current_txn_start_offset >= 0]


def _print_text(args: argparse.Namespace, result: Any) -> None:
    out = sys.stdout
    if args.list:
        out.write("TransactionalId\tProducerId\tTransactionState\n")
        for entry in result:
            out.write(f"{entry['transactional_id']}\t{entry['producer_id']}\t{entry['state']}\n")
    elif args.describe:
        partitions = ",".join(f"{p['topic']}-{p['partition']}" for p in result["partitions"])
        out.write(
            "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTimeoutMs\tPartitions\n"
        )
        out.write(
            f"{result['coordinator']}\t{result['transactional_id']}\t{result['producer_id']}\t"
            f"{result['producer_epoch']}\t{result['state']}\t{result['timeout_ms']}\t{partitions}\n"
        )
    elif args.abort:
        out.write(
            f"Aborted the transaction of producer {result['producer_id']} (epoch {result['producer_epoch']}, "
            f"coordinator epoch {result['coordinator_epoch']}) in {result['topic']}-{result['partition']}\n"
        )
    else:
        out.write("Topic\tPartition\tProducerId\tProducerEpoch\tStartOffset\tTransactionalId\tCoordinatorState\n")
        for h in result:
            out.write(
                f"{h['topic']}\t{h['partition']}\t{h['producer_id']}\t{h['producer_epoch']}\t"
                f"{h['current_txn_start_offset']}\t{h['transactional_id']}\t{h['coordinator_state']}\n"
            )

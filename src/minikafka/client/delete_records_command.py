"""`minikafka delete-records`, Kafka's kafka-delete-records: move partitions' log start offsets up, each through
its leader's Kafka listener, from a JSON file
`{"partitions": [{"topic": "t", "partition": 0, "offset": 5}], "version": 1}` (offset -1: the high watermark)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from minikafka.client.consumer_groups_command import kafka_bootstrap
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.cli_support import CliError, print_json, run_event_loop
from minikafka.common.errors import ErrorCode, KafkaError

METADATA, DELETE_RECORDS = 3, 21


@dataclass(frozen=True)
class Deletion:
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class DeletionResult:
    topic: str
    partition: int
    error: ErrorCode
    low_watermark: int


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("delete-records", help="delete records below offsets (kafka-delete-records)")
    parser.add_argument(
        "--offset-json-file",
        required=True,
        metavar="FILE",
        help='{"partitions": [{"topic": "t", "partition": 0, "offset": 5}], "version": 1}',
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", metavar="RUN", help="the run directory (default: the newest under ./runs/)")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="any broker's Kafka listener")
    parser.add_argument("--timeout-ms", type=int, default=30000, help="the request's timeout")
    parser.set_defaults(func=delete_records_command)


def deletions_from_json(text: str, source: str) -> list[Deletion]:
    """Kafka's format; a partition listed twice is an error, as in Kafka's tool."""
    try:
        data = json.loads(text)
        entries = [Deletion(str(e["topic"]), int(e["partition"]), int(e["offset"])) for e in data["partitions"]]
    except (ValueError, KeyError, TypeError) as error:
        expected = '{"partitions": [{"topic": T, "partition": P, "offset": O}], "version": 1}'
        raise CliError(f"{source}: expected {expected} ({error})") from None
    keys = [(d.topic, d.partition) for d in entries]
    duplicates = sorted({f"{t}-{p}" for t, p in keys if keys.count((t, p)) > 1})
    if duplicates:
        raise CliError(f"Offset json file contains duplicate topic partitions: {', '.join(duplicates)}")
    return entries


async def delete_records(client: KafkaWireClient, deletions: list[Deletion], timeout_ms: int) -> list[DeletionResult]:
    """Each partition to its leader, as Kafka's admin client sends them; a partition without one is answered
    LEADER_NOT_AVAILABLE, one of no known topic UNKNOWN_TOPIC_OR_PARTITION."""
    metadata = await client.any_broker(
        request_class(METADATA, 12)(
            topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
        )
    )
    brokers = {b.node_id: f"{b.host}:{b.port}" for b in metadata.brokers}
    leaders = {(t.name, p.partition_index): p.leader_id for t in metadata.topics for p in t.partitions}
    results: list[DeletionResult] = []
    by_leader: dict[int, list[Deletion]] = {}
    for deletion in deletions:
        leader = leaders.get((deletion.topic, deletion.partition))
        if leader is None or leader < 0 or leader not in brokers:
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if leader is None else ErrorCode.LEADER_NOT_AVAILABLE
            results.append(DeletionResult(deletion.topic, deletion.partition, missing, -1))
        else:
            by_leader.setdefault(leader, []).append(deletion)
    for leader, wanted in by_leader.items():
        response = await client.connection(brokers[leader]).send(_request(wanted, timeout_ms))
        for topic in response.topics:
            for p in topic.partitions:
                code = ErrorCode.of(int(p.error_code.value))
                results.append(DeletionResult(topic.name, p.partition_index, code, p.low_watermark))
    order = {(d.topic, d.partition): i for i, d in enumerate(deletions)}
    return sorted(results, key=lambda r: order[(r.topic, r.partition)])


def _request(deletions: list[Deletion], timeout_ms: int) -> object:
    import datetime

    cls = request_class(DELETE_RECORDS, 2)
    topic_cls, partition_cls = nested(cls, "DeleteRecordsTopic"), nested(cls, "DeleteRecordsPartition")
    topics: dict[str, list[object]] = {}
    for d in deletions:
        topics.setdefault(d.topic, []).append(partition_cls(partition_index=d.partition, offset=d.offset))
    return cls(
        topics=tuple(topic_cls(name=name, partitions=tuple(parts)) for name, parts in topics.items()),
        timeout=datetime.timedelta(milliseconds=timeout_ms),
    )


def delete_records_command(args: argparse.Namespace) -> int:
    try:
        text = Path(args.offset_json_file).read_text()
    except OSError as error:
        raise CliError(f"--offset-json-file: {error.strerror}: {args.offset_json_file}") from None
    deletions = deletions_from_json(text, args.offset_json_file)
    client = KafkaWireClient(kafka_bootstrap(args))

    async def run() -> list[DeletionResult]:
        try:
            return await delete_records(client, deletions, args.timeout_ms)
        finally:
            await client.close()

    results = run_event_loop(run())
    failed = [r for r in results if r.error != ErrorCode.NONE]
    if args.json:
        print_json(
            [
                {"topic": r.topic, "partition": r.partition, "low_watermark": r.low_watermark, "error": r.error.name}
                for r in results
            ]
        )
    else:
        print("Executing records delete operation")
        print("Records delete operation completed:")
        for r in results:
            outcome = f"low_watermark: {r.low_watermark}" if r.error == ErrorCode.NONE else f"error: {r.error.name}"
            print(f"partition: {r.topic}-{r.partition}\t{outcome}")
    if failed:
        first = failed[0]
        raise KafkaError(first.error, f"{len(failed)} partition(s) failed (first: {first.topic}-{first.partition})")
    return 0

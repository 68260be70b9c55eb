"""`minikafka log-dirs --describe`, Kafka's kafka-log-dirs: each broker's log directories and the partition logs
in them (size, offset lag), asked of each broker's Kafka listener, printed as Kafka's tool prints them (JSON)."""

from __future__ import annotations

import argparse
from typing import Any

from minikafka.client.consumer_groups_command import kafka_bootstrap
from minikafka.client.kafka_wire_client import KafkaWireClient, request_class
from minikafka.common.cli_support import CliError, print_json, run_event_loop
from minikafka.common.errors import ErrorCode

METADATA, DESCRIBE_LOG_DIRS = 3, 35


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("log-dirs", help="brokers' log directories and partition sizes (kafka-log-dirs)")
    parser.add_argument("--describe", action="store_true", required=True, help="describe the log directories")
    parser.add_argument("--topic-list", default="", metavar="T1,T2", help="only these topics (default: all)")
    parser.add_argument("--broker-list", default="", metavar="ID1,ID2", help="only these brokers (default: all)")
    parser.add_argument("--dir", metavar="RUN", help="the run directory (default: the newest under ./runs/)")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="any broker's Kafka listener")
    parser.set_defaults(func=log_dirs_command)


def _ids(text: str) -> set[int] | None:
    if not text:
        return None
    try:
        return {int(part) for part in text.split(",") if part}
    except ValueError:
        raise CliError(f"--broker-list: expected broker ids separated by commas, got {text!r}") from None


async def describe_log_dirs(
    client: KafkaWireClient, broker_ids: set[int] | None, topics: set[str] | None
) -> dict[str, Any]:
    metadata_request = request_class(METADATA, 12)
    metadata = await client.any_broker(
        metadata_request(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    )
    brokers = {b.node_id: f"{b.host}:{b.port}" for b in metadata.brokers}
    missing = sorted((broker_ids or set()) - set(brokers))
    if missing:
        raise CliError(f"ERROR: The given brokers do not exist from --broker-list: {','.join(map(str, missing))}")
    described = []
    for broker_id in sorted(broker_ids or brokers):
        response = await client.connection(brokers[broker_id]).send(request_class(DESCRIBE_LOG_DIRS, 4)(topics=None))
        described.append({"broker": broker_id, "logDirs": [_log_dir(r, topics) for r in response.results]})
    return {"brokers": described, "version": 1}


def _log_dir(result: Any, topics: set[str] | None) -> dict[str, Any]:
    code = ErrorCode.of(int(result.error_code.value))
    partitions = [
        {
            "partition": f"{t.name}-{p.partition_index}",
            "size": p.partition_size,
            "offsetLag": p.offset_lag,
            "isFuture": p.is_future_key,
        }
        for t in result.topics
        if topics is None or t.name in topics
        for p in t.partitions
    ]
    return {"logDir": result.log_dir, "error": None if code == ErrorCode.NONE else code.name, "partitions": partitions}


def log_dirs_command(args: argparse.Namespace) -> int:
    broker_ids = _ids(args.broker_list)
    topics = {t for t in args.topic_list.split(",") if t} or None
    client = KafkaWireClient(kafka_bootstrap(args))

    async def run() -> dict[str, Any]:
        try:
            return await describe_log_dirs(client, broker_ids, topics)
        finally:
            await client.close()

    print("Querying brokers for log directories information")
    described = run_event_loop(run())
    print(f"Received log directory information from brokers {','.join(str(b['broker']) for b in described['brokers'])}")
    print_json(described)
    return 0

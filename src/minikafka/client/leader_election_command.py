"""`minikafka leader-election`, Kafka's kafka-leader-election: ElectLeaders through the active controller for one
partition, a JSON file's partitions (`{"partitions": [{"topic": "t", "partition": 0}]}`) or every partition."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from minikafka.common.cli_support import CliError, print_json
from minikafka.common.errors import ErrorCode, KafkaError

ELECTION_TYPES = {"preferred": 0, "unclean": 1}  # Kafka's ElectionType numbers


def register(subparsers: argparse._SubParsersAction, add_connection_arguments: Any) -> None:
    command = subparsers.add_parser(
        "leader-election", help="preferred or unclean leader elections (kafka-leader-election)"
    )
    command.add_argument("--election-type", required=True, type=str.lower, choices=sorted(ELECTION_TYPES))
    target = command.add_mutually_exclusive_group(required=True)
    target.add_argument("--topic", help="with --partition: one partition")
    target.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    target.add_argument("--path-to-json-file", metavar="FILE", help='{"partitions":[{"topic":"t","partition":0}]}')
    command.add_argument("--partition", type=int)
    command.add_argument("--json", action="store_true")
    add_connection_arguments(command)
    command.set_defaults(func=leader_election_command)


def partitions_from_json(text: str, source: str) -> list[tuple[str, int]]:
    """Kafka's format; a partition listed twice is an error, as in Kafka's tool."""
    try:
        entries = json.loads(text)["partitions"]
        partitions = [(str(e["topic"]), int(e["partition"])) for e in entries]
    except (ValueError, KeyError, TypeError) as error:
        expected = '{"partitions": [{"topic": T, "partition": P}, ...]}'
        raise CliError(f"{source}: expected {expected} ({error})") from None
    duplicates = sorted({f"{t}-{p}" for t, p in partitions if partitions.count((t, p)) > 1})
    if duplicates:
        raise CliError(f"{source}: duplicate partitions {', '.join(duplicates)}")
    return partitions


def _targets(args: argparse.Namespace) -> list[tuple[str, int]] | None:
    if args.topic is not None:
        if args.partition is None:
            raise CliError("--topic needs --partition")
        return [(args.topic, args.partition)]
    if args.partition is not None:
        raise CliError("--partition goes with --topic")
    if args.all_topic_partitions:
        return None
    try:
        text = Path(args.path_to_json_file).read_text()
    except OSError as error:
        raise CliError(f"--path-to-json-file: {error.strerror}: {args.path_to_json_file}") from None
    return partitions_from_json(text, args.path_to_json_file)


def leader_election_command(args: argparse.Namespace) -> int:
    from minikafka.client.admin import AdminClient
    from minikafka.client.command_connection import admin_broker_sasl, admin_broker_tls, admin_tls, resolve_addresses

    targets = _targets(args)
    controllers, brokers = resolve_addresses(args)
    tls, broker_tls = admin_tls(args), admin_broker_tls(args, controllers)
    broker_sasl = admin_broker_sasl(args, controllers)
    with AdminClient(controllers, brokers, tls=tls, broker_tls=broker_tls, broker_sasl=broker_sasl) as admin:
        results = admin.elect_leaders(ELECTION_TYPES[args.election_type], targets)
    elected = [f"{t}-{p}" for t, p, code, _ in results if code == ErrorCode.NONE]
    not_needed = [f"{t}-{p}" for t, p, code, _ in results if code == ErrorCode.ELECTION_NOT_NEEDED]
    failed = [(f"{t}-{p}", code, message) for t, p, code, message in results if code not in _SUCCESS]
    kind = args.election_type.upper()
    if args.json:
        print_json(
            {
                "election_type": kind,
                "elected": elected,
                "not_needed": not_needed,
                "failed": [{"partition": tp, "error": code.name, "message": m} for tp, code, m in failed],
            }
        )
    else:
        if elected:
            print(f"Successfully completed leader election ({kind}) for partitions {', '.join(elected)}")
        if not_needed:
            print(f"Valid replica already elected for partitions {', '.join(not_needed)}")
        for tp, code, message in failed:
            print(f"Error completing leader election ({kind}) for partition: {tp}: {code.name}: {message}")
    if failed:
        first = failed[0]
        raise KafkaError(first[1], f"{len(failed)} replica(s) could not be elected (first: {first[0]}: {first[2]})")
    return 0


_SUCCESS = (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)

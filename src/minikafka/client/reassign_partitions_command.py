"""`minikafka reassign-partitions`, Kafka's kafka-reassign-partitions (KIP-455): --execute, --verify or --cancel the
reassignments of a JSON file (`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,4]}]}`), or
--list the ones in progress."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from minikafka.client.reassignment_throttle import Target, clear_throttles, moves, set_throttles
from minikafka.common.cli_support import CliError, print_json
from minikafka.common.errors import ErrorCode, KafkaError


def register(subparsers: argparse._SubParsersAction, add_connection_arguments: Any) -> None:
    command = subparsers.add_parser("reassign-partitions", help="move partition replicas (kafka-reassign-partitions)")
    action = command.add_mutually_exclusive_group(required=True)
    action.add_argument("--execute", action="store_true", help="start the file's reassignments")
    action.add_argument("--verify", action="store_true", help="report whether the file's reassignments completed")
    action.add_argument("--cancel", action="store_true", help="cancel the file's reassignments in progress")
    action.add_argument("--list", action="store_true", help="the reassignments in progress")
    command.add_argument("--reassignment-json-file", metavar="FILE")
    command.add_argument(
        "--throttle",
        type=int,
        default=-1,
        metavar="BYTES_PER_S",
        help="with --execute: throttle the moving replicas to this rate (leader.replication.throttled.rate and "
        "follower.replication.throttled.rate on the brokers involved); --verify removes it once all completed",
    )
    command.add_argument(
        "--preserve-throttles", action="store_true", help="with --verify: keep the throttles of a completed move"
    )
    command.add_argument("--json", action="store_true")
    add_connection_arguments(command)
    command.set_defaults(func=reassign_partitions_command)


def parse_reassignment(text: str, source: str) -> list[Target]:
    """Kafka's reassignment JSON; a partition listed twice is an error, as in Kafka's tool."""
    try:
        document = json.loads(text)
        targets = [
            (str(p["topic"]), int(p["partition"]), [int(b) for b in p["replicas"]]) for p in document["partitions"]
        ]
    except (ValueError, KeyError, TypeError) as error:
        shape = '{"version":1,"partitions":[{"topic":T,"partition":P,"replicas":[B,...]}]}'
        raise CliError(f"{source}: expected {shape} ({error})") from None
    names = [f"{t}-{p}" for t, p, _ in targets]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CliError(f"{source}: partition(s) listed more than once: {', '.join(duplicates)}")
    if not targets:
        raise CliError(f"{source}: no partitions to reassign")
    return targets


def _targets(args: argparse.Namespace) -> list[Target]:
    if not args.reassignment_json_file:
        raise CliError("--reassignment-json-file is required with --execute, --verify and --cancel")
    try:
        text = Path(args.reassignment_json_file).read_text()
    except OSError as error:
        raise CliError(f"--reassignment-json-file: {error.strerror}: {args.reassignment_json_file}") from None
    return parse_reassignment(text, args.reassignment_json_file)


def _fail_on_errors(results: list[tuple[str, int, ErrorCode, str]]) -> None:
    failed = [(f"{t}-{p}", code, message) for t, p, code, message in results if code != ErrorCode.NONE]
    if failed:
        where, code, message = failed[0]
        raise KafkaError(code, f"{len(failed)} partition(s) failed (first: {where}: {message})")


def current_replicas(admin: Any, targets: list[Target]) -> dict[tuple[str, int], list[int]]:
    """The replicas each (topic, partition) of the targets' topics has now (an unknown topic is an error)."""
    described = admin.describe_topics(sorted({t for t, _, _ in targets}))
    return {(t.name, p.partition): p.replicas for t in described for p in t.partitions}


def _verify(admin: Any, targets: list[Target]) -> list[dict[str, Any]]:
    ongoing = admin.list_partition_reassignments()
    replicas_now = current_replicas(admin, targets)
    statuses = []
    for topic, partition, replicas in targets:
        current = replicas_now.get((topic, partition))
        if (topic, partition) in ongoing:
            status = "in_progress"
        elif current == replicas:
            status = "complete"
        else:
            status = "not_started"
        statuses.append(
            {"topic": topic, "partition": partition, "status": status, "replicas": current, "target": replicas}
        )
    return statuses


def _print_verify(statuses: list[dict[str, Any]]) -> None:
    for s in statuses:
        name = f"{s['topic']}-{s['partition']}"
        if s["status"] == "in_progress":
            print(f"Reassignment of partition {name} is still in progress.")
        elif s["status"] == "complete":
            print(f"Reassignment of partition {name} is completed.")
        else:
            print(
                f"There is no active reassignment of partition {name}, but replica set is {s['replicas']} "
                f"rather than {s['target']}."
            )


def _throttle(admin: Any, targets: list[Target], rate: int, as_json: bool) -> None:
    planned = moves(current_replicas(admin, targets), targets)
    if planned:
        set_throttles(admin, planned, rate)
    if not as_json:
        print("Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle")
        print("is removed.")
        print(f"The inter-broker throttle limit was set to {rate} B/s")


def _clear_when_complete(admin: Any, statuses: list[dict[str, Any]]) -> list[str]:
    """Kafka's --verify: once no partition of the file is still moving, the throttles come off every broker and
    the file's topics; what was cleared, as Kafka's tool says it."""
    if any(s["status"] == "in_progress" for s in statuses):
        return []
    brokers = sorted(b.node_id for b in admin.metadata().brokers)
    topics = sorted({s["topic"] for s in statuses})
    clear_throttles(admin, brokers, topics)
    return [
        f"Clearing broker-level throttles on brokers {','.join(map(str, brokers))}",
        f"Clearing topic-level throttles on topics {','.join(topics)}",
    ]


def reassign_partitions_command(args: argparse.Namespace) -> int:
    from minikafka.client.admin import AdminClient
    from minikafka.client.command_connection import admin_broker_sasl, admin_broker_tls, admin_tls, resolve_addresses

    controllers, brokers = resolve_addresses(args)
    tls, broker_tls = admin_tls(args), admin_broker_tls(args, controllers)
    broker_sasl = admin_broker_sasl(args, controllers)
    with AdminClient(controllers, brokers, tls=tls, broker_tls=broker_tls, broker_sasl=broker_sasl) as admin:
        if args.list:
            ongoing = admin.list_partition_reassignments()
            document = [{"topic": t, "partition": p, **sets} for (t, p), sets in sorted(ongoing.items())]
            if args.json:
                print_json({"reassignments": document})
            else:
                print("Current partition reassignments:" if document else "No partition reassignments found.")
                for (topic, partition), sets in sorted(ongoing.items()):
                    print(
                        f"{topic}-{partition}: replicas: {','.join(map(str, sets['replicas']))}. "
                        f"adding: {','.join(map(str, sets['adding_replicas']))}. "
                        f"removing: {','.join(map(str, sets['removing_replicas']))}."
                    )
            return 0
        targets = _targets(args)
        if args.verify:
            statuses = _verify(admin, targets)
            cleared = [] if args.preserve_throttles else _clear_when_complete(admin, statuses)
            if args.json:
                print_json({"partitions": statuses, "throttles_cleared": bool(cleared)})
            else:
                _print_verify(statuses)
                for line in cleared:
                    print(line)
            return 0
        if args.execute and args.throttle >= 0:
            _throttle(admin, targets, args.throttle, args.json)
        results = admin.alter_partition_reassignments(
            [(t, p, None if args.cancel else replicas) for t, p, replicas in targets]
        )
    _fail_on_errors(results)
    names = ", ".join(f"{t}-{p}" for t, p, _ in targets)
    verb = "cancelled" if args.cancel else "started"
    if args.json:
        print_json({verb: [f"{t}-{p}" for t, p, _ in targets]})
    else:
        print(f"Successfully {verb} partition reassignment(s) for {names}")
    return 0

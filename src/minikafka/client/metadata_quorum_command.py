"""`minikafka metadata-quorum`, Kafka's kafka-metadata-quorum: describe the controller quorum (--status,
--replication) and change its voter set (add-controller, remove-controller; KIP-853)."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from minikafka.common.cli_support import CliError, print_json
from minikafka.common.errors import KafkaError

AddConnection = Callable[[argparse.ArgumentParser], None]


def register(subparsers: argparse._SubParsersAction, add_connection_arguments: AddConnection) -> None:
    parser = subparsers.add_parser("metadata-quorum", help="describe and reconfigure the controller quorum (KIP-853)")
    commands = parser.add_subparsers(dest="metadata_quorum_command", required=True)
    describe = commands.add_parser("describe", help="the quorum's leader and voters (--status) or replicas' lag")
    shown = describe.add_mutually_exclusive_group(required=True)
    shown.add_argument("--status", action="store_true", help="leader, epoch, high watermark, voters, observers")
    shown.add_argument("--replication", action="store_true", help="each replica's log end offset and lag")
    describe.add_argument(
        "--human-readable", action="store_true", help="with --replication: the times as how long ago (N ms ago)"
    )
    describe.add_argument("--json", action="store_true")
    describe.set_defaults(func=describe_command)
    add = commands.add_parser("add-controller", help="make a controller that is an observer a voter")
    add.add_argument("--controller-id", type=int, required=True)
    add.add_argument(
        "--controller-directory-id", default="", help="its metadata log directory (default: as it fetches now)"
    )
    add.add_argument(
        "--controller-endpoint",
        default="",
        help="host:port of its controller listener, written into the voter set (default: the leader's "
        "controller.quorum.voters entry for it)",
    )
    add.set_defaults(func=add_command)
    remove = commands.add_parser("remove-controller", help="remove a voter from the quorum")
    remove.add_argument("--controller-id", type=int, required=True)
    remove.add_argument("--controller-directory-id", required=True)
    remove.set_defaults(func=remove_command)
    upgrade = commands.add_parser(
        "upgrade", help="upgrade the quorum's kraft.version (Kafka's kafka-features upgrade): 1 makes it dynamic"
    )
    upgrade.add_argument("--feature", required=True, metavar="kraft.version=1", help="only kraft.version=1")
    upgrade.set_defaults(func=upgrade_command)
    for command in (describe, add, remove, upgrade):
        command.add_argument("--cluster-id", default="minikafka", help="the cluster's id (cluster.id)")
        add_connection_arguments(command)
    for command in (describe, add, remove, upgrade):
        command.add_argument(
            "--protocol",
            choices=("grpc", "kafka"),
            default="grpc",
            help="grpc: ask the controllers' quorum listener (default); kafka: their Kafka listener (KIP-919, as "
            "kafka-metadata-quorum; --bootstrap-controller then names it, else cluster.json's kafka_address)",
        )


def _replicas(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    voters = [("Leader" if r["id"] == document["leader_id"] else "Follower", r) for r in document["voters"]]
    return voters + [("Observer", r) for r in document["observers"]]


def quorum_client(args: argparse.Namespace) -> Any:
    """The admin client of the controllers' quorum listener (gRPC), or with `--protocol kafka` of their Kafka
    listener; both answer describe_quorum, add_raft_voter and remove_raft_voter alike."""
    from minikafka.client.command_connection import admin_client, admin_tls, controller_kafka_addresses

    if getattr(args, "protocol", "grpc") != "kafka":
        return admin_client(args)
    from minikafka.client.kafka_quorum_client import KafkaQuorumClient

    return KafkaQuorumClient(controller_kafka_addresses(args), 30.0, admin_tls(args))


def describe_command(args: argparse.Namespace) -> int:
    if args.human_readable and not args.replication:
        raise CliError("The option --human-readable is only supported along with --replication")
    with quorum_client(args) as admin:
        document = admin.describe_quorum()
    if args.json:
        print_json(document)
        return 0
    if args.status:
        print(status_text(document, args.cluster_id))
    else:
        print(replication_text(document, args.human_readable))
    return 0


def status_text(document: dict[str, Any], cluster_id: str) -> str:
    voters = document["voters"]
    leader = next((r for r in voters if r["id"] == document["leader_id"]), None)
    # As Kafka's tool: the voter with the shortest log, how far behind the leader's log end it is, and how much
    # earlier than the leader it was last caught up (-1 when either time is unknown).
    lagging = min(sorted(voters, key=lambda r: r is not leader), key=lambda r: r["log_end_offset"], default=None)
    lag = 0 if leader is None or lagging is None else leader["log_end_offset"] - lagging["log_end_offset"]
    lag_time = _lag_time_ms(leader, lagging)
    endpoints = document.get("endpoints", {})

    def keys(replicas: list[dict[str, Any]]) -> str:
        # As Kafka's tool: a voter's endpoints as listener URIs; no directoryId where there is none (kraft.version 0).
        return json.dumps(
            [
                {"id": r["id"]}
                | ({"directoryId": r["directory_id"]} if r["directory_id"] else {})
                | ({"endpoints": [f"CONTROLLER://{endpoints[r['id']]}"]} if r["id"] in endpoints else {})
                for r in replicas
            ]
        )

    rows = [
        ("ClusterId", cluster_id),
        ("LeaderId", document["leader_id"]),
        ("LeaderEpoch", document["leader_epoch"]),
        ("HighWatermark", document["high_watermark"]),
        ("MaxFollowerLag", lag),
        ("MaxFollowerLagTimeMs", lag_time),
        ("CurrentVoters", keys(voters)),
        ("CurrentObservers", keys(document["observers"])),
    ]
    return "\n".join(f"{name + ':':<24}{value}" for name, value in rows)


def _lag_time_ms(leader: dict[str, Any] | None, lagging: dict[str, Any] | None) -> int:
    if leader is None or lagging is None or lagging is leader:
        return 0
    times = (leader["last_caught_up_timestamp"], lagging["last_caught_up_timestamp"])
    return times[0] - times[1] if min(times) >= 0 else -1


def replication_text(document: dict[str, Any], human_readable: bool = False, now_ms: int | None = None) -> str:
    """Kafka's table: the timestamps are the leader's epoch milliseconds, or with `human_readable` how long before
    `now_ms` (this machine's clock by default) they were; -1 where a replica has not fetched."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    leader_end = next((r["log_end_offset"] for r in document["voters"] if r["id"] == document["leader_id"]), 0)
    header = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status")
    rows = [header]
    for status, r in _replicas(document):
        rows.append(
            (
                str(r["id"]),
                r["directory_id"] or "-",
                str(r["log_end_offset"]),
                str(leader_end - r["log_end_offset"]),
                _timestamp_text(r["last_fetch_timestamp"], "last fetch", human_readable, now),
                _timestamp_text(r["last_caught_up_timestamp"], "last caught up", human_readable, now),
                status,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)


def _timestamp_text(timestamp_ms: int, name: str, human_readable: bool, now_ms: int) -> str:
    if timestamp_ms < 0 or not human_readable:
        return str(max(timestamp_ms, -1))
    if timestamp_ms > now_ms:
        # As Kafka's tool: a time after now means the two machines' clocks disagree; guessing would mislead.
        raise CliError(
            "Error while computing relative time, possible drift in system clock. "
            f"Current timestamp is {now_ms}, {name} timestamp is {timestamp_ms}"
        )
    return f"{now_ms - timestamp_ms} ms ago"


def add_command(args: argparse.Namespace) -> int:
    with quorum_client(args) as admin:
        directory = args.controller_directory_id or _observed_directory(admin.describe_quorum(), args.controller_id)
        _change(lambda: admin.add_raft_voter(args.controller_id, directory, args.cluster_id, args.controller_endpoint))
    print(f"Added controller {args.controller_id} with directory id {directory} to the voter set")
    return 0


def remove_command(args: argparse.Namespace) -> int:
    with quorum_client(args) as admin:
        _change(lambda: admin.remove_raft_voter(args.controller_id, args.controller_directory_id, args.cluster_id))
    print(f"Removed controller {args.controller_id} with directory id {args.controller_directory_id}")
    return 0


def upgrade_command(args: argparse.Namespace) -> int:
    name, _, version = args.feature.partition("=")
    if name != "kraft.version" or version != "1":
        raise CliError(f"--feature {args.feature}: only kraft.version=1 can be set here")
    with quorum_client(args) as admin:
        _change(lambda: admin.upgrade_kraft_version(1, args.cluster_id))
    print("kraft.version was upgraded to 1: the voters are named by id and directory id from now on")
    return 0


def _observed_directory(document: dict[str, Any], controller_id: int) -> str:
    replicas = document["observers"] + document["voters"]  # a voter's: the leader then answers DUPLICATE_VOTER
    found = [r["directory_id"] for r in replicas if r["id"] == controller_id and r["directory_id"]]
    if not found:
        raise CliError(
            f"controller {controller_id} is not fetching from the leader as an observer; give its "
            "--controller-directory-id (its meta.properties directory.id)"
        )
    return str(found[0])


def _change(call: Callable[[], None]) -> None:
    try:
        call()
    except KafkaError as error:
        raise CliError(str(error)) from None

"""`minikafka consumer-groups`: Kafka's kafka-consumer-groups through the brokers' Kafka listeners. --list names
every group; --describe shows a group's state, members, their assignments, and per partition the committed offset,
the log end offset (the high watermark) and the lag; --delete removes an empty group; --delete-offsets removes a
group's committed offsets of some topics (OffsetDelete)."""

from __future__ import annotations

import argparse
import asyncio
import json
import struct
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from minikafka.client.consumer_protocol_describe import describe_consumer_group
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.cli_support import CliError, print_json, run_event_loop
from minikafka.common.clock import client_monotonic_s
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.run_dir import newest_run

METADATA, LIST_OFFSETS, OFFSET_FETCH, FIND_COORDINATOR = 3, 2, 9, 10
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE = 15, 16, 42, 47
LATEST_TIMESTAMP = -1
RETRIABLE_COORDINATOR_ERRORS = (
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
)


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    current_offset: int | None  # None: nothing committed
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[tuple[str, int]] = field(default_factory=list)
    member_epoch: int | None = None  # consumer-protocol (KIP-848) groups only
    target_assignment: list[tuple[str, int]] | None = None  # idem


@dataclass(frozen=True)
class GroupDescription:
    group: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: int
    members: list[MemberDescription]
    partitions: list[PartitionLag]
    group_epoch: int | None = None  # consumer-protocol (KIP-848) groups only
    assignment_epoch: int | None = None  # idem

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        for member in data["members"]:
            member["assignment"] = [{"topic": t, "partition": p} for t, p in member["assignment"]]
            if member["target_assignment"] is not None:
                member["target_assignment"] = [{"topic": t, "partition": p} for t, p in member["target_assignment"]]
        return data


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("consumer-groups", help="list, describe and delete consumer groups")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="every group")
    action.add_argument("--describe", nargs="?", const=True, metavar="GROUP", help="a group (or --group GROUP)")
    action.add_argument("--delete", action="store_true", help="delete --group GROUP (only an empty group)")
    action.add_argument(
        "--delete-offsets", action="store_true", help="delete --group GROUP's offsets of each --topic T[:P,...]"
    )
    parser.add_argument("--group", help="the group")
    parser.add_argument(
        "--topic", action="append", default=[], metavar="T[:P,...]", help="a topic, or some of its partitions"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", metavar="RUN", help="the run directory (default: the newest under ./runs/)")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="any broker's Kafka listener")
    parser.add_argument("--timeout-ms", type=int, default=15000, help="how long to wait for a coordinator")
    parser.set_defaults(func=consumer_groups_command)


def kafka_bootstrap(args: argparse.Namespace) -> list[str]:
    """Kafka listener addresses from --bootstrap-server, else from RUN/cluster.json's kafka_address fields."""
    if args.bootstrap_server:
        return [a for a in args.bootstrap_server.split(",") if a]
    run = Path(args.dir) if args.dir else newest_run()
    if run is None:
        raise CliError("no cluster given: pass --bootstrap-server or --dir RUN")
    try:
        data = json.loads((run / "cluster.json").read_text())
    except FileNotFoundError:
        raise CliError(f"no cluster in {run} (missing cluster.json)") from None
    addresses = [b["kafka_address"] for b in data["brokers"] if b.get("kafka_address")]
    if not addresses:
        raise CliError(f"the brokers of {run} have no Kafka listener")
    return addresses


def consumer_groups_command(args: argparse.Namespace) -> int:
    group = args.group or (args.describe if isinstance(args.describe, str) else None)
    if (args.describe or args.delete or args.delete_offsets) and not group:
        raise CliError("--describe, --delete and --delete-offsets need a group: --group GROUP")
    if args.delete_offsets and not args.topic:
        raise CliError("--delete-offsets needs at least one --topic T[:P,...]")
    wanted = [parse_topic_partitions(text) for text in args.topic]
    client = KafkaWireClient(kafka_bootstrap(args))

    async def run() -> int:
        try:
            if args.list:
                return _print_list(await list_groups(client), args.json)
            assert group is not None  # --describe and --delete without one were refused above
            if args.delete_offsets:
                results = await delete_offsets(client, group, wanted, args.timeout_ms / 1000)
                return _print_offset_deletion(results)
            if args.delete:
                await delete_group(client, group, args.timeout_ms / 1000)
                print(f"Deletion of requested consumer groups ('{group}') was successful.")
                return 0
            return _print_description(await describe_group(client, group, args.timeout_ms / 1000), args.json)
        finally:
            await client.close()

    return run_event_loop(run())


# ---- the requests ----


async def cluster_metadata(client: KafkaWireClient) -> tuple[dict[int, str], dict[str, dict[int, int]]]:
    """(broker id -> Kafka address, topic -> partition -> leader id)."""
    cls = request_class(METADATA, 12)
    response = await client.any_broker(
        cls(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    )
    brokers = {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}
    topics = {t.name: {p.partition_index: p.leader_id for p in t.partitions} for t in response.topics if t.name}
    return brokers, topics


async def list_groups(client: KafkaWireClient) -> list[dict[str, str]]:
    brokers, _ = await cluster_metadata(client)
    cls = request_class(LIST_GROUPS, 4)
    listed: dict[str, dict[str, str]] = {}
    for address in brokers.values():
        response = await client.connection(address).send(cls(states_filter=()))
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), f"ListGroups on {address}")
        for group in response.groups:
            listed[group.group_id] = {
                "group": group.group_id,
                "protocol_type": group.protocol_type,
                "state": group.group_state,
            }
    return [listed[name] for name in sorted(listed)]


async def find_coordinator(client: KafkaWireClient, group: str, timeout_s: float) -> tuple[int, str]:
    """(broker id, Kafka address) of the group's coordinator, waiting out a coordinator that is moving."""
    cls = request_class(FIND_COORDINATOR, 3)
    deadline = client_monotonic_s() + timeout_s
    while True:
        response = await client.any_broker(cls(key=group, key_type=0))
        error = ErrorCode.of(response.error_code)
        if error == ErrorCode.NONE:
            return response.node_id, f"{response.host}:{response.port}"
        if error not in RETRIABLE_COORDINATOR_ERRORS or client_monotonic_s() > deadline:
            raise KafkaError(error, f"FindCoordinator for group {group}: {response.error_message or ''}")
        await asyncio.sleep(0.2)  # a retry backoff, as Kafka's admin client's retry.backoff.ms


async def _on_coordinator(client: KafkaWireClient, group: str, timeout_s: float, body: object) -> tuple[int, Any]:
    """Send to the group's coordinator; a coordinator that moved or is loading is looked up again."""
    deadline = client_monotonic_s() + timeout_s
    while True:
        node_id, address = await find_coordinator(client, group, timeout_s)
        response = await client.connection(address).send(body)
        error = _first_error(response)
        if error not in RETRIABLE_COORDINATOR_ERRORS or client_monotonic_s() > deadline:
            return node_id, response
        await asyncio.sleep(0.2)


def _first_error(response: object) -> ErrorCode:
    for entries in ("groups", "results"):
        for entry in getattr(response, entries, ()) or ():
            if entry.error_code != ErrorCode.NONE:
                return ErrorCode.of(entry.error_code)
    return ErrorCode.of(getattr(response, "error_code", 0) or 0)


def decode_assignment(data: bytes) -> list[tuple[str, int]]:
    """The partitions of a consumer protocol Assignment (version, then [topic, [partition]])."""
    if len(data) < 2:
        return []
    from kio.serial import entity_reader

    version = min(struct.unpack_from(">h", data)[0], 3)
    module = __import__(f"kio.schema.consumer_protocol_assignment.v{version}.data", fromlist=["x"])
    assignment, _ = entity_reader(module.ConsumerProtocolAssignment)(data, 2)
    return sorted((tp.topic, p) for tp in assignment.assigned_partitions for p in tp.partitions)


async def describe_group(client: KafkaWireClient, group: str, timeout_s: float) -> GroupDescription:
    node_id, address = await find_coordinator(client, group, timeout_s)
    consumer = await describe_consumer_group(client, address, group)
    if consumer is None:
        return await describe_classic_group(client, group, timeout_s)
    members = [
        MemberDescription(
            m.member_id, m.instance_id, m.client_id, m.host, m.assignment, m.member_epoch, m.target_assignment
        )
        for m in consumer.members
    ]
    partitions = await _partition_lags(client, group, timeout_s, members)
    return GroupDescription(
        group,
        consumer.state,
        "consumer",
        consumer.assignor,
        node_id,
        members,
        partitions,
        consumer.group_epoch,
        consumer.assignment_epoch,
    )


async def describe_classic_group(client: KafkaWireClient, group: str, timeout_s: float) -> GroupDescription:
    node_id, described = await _on_coordinator(
        client,
        group,
        timeout_s,
        request_class(DESCRIBE_GROUPS, 5)(groups=(group,), include_authorized_operations=False),
    )
    entry = described.groups[0]
    if entry.error_code != ErrorCode.NONE:
        raise KafkaError(ErrorCode.of(entry.error_code), f"DescribeGroups {group}")
    if entry.group_state == "Dead":
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"consumer group '{group}' does not exist")
    members = [
        MemberDescription(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            decode_assignment(bytes(m.member_assignment)) if entry.protocol_type == "consumer" else [],
        )
        for m in entry.members
    ]
    partitions = await _partition_lags(client, group, timeout_s, members)
    return GroupDescription(
        group, entry.group_state, entry.protocol_type, entry.protocol_data, node_id, members, partitions
    )


async def _partition_lags(
    client: KafkaWireClient, group: str, timeout_s: float, members: list[MemberDescription]
) -> list[PartitionLag]:
    _, fetched = await _on_coordinator(
        client, group, timeout_s, request_class(OFFSET_FETCH, 7)(group_id=group, topics=None, require_stable=False)
    )
    committed = {(t.name, p.partition_index): p.committed_offset for t in fetched.topics for p in t.partitions}
    owners = {tp: m for m in members for tp in m.assignment}
    keys = sorted(set(committed) | set(owners))
    ends = await _log_end_offsets(client, keys)
    partitions = []
    for topic, partition in keys:
        current = committed.get((topic, partition))
        current = current if current is not None and current >= 0 else None
        end = ends.get((topic, partition))
        owner = owners.get((topic, partition))
        partitions.append(
            PartitionLag(
                topic,
                partition,
                current,
                end,
                None if current is None or end is None else max(end - current, 0),
                owner.member_id if owner else None,
                owner.host if owner else None,
                owner.client_id if owner else None,
            )
        )
    return partitions


async def _log_end_offsets(client: KafkaWireClient, keys: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    brokers, topics = await cluster_metadata(client)
    by_leader: dict[int, list[tuple[str, int]]] = {}
    for topic, partition in keys:
        leader = topics.get(topic, {}).get(partition, -1)
        if leader >= 0:
            by_leader.setdefault(leader, []).append((topic, partition))
    cls = request_class(LIST_OFFSETS, 7)
    topic_cls, partition_cls = nested(cls, "ListOffsetsTopic"), nested(cls, "ListOffsetsPartition")
    ends = {}
    for leader, wanted in by_leader.items():
        names = sorted({t for t, _ in wanted})
        body = cls(
            replica_id=-1,
            isolation_level=0,
            topics=tuple(
                topic_cls(
                    name=name,
                    partitions=tuple(
                        partition_cls(partition_index=p, current_leader_epoch=-1, timestamp=LATEST_TIMESTAMP)
                        for t, p in wanted
                        if t == name
                    ),
                )
                for name in names
            ),
        )
        response = await client.connection(brokers[leader]).send(body)
        for topic in response.topics:
            for p in topic.partitions:
                if p.error_code == ErrorCode.NONE:
                    ends[(topic.name, p.partition_index)] = p.offset
    return ends


async def delete_group(client: KafkaWireClient, group: str, timeout_s: float) -> None:
    _, response = await _on_coordinator(
        client, group, timeout_s, request_class(DELETE_GROUPS, 2)(groups_names=(group,))
    )
    error = ErrorCode.of(response.results[0].error_code)
    if error != ErrorCode.NONE:
        raise KafkaError(error, f"deleting group '{group}'")


def parse_topic_partitions(text: str) -> tuple[str, list[int] | None]:
    """kafka-consumer-groups' --topic: "T" (every partition) or "T:0,2"."""
    topic, _, partitions = text.partition(":")
    if not topic:
        raise CliError(f"--topic {text!r}: no topic name")
    if not partitions:
        return topic, None
    try:
        return topic, sorted({int(p) for p in partitions.split(",")})
    except ValueError:
        raise CliError(f"--topic {text!r}: partitions are numbers, as T:0,1") from None


async def delete_offsets(
    client: KafkaWireClient, group: str, wanted: list[tuple[str, list[int] | None]], timeout_s: float
) -> list[tuple[str, int, ErrorCode]]:
    """OffsetDelete at the group's coordinator: (topic, partition, error) for each partition asked."""
    _, topics = await cluster_metadata(client)
    asked: dict[str, list[int]] = {}
    for topic, partitions in wanted:
        asked.setdefault(topic, []).extend(partitions if partitions is not None else sorted(topics.get(topic, {0: -1})))
    cls = request_class(OFFSET_DELETE, 0)
    topic_cls, partition_cls = nested(cls, "OffsetDeleteRequestTopic"), nested(cls, "OffsetDeleteRequestPartition")
    body = cls(
        group_id=group,
        topics=tuple(
            topic_cls(name=t, partitions=tuple(partition_cls(partition_index=p) for p in sorted(set(ps))))
            for t, ps in asked.items()
        ),
    )
    _, response = await _on_coordinator(client, group, timeout_s, body)
    error = ErrorCode.of(response.error_code)
    if error != ErrorCode.NONE:
        raise KafkaError(error, f"deleting offsets of group '{group}'")
    return [(t.name, p.partition_index, ErrorCode.of(p.error_code)) for t in response.topics for p in t.partitions]


# ---- output ----


def _print_offset_deletion(results: list[tuple[str, int, ErrorCode]]) -> int:
    """As kafka-consumer-groups: each partition's status; a partition's error makes the command fail."""
    failed = any(error != ErrorCode.NONE for _, _, error in results)
    if failed:
        print("Error: Encountered some partition level error, see the follow-up details:", file=sys.stderr)
    rows = [("TOPIC", "PARTITION", "STATUS")] + [
        (t, str(p), "Successful" if e == ErrorCode.NONE else f"Error: {e.name} ({int(e)})") for t, p, e in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 1 if failed else 0


def _print_list(groups: list[dict[str, str]], as_json: bool) -> int:
    if as_json:
        print_json(groups)
    else:
        for group in groups:
            print(group["group"])
    return 0


def _print_description(description: GroupDescription, as_json: bool) -> int:
    if as_json:
        print_json(description.to_json())
        return 0
    print(
        f"Consumer group '{description.group}' is {description.state} (coordinator {description.coordinator}, "
        f"{len(description.members)} members)",
        file=sys.stderr,
    )
    if description.group_epoch is not None:
        _print_consumer_protocol_members(description)
    header = (
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    )
    rows = [header] + [
        tuple(
            "-" if value is None else str(value)
            for value in (
                description.group,
                p.topic,
                p.partition,
                p.current_offset,
                p.log_end_offset,
                p.lag,
                p.consumer_id,
                p.host,
                p.client_id,
            )
        )
        for p in description.partitions
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0


def _print_consumer_protocol_members(description: GroupDescription) -> None:
    """A KIP-848 group: its epochs, then each member's epoch and current and target assignment."""
    print(
        f"Protocol consumer (KIP-848), assignor {description.protocol}, group epoch {description.group_epoch}, "
        f"target assignment epoch {description.assignment_epoch}",
        file=sys.stderr,
    )
    for m in description.members:
        current = ",".join(f"{t}-{p}" for t, p in m.assignment) or "-"
        target = ",".join(f"{t}-{p}" for t, p in m.target_assignment or ()) or "-"
        print(
            f"  member {m.member_id} epoch {m.member_epoch} client {m.client_id} host {m.host} "
            f"assigned {current} target {target}",
            file=sys.stderr,
        )

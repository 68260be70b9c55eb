"""Client commands: topics, produce, consume, quorum, perf."""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minikafka.client import acls_command, metadata_quorum_command, user_scram_command
from minikafka.client.command_connection import (
    add_connection_arguments,
    admin_client,
    client_sasl,
    client_tls,
    resolve_addresses,
)
from minikafka.common.cli_support import CliError, bounded_int, print_json, run_event_loop
from minikafka.common.errors import ErrorCode, KafkaError

if TYPE_CHECKING:  # imported lazily where used: grpc's start-up is slow for commands that need none
    from minikafka.client.producer import ProducerConfig

    pass


DEFAULT_REQUEST_TIMEOUT_MS = 30000
MAX_REPLICATION_FACTOR = 32767  # Kafka carries it as an int16
MAX_RECORD_SIZE = 64 * 1024 * 1024  # generated values are held in memory; larger ones fail max.request.size anyway


def register(subparsers: argparse._SubParsersAction) -> None:
    # The order of registration is the order `minikafka --help` lists the commands in.
    _register_topics(subparsers)
    user_scram_command.register(subparsers, add_connection_arguments)
    acls_command.register(subparsers, add_connection_arguments)
    _register_produce(subparsers)
    _register_consume(subparsers)
    _register_partition_and_group_tools(subparsers)
    _register_quorum(subparsers)
    metadata_quorum_command.register(subparsers, add_connection_arguments)
    _register_perf(subparsers)


def _register_topics(subparsers: argparse._SubParsersAction) -> None:
    topics = subparsers.add_parser("topics", help="create, delete, describe and list topics")
    topic_commands = topics.add_subparsers(
        dest="topics_command", required=True, metavar="{create,delete,describe,list}"
    )
    create = topic_commands.add_parser("create", help="create a topic through the active controller")
    create.add_argument("name", nargs="?", help="the topic (or --topic NAME; a name starting with '-': --topic=-NAME)")
    create.add_argument("--topic", dest="topic_option", metavar="NAME", help="the topic, as kafka-topics takes it")
    create.add_argument(
        "--partitions", type=bounded_int(1, error="INVALID_PARTITIONS"), help="default: the controller's num.partitions"
    )
    create.add_argument(
        "--replication-factor",
        type=bounded_int(1, MAX_REPLICATION_FACTOR, error="INVALID_REPLICATION_FACTOR"),
        help="default: the controller's default.replication.factor",
    )
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    create.add_argument("--replica-assignment", metavar="1:2,2:3,...")
    add_connection_arguments(create)
    create.set_defaults(func=topics_create)
    delete = topic_commands.add_parser("delete", help="delete a topic through the active controller")
    delete.add_argument("name")
    add_connection_arguments(delete)
    delete.set_defaults(func=topics_delete)
    describe = topic_commands.add_parser("describe", help="partitions, leaders, epochs and ISRs")
    describe.add_argument("name", nargs="?")
    describe.add_argument("--json", action="store_true")
    add_connection_arguments(describe)
    describe.set_defaults(func=topics_describe)
    listing = topic_commands.add_parser("list", help="topic names")
    listing.add_argument("--json", action="store_true")
    add_connection_arguments(listing)
    listing.set_defaults(func=topics_list)


def _register_produce(subparsers: argparse._SubParsersAction) -> None:
    produce = subparsers.add_parser("produce", help="produce records (from stdin, or generated)")
    produce.add_argument("topic")
    produce.add_argument("--acks", choices=["0", "1", "all", "-1"], default="all")
    produce.add_argument("--partition", type=bounded_int(0))
    produce.add_argument("--num-records", type=bounded_int(0))
    produce.add_argument("--record-size", type=bounded_int(0, MAX_RECORD_SIZE), default=100)
    produce.add_argument("--history", metavar="FILE")
    add_connection_arguments(produce)
    produce.add_argument("--linger-ms", type=int, default=5)
    produce.add_argument("--batch-size", type=int, default=16384)
    produce.add_argument(
        "--request-timeout-ms",
        type=int,
        help="default 30000, or less to fit within --delivery-timeout-ms minus --linger-ms when that is lower",
    )
    produce.add_argument("--delivery-timeout-ms", type=int, default=120000)
    produce.add_argument(
        "--max-block-ms",
        type=int,
        default=60000,
        help="max.block.ms: how long to wait for the topic's metadata (a topic just created, or not there)",
    )
    produce.add_argument(
        "--max-in-flight",
        type=int,
        default=1,
        help="max.in.flight.requests.per.connection (1 keeps per-partition order through retries)",
    )
    produce.add_argument(
        "--enable-idempotence",
        choices=["true", "false"],
        help="enable.idempotence (default: on unless --acks or --max-in-flight above 5 rule it out)",
    )
    produce.add_argument(
        "--value-prefix",
        default="",
        help="prefix of generated values (default: a random id, so values are unique per run)",
    )
    produce.add_argument("--progress", action="store_true", help="print a progress line every second on stderr")
    produce.add_argument(
        "--key-count",
        type=bounded_int(1),
        help="give generated records keys key-0 .. key-(N-1) in turn (a compacted topic needs keys)",
    )
    produce.add_argument(
        "--transactional-id",
        help="write in transactions (transactional.id) through the Kafka listener: --bootstrap-server is then a "
        "Kafka listener's address, and --num-records is needed",
    )
    produce.add_argument("--transaction-size", type=bounded_int(1), default=100, help="records per transaction")
    produce.add_argument("--abort-every", type=bounded_int(1), metavar="K", help="abort every K-th transaction")
    produce.set_defaults(func=produce_command)


def _register_consume(subparsers: argparse._SubParsersAction) -> None:
    consume = subparsers.add_parser("consume", help="consume records below the high watermark")
    consume.add_argument("topic")
    consume.add_argument("--partition", type=bounded_int(0))
    start = consume.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true")
    start.add_argument("--offset", metavar="OFFSET", help="'earliest', 'latest' or an offset (needs --partition)")
    consume.add_argument("--max-messages", type=bounded_int(0))
    consume.add_argument("--timeout-ms", type=int, default=10000, help="exit after MS without a record once caught up")
    consume.add_argument(
        "--consumer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="default.api.timeout.ms (how long to wait for a leader; 60000), request.timeout.ms, retry.backoff.ms, "
        "fetch.max.wait.ms, fetch.min.bytes, fetch.max.bytes, max.partition.fetch.bytes",
    )
    consume.add_argument("--json", action="store_true", help="one JSON line per record, then a read_end line each")
    consume.add_argument(
        "--isolation-level",
        choices=["read_uncommitted", "read_committed"],
        default="read_uncommitted",
        help="read_committed: only below the last stable offset, aborted transactions' records left out",
    )
    consume.add_argument(
        "--group",
        metavar="GROUP",
        help="consume as a member of this consumer group: its assigned partitions, from the committed offsets, "
        "committing as it goes (the group protocol goes through the run's Kafka listeners)",
    )
    consume.add_argument(
        "--group-protocol",
        choices=("classic", "consumer"),
        default="classic",
        help="with --group: classic (JoinGroup/SyncGroup, the member assigns with range) or consumer (KIP-848's "
        "ConsumerGroupHeartbeat, the coordinator assigns); Kafka's group.protocol",
    )
    add_connection_arguments(consume)
    consume.set_defaults(func=consume_command)


def _register_partition_and_group_tools(subparsers: argparse._SubParsersAction) -> None:
    """leader-election, reassign-partitions and consumer-groups: Kafka's admin tools, each in a module of its own."""
    from minikafka.client import (
        consumer_groups_command,
        delete_records_command,
        features_command,
        leader_election_command,
        log_dirs_command,
        reassign_partitions_command,
        transactions_command,
    )

    leader_election_command.register(subparsers, add_connection_arguments)
    reassign_partitions_command.register(subparsers, add_connection_arguments)
    consumer_groups_command.register(subparsers)
    delete_records_command.register(subparsers)
    log_dirs_command.register(subparsers)
    transactions_command.register(subparsers)
    features_command.register(subparsers)


def _register_quorum(subparsers: argparse._SubParsersAction) -> None:
    quorum = subparsers.add_parser("quorum", help="the controller quorum")
    quorum_commands = quorum.add_subparsers(dest="quorum_command", required=True, metavar="{describe}")
    quorum_describe = quorum_commands.add_parser("describe", help="leader, epoch, high watermark, voters' lag")
    quorum_describe.add_argument("--json", action="store_true")
    add_connection_arguments(quorum_describe)
    quorum_describe.set_defaults(func=quorum_describe_command)


def _register_perf(subparsers: argparse._SubParsersAction) -> None:
    perf = subparsers.add_parser("perf", help="load tests like Kafka's perf-test tools")
    perf_commands = perf.add_subparsers(dest="perf_command", required=True, metavar="{produce,consume}")
    for name in ("produce", "consume"):
        command = perf_commands.add_parser(name, help=f"{name} throughput and latency")
        command.add_argument("topic")
        command.add_argument("--num-records", type=bounded_int(1), required=True)
        if name == "produce":
            command.add_argument("--record-size", type=bounded_int(1, MAX_RECORD_SIZE), default=1024)
            command.add_argument("--throughput", type=int, default=-1, help="records/s cap; -1: none")
            command.add_argument("--acks", choices=["0", "1", "all", "-1"], default="all")
            command.add_argument(
                "--producer-props",
                nargs="*",
                default=[],
                metavar="KEY=VALUE",
                help=", ".join(PRODUCER_PROPS),
            )
        else:
            command.add_argument(
                "--timeout", type=bounded_int(1), default=10000, metavar="MS", help="give up after MS idle"
            )
        command.add_argument("--json", action="store_true")
        add_connection_arguments(command)
        command.set_defaults(func=perf_produce_command if name == "produce" else perf_consume_command)


# ---- topics ----


def parse_replica_assignment(text: str) -> list[list[int]]:
    """Kafka's `--replica-assignment 1:2:3,2:3:1`: partitions separated by commas, replicas by colons."""
    try:
        assignment = [[int(broker) for broker in part.split(":")] for part in text.split(",")]
    except ValueError:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"--replica-assignment {text!r}: expected broker ids like 1:2:3,2:3:1"
        ) from None
    if any(len(set(replicas)) != len(replicas) for replicas in assignment):
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"--replica-assignment {text!r}: a partition lists a broker twice"
        )
    return assignment


def topic_argument(args: argparse.Namespace) -> str:
    """The topic from the positional NAME or --topic (kafka-topics' spelling), exactly one of them."""
    if args.name is not None and args.topic_option is not None:
        raise CliError("give the topic once: as NAME or as --topic")
    name = args.topic_option if args.topic_option is not None else args.name
    if name is None:
        raise CliError("missing the topic: give NAME or --topic NAME")
    return name


def new_topic_request(args: argparse.Namespace) -> tuple[str, dict[str, str], list[list[int]] | None]:
    """(name, configs, assignment) checked as kafka-topics checks them, before any connection."""
    from minikafka.common.config import ConfigError, parse_overrides
    from minikafka.common.topic import validate_name
    from minikafka.common.topic_config import validate_topic_configs

    name = topic_argument(args)
    validate_name(name)
    if args.replica_assignment and (args.partitions is not None or args.replication_factor is not None):
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, "--replica-assignment cannot be used with --partitions or --replication-factor"
        )
    try:
        configs = parse_overrides(args.config)
    except ConfigError as error:
        raise CliError(str(error).replace("--set", "--config")) from None
    validate_topic_configs(configs)
    assignment = parse_replica_assignment(args.replica_assignment) if args.replica_assignment else None
    return name, configs, assignment


def topics_create(args: argparse.Namespace) -> int:
    from minikafka.client.admin import topic_id_text
    from minikafka.common.topic import check_collision

    name, configs, assignment = new_topic_request(args)
    partitions = -1 if args.partitions is None else args.partitions
    factor = -1 if args.replication_factor is None else args.replication_factor
    with admin_client(args) as admin:
        if admin.servers:
            check_collision(name, [t.name for t in admin.describe_topics()])
        result = admin.create_topic(name, partitions, factor, configs, assignment)
    print(
        f"Created topic {result.name} (topic id {topic_id_text(result.topic_id)}, "
        f"{result.num_partitions} partitions, replication factor {result.replication_factor})."
    )
    return 0


def topics_delete(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        topic_id = admin.delete_topic(args.name)
    print(f"Deleted topic {args.name} (topic id {topic_id}).")
    return 0


def topics_describe(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        topics = admin.describe_topics([args.name] if args.name else [])
    if args.json:
        print_json({"topics": [t.to_json() for t in topics]})
        return 0
    for topic in topics:
        print(f"Topic: {topic.name}\tTopicId: {topic.topic_id}\tPartitionCount: {len(topic.partitions)}")
        for p in topic.partitions:
            print(
                f"\tTopic: {topic.name}\tPartition: {p.partition}\tLeader: {p.leader}\tLeaderEpoch: "
                f"{p.leader_epoch}\tPartitionEpoch: {p.partition_epoch}\tReplicas: "
                f"{','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}\tElr: "
                f"{','.join(map(str, p.elr))}\tLastKnownElr: {','.join(map(str, p.last_known_elr))}"
            )
    return 0


def topics_list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        names = [t.name for t in admin.describe_topics()]
    if args.json:
        print_json({"topics": names})
    else:
        print("\n".join(names))
    return 0


def quorum_describe_command(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        document = admin.describe_quorum()
    if args.json:
        print_json(document)
        return 0
    print(
        f"LeaderId: {document['leader_id']}\nLeaderEpoch: {document['leader_epoch']}\n"
        f"HighWatermark: {document['high_watermark']}"
    )
    for kind in ("voters", "observers"):
        for r in document[kind]:
            directory = f"\tDirectoryId: {r['directory_id']}" if r["directory_id"] else ""
            print(
                f"{kind[:-1].capitalize()}: {r['id']}{directory}\tLogEndOffset: {r['log_end_offset']}\tLag: {r['lag']}"
            )
    return 0


# ---- produce / consume ----


def parse_acks(text: str) -> int:
    return -1 if text in ("all", "-1") else int(text)


def produce_command(args: argparse.Namespace) -> int:
    from minikafka.client.produce_command import ProduceOptions, run_produce

    if args.transactional_id is not None:
        return _transactional_produce(args)

    options = ProduceOptions(
        topic=args.topic,
        acks=parse_acks(args.acks),
        partition=args.partition,
        num_records=args.num_records,
        record_size=args.record_size,
        history=Path(args.history) if args.history else None,
        linger_ms=args.linger_ms,
        batch_size=args.batch_size,
        request_timeout_ms=fitting_request_timeout(args.request_timeout_ms, args.linger_ms, args.delivery_timeout_ms),
        delivery_timeout_ms=args.delivery_timeout_ms,
        max_block_ms=args.max_block_ms,
        max_in_flight=args.max_in_flight,
        enable_idempotence=None if args.enable_idempotence is None else args.enable_idempotence == "true",
        value_prefix=args.value_prefix,
        progress=args.progress,
        key_count=args.key_count,
    )
    options.producer_config()  # an option out of Kafka's range fails here, before any connection
    if options.history is not None:
        check_writable(options.history, "--history")
    _controllers, brokers = resolve_addresses(args)
    if not brokers:
        raise CliError("no broker address: pass --bootstrap-server")
    summary = run_event_loop(run_produce(brokers, options, client_tls(args), client_sasl(args)))
    print(summary.line(), file=sys.stderr)
    return 0 if summary.failed == 0 else 1


def _transactional_produce(args: argparse.Namespace) -> int:
    from minikafka.client.consumer_groups_command import kafka_bootstrap
    from minikafka.client.produce_command import generated_value
    from minikafka.client.transactional_produce import produce_transactionally

    if args.num_records is None:
        raise CliError("--transactional-id needs --num-records (records from stdin are not written in transactions)")
    if args.history or args.command_config:
        raise CliError("--transactional-id does not take --history nor --command-config yet")
    prefix = args.value_prefix or uuid.uuid4().hex[:8]
    values = [generated_value(prefix, i, args.record_size) for i in range(args.num_records)]
    partition = args.partition or 0
    try:
        summary = run_event_loop(
            produce_transactionally(
                kafka_bootstrap(args), args.topic, partition, values, args.transactional_id,
                args.transaction_size, args.abort_every,
            )
        )  # fmt: skip
    except KafkaError as error:
        raise CliError(f"{error.code.name} ({int(error.code)}): {error.message}") from None
    print(summary.line(), file=sys.stderr)
    return 0


def fitting_request_timeout(given: int | None, linger_ms: int, delivery_timeout_ms: int) -> int:
    """request.timeout.ms as given, else its default 30000 lowered to fit delivery.timeout.ms - linger.ms (a short
    --delivery-timeout-ms alone is a usable setting; both given and inconsistent is INVALID_CONFIG, as in Kafka)."""
    if given is not None:
        return given
    return max(1, min(DEFAULT_REQUEST_TIMEOUT_MS, delivery_timeout_ms - linger_ms))


def check_writable(path: Path, option: str) -> None:
    """A file the command appends to: refused in one line when it cannot be opened (e.g. a missing directory)."""
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as error:
        raise CliError(f"{option} {path}: {error.strerror}") from None


def consume_command(args: argparse.Namespace) -> int:
    from minikafka.client.consume_command import ConsumeOptions, run_consume

    _controllers, brokers = resolve_addresses(args)
    if not brokers:
        raise CliError("no broker address: pass --bootstrap-server")
    options = ConsumeOptions(
        topic=args.topic,
        partition=args.partition,
        from_beginning=args.from_beginning,
        offset=args.offset,
        max_messages=args.max_messages,
        timeout_ms=args.timeout_ms,
        as_json=args.json,
        consumer_properties=args.consumer_property,
        isolation_level=args.isolation_level,
    )
    if args.group is not None:
        return _group_consume(args, brokers, options)
    run_event_loop(run_consume(brokers, options, client_tls(args), client_sasl(args)))
    return 0


def _group_consume(args: argparse.Namespace, brokers: list[str], options: object) -> int:
    from minikafka.client.consume_command import consumer_config
    from minikafka.client.consumer import Consumer
    from minikafka.client.consumer_groups_command import kafka_bootstrap
    from minikafka.client.group_consume import run_group_consume

    if args.partition is not None or args.offset is not None:
        raise CliError("--group assigns the partitions and starts at the committed offsets: drop --partition/--offset")
    if args.bootstrap_server and not args.dir:
        raise CliError("--group needs the brokers' Kafka listeners: pass --dir RUN")
    kafka = kafka_bootstrap(argparse.Namespace(bootstrap_server=None, dir=args.dir))

    async def run() -> int:
        config = consumer_config(args.consumer_property, args.isolation_level)
        consumer = Consumer(brokers, config, client_tls(args), client_sasl(args))
        return await run_group_consume(brokers, kafka, args.group, args.topic, options, consumer, args.group_protocol)

    run_event_loop(run())
    return 0


# ---- perf ----

PRODUCER_PROPS = {
    "linger.ms": "linger_ms",
    "batch.size": "batch_size",
    "max.in.flight.requests.per.connection": "max_in_flight_requests_per_connection",
    "request.timeout.ms": "request_timeout_ms",
    "delivery.timeout.ms": "delivery_timeout_ms",
    "max.request.size": "max_request_size",
    "max.block.ms": "max_block_ms",
}


def producer_config_from(acks: int, props: list[str]) -> ProducerConfig:
    from minikafka.client.producer import ProducerConfig

    fields: dict[str, Any] = {}  # ProducerConfig's keyword arguments, by the properties given
    for prop in props:
        key, sep, value = prop.partition("=")
        if not sep or key not in PRODUCER_PROPS:
            raise CliError(
                f"bad --producer-props entry {prop!r}: use KEY=VALUE with KEY one of {', '.join(PRODUCER_PROPS)}"
            )
        try:
            fields[PRODUCER_PROPS[key]] = int(value)
        except ValueError:
            raise KafkaError(
                ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: not a number"
            ) from None
    if "request_timeout_ms" not in fields:
        defaults = ProducerConfig()
        fields["request_timeout_ms"] = fitting_request_timeout(
            None,
            fields.get("linger_ms", defaults.linger_ms),
            fields.get("delivery_timeout_ms", defaults.delivery_timeout_ms),
        )
    return ProducerConfig(acks=acks, **fields)


def _brokers(args: argparse.Namespace) -> list[str]:
    _controllers, brokers = resolve_addresses(args)
    if not brokers:
        raise CliError("no broker address: pass --bootstrap-server")
    if args.num_records <= 0:
        raise CliError("--num-records must be positive")
    return brokers


def perf_produce_command(args: argparse.Namespace) -> int:
    from minikafka.client.perf_produce import PerfProduceOptions, run_perf_produce

    config = producer_config_from(parse_acks(args.acks), args.producer_props)  # checked before any connection
    brokers = _brokers(args)
    options = PerfProduceOptions(args.topic, args.num_records, args.record_size, args.throughput, config)
    result = run_event_loop(run_perf_produce(brokers, options, progress=None if args.json else sys.stderr))
    if args.json:
        print_json(result)
    else:
        print(result["line"])
        if result["failed"]:
            print(f"failed: {result['failed']}", file=sys.stderr)
    return 0 if not result["failed"] else 1


def perf_consume_command(args: argparse.Namespace) -> int:
    from minikafka.client.perf_consume import PerfConsumeOptions, run_perf_consume

    result = run_event_loop(
        run_perf_consume(_brokers(args), PerfConsumeOptions(args.topic, args.num_records, args.timeout))
    )
    if args.json:
        print_json(result)
    else:
        print(result["line"])
    return 0 if not result["timed_out"] else 1

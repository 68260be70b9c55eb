"""Client commands: topics, produce, consume, quorum, perf."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from minikafka.client import user_scram_command
from minikafka.common.cli_support import CliError, bounded_int, print_json, run_event_loop
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.run_dir import newest_run

if TYPE_CHECKING:  # imported lazily where used: grpc's start-up is slow for commands that need none
    from minikafka.client.sasl_exchange import SaslLogin
    from minikafka.common.tls import TlsFiles


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", metavar="RUN", help="the run directory (default: the newest under ./runs/)")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="any broker's address")
    parser.add_argument("--bootstrap-controller", metavar="HOST:PORT", help="any controller's address")
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties (security.protocol=SSL or SASL_SSL, ssl.ca.location, ssl.certificate.location, "
        "ssl.key.location, sasl.mechanism, sasl.username, sasl.password) for the controllers' listener when the "
        "command has controllers, else for the brokers' gRPC listener; default with --dir: the run's admin "
        "certificate for the controllers (RUN/admin-client.properties holds it) and, to the brokers, plaintext or "
        "RUN/client.properties when their gRPC listener is secured",
    )


DEFAULT_REQUEST_TIMEOUT_MS = 30000
MAX_REPLICATION_FACTOR = 32767  # Kafka carries it as an int16
MAX_RECORD_SIZE = 64 * 1024 * 1024  # generated values are held in memory; larger ones fail max.request.size anyway


def register(subparsers: argparse._SubParsersAction) -> None:
    # The order of registration is the order `minikafka --help` lists the commands in.
    _register_topics(subparsers)
    user_scram_command.register(subparsers, add_connection_arguments)
    _register_produce(subparsers)
    _register_consume(subparsers)
    _register_partition_and_group_tools(subparsers)
    _register_quorum(subparsers)
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
        "--group",
        metavar="GROUP",
        help="consume as a member of this consumer group: its assigned partitions, from the committed offsets, "
        "committing as it goes (the group protocol goes through the run's Kafka listeners)",
    )
    add_connection_arguments(consume)
    consume.set_defaults(func=consume_command)


def _register_partition_and_group_tools(subparsers: argparse._SubParsersAction) -> None:
    """leader-election, reassign-partitions and consumer-groups: Kafka's admin tools, each in a module of its own."""
    from minikafka.client import (
        consumer_groups_command,
        delete_records_command,
        leader_election_command,
        log_dirs_command,
        reassign_partitions_command,
    )

    leader_election_command.register(subparsers, add_connection_arguments)
    reassign_partitions_command.register(subparsers, add_connection_arguments)
    consumer_groups_command.register(subparsers)
    delete_records_command.register(subparsers)
    log_dirs_command.register(subparsers)


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


# ---- addresses ----


def resolve_addresses(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(controllers, brokers) from --bootstrap-controller/--bootstrap-server, else from RUN/cluster.json.

    The client reads cluster.json itself (a documented file contract) rather than importing deploy code.
    """
    controllers = [a for a in (args.bootstrap_controller or "").split(",") if a]
    brokers = [a for a in (args.bootstrap_server or "").split(",") if a]
    if controllers or brokers:
        return controllers, brokers
    run = Path(args.dir) if args.dir else newest_run()
    if run is None:
        raise CliError("no cluster given: pass --bootstrap-server/--bootstrap-controller or --dir RUN")
    try:
        data = json.loads((run / "cluster.json").read_text())
    except FileNotFoundError:
        raise CliError(f"no cluster in {run} (missing cluster.json)") from None
    return [c["address"] for c in data["controllers"]], [b["address"] for b in data["brokers"]]


def admin_tls(args: argparse.Namespace):  # noqa: ANN201 - common.tls.TlsFiles | None, imported lazily
    """The TLS material shown to the controllers: --command-config's, else (without explicit addresses) the run
    directory's admin certificate when its node-to-node links are SSL."""
    from minikafka.common.tls import TlsFiles

    if getattr(args, "command_config", None):
        return client_tls_from_properties(Path(args.command_config))
    if args.bootstrap_controller or args.bootstrap_server:
        return None
    run = Path(args.dir) if args.dir else newest_run()
    try:
        data = json.loads((run / "cluster.json").read_text()) if run is not None else {}
    except FileNotFoundError:
        return None
    files = data.get("security", {}).get("admin_tls")
    return TlsFiles.from_json(files) if files else None


def admin_broker_tls(args: argparse.Namespace, controllers: list[str]):  # noqa: ANN201 - TlsFiles | None
    """An admin command's TLS to the brokers' client listener (see broker_security)."""
    return broker_security(args, bool(controllers)).tls


def admin_broker_sasl(args: argparse.Namespace, controllers: list[str]) -> SaslLogin | None:
    """An admin command's SASL login on the brokers' client listener (see broker_security)."""
    return broker_security(args, bool(controllers)).sasl


def client_tls(args: argparse.Namespace):  # noqa: ANN201 - common.tls.TlsFiles | None
    """The TLS material for the brokers' gRPC client listener (see broker_security)."""
    return broker_security(args).tls


def client_sasl(args: argparse.Namespace) -> SaslLogin | None:
    """The SASL login for a GRPC_SASL_SSL client listener (see broker_security)."""
    return broker_security(args).sasl


def broker_security(args: argparse.Namespace, has_controllers: bool = False) -> ClientSecurity:
    """How to reach the brokers' gRPC client listener: --command-config's when it is the brokers' file (a command
    without controllers); else, given explicit addresses, plaintext; else the run's own settings (run_security)."""
    if getattr(args, "command_config", None) and not has_controllers:
        return client_security_from_properties(Path(args.command_config))
    if args.bootstrap_server or args.bootstrap_controller:
        return ClientSecurity(None, None)
    return run_security(Path(args.dir) if args.dir else newest_run())


def run_security(run: Path | None) -> ClientSecurity:
    """A run's brokers' client listener as cluster.json's `security` describes it: plaintext, or the settings of
    the RUN/client.properties `cluster up` wrote; a secured listener without that file is named with what is
    missing, rather than left to fail as an unreachable broker."""
    try:
        security = json.loads((run / "cluster.json").read_text()).get("security", {}) if run is not None else {}
    except FileNotFoundError:
        return ClientSecurity(None, None)
    listener = security.get("client_listener", "GRPC")
    if listener == "GRPC":
        return ClientSecurity(None, None)
    if "client_properties" in security:
        return client_security_from_properties(Path(security["client_properties"]))
    raise CliError(
        f"the brokers' gRPC client listener of {run} is {listener} and the run has no login for it (cluster up "
        "writes RUN/client.properties only from a PLAIN user of sasl.plain.users): give --command-config FILE with "
        f"security.protocol=SASL_SSL, ssl.ca.location={run}/certs/ca.pem, sasl.mechanism, sasl.username and "
        "sasl.password"
    )


def client_tls_from_properties(path: Path):  # noqa: ANN201 - common.tls.TlsFiles | None
    """Kafka clients' (librdkafka's) names: security.protocol, ssl.ca.location, ssl.certificate.location,
    ssl.key.location."""
    return client_security_from_properties(path).tls


@dataclass(frozen=True)
class ClientSecurity:
    """What --command-config says about the brokers' gRPC client listener."""

    tls: TlsFiles | None
    sasl: SaslLogin | None


def client_security_from_properties(path: Path) -> ClientSecurity:
    """--command-config with librdkafka's names: security.protocol (PLAINTEXT, SSL, SASL_SSL), ssl.ca.location,
    ssl.certificate.location, ssl.key.location, sasl.mechanism (or sasl.mechanisms), sasl.username,
    sasl.password."""
    from minikafka.common.config import ConfigError, parse_properties
    from minikafka.common.tls import TlsFiles

    try:
        props = parse_properties(path.read_text(), str(path))
    except (OSError, ConfigError) as error:
        raise CliError(f"cannot read --command-config {path}: {error}") from None
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol == "PLAINTEXT":
        return ClientSecurity(None, None)
    if protocol not in ("SSL", "SASL_SSL"):
        raise CliError(
            f"invalid value '{protocol}' for 'security.protocol' in {path}: must be PLAINTEXT, SSL or SASL_SSL "
            "(minikafka's gRPC listeners take SASL over TLS only)"
        )
    if "ssl.ca.location" not in props:
        raise CliError(f"missing value for 'ssl.ca.location' in {path}: security.protocol={protocol} needs it")
    certificate, key = props.get("ssl.certificate.location"), props.get("ssl.key.location")
    tls = TlsFiles(
        Path(props["ssl.ca.location"]), Path(certificate) if certificate else None, Path(key) if key else None
    )
    return ClientSecurity(tls, _sasl_login(props, path) if protocol == "SASL_SSL" else None)


def _sasl_login(props: dict[str, str], path: Path) -> SaslLogin:
    from minikafka.client.sasl_exchange import MECHANISMS, SaslLogin

    mechanism = props.get("sasl.mechanism") or props.get("sasl.mechanisms")  # librdkafka takes both names
    if not mechanism:
        raise CliError(f"missing value for 'sasl.mechanism' in {path}: security.protocol=SASL_SSL needs it")
    if mechanism.upper() not in MECHANISMS:
        raise CliError(
            f"invalid value '{mechanism}' for 'sasl.mechanism' in {path}: must be one of {', '.join(MECHANISMS)}"
        )
    for key in ("sasl.username", "sasl.password"):
        if not props.get(key):
            raise CliError(f"missing value for '{key}' in {path}: sasl.mechanism={mechanism} needs it")
    return SaslLogin(mechanism.upper(), props["sasl.username"], props["sasl.password"])


def _admin(args: argparse.Namespace):  # noqa: ANN202 - client.admin.AdminClient, imported lazily (grpc start-up)
    from minikafka.client.admin import AdminClient

    controllers, brokers = resolve_addresses(args)
    return AdminClient(
        controllers,
        brokers,
        tls=admin_tls(args),
        broker_tls=admin_broker_tls(args, controllers),
        broker_sasl=admin_broker_sasl(args, controllers),
    )


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
    with _admin(args) as admin:
        if admin.servers:
            check_collision(name, [t.name for t in admin.describe_topics()])
        result = admin.create_topic(name, partitions, factor, configs, assignment)
    print(
        f"Created topic {result.name} (topic id {topic_id_text(result.topic_id)}, "
        f"{result.num_partitions} partitions, replication factor {result.replication_factor})."
    )
    return 0


def topics_delete(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        topic_id = admin.delete_topic(args.name)
    print(f"Deleted topic {args.name} (topic id {topic_id}).")
    return 0


def topics_describe(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
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
    with _admin(args) as admin:
        names = [t.name for t in admin.describe_topics()]
    if args.json:
        print_json({"topics": names})
    else:
        print("\n".join(names))
    return 0


def quorum_describe_command(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
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
            print(f"{kind[:-1].capitalize()}: {r['id']}\tLogEndOffset: {r['log_end_offset']}\tLag: {r['lag']}")
    return 0


# ---- produce / consume ----


def parse_acks(text: str) -> int:
    return -1 if text in ("all", "-1") else int(text)


def produce_command(args: argparse.Namespace) -> int:
    from minikafka.client.produce_command import ProduceOptions, run_produce

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
        consumer = Consumer(brokers, consumer_config(args.consumer_property), client_tls(args), client_sasl(args))
        return await run_group_consume(brokers, kafka, args.group, args.topic, options, consumer)

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


def producer_config_from(acks: int, props: list[str]):  # noqa: ANN201 - client.producer.ProducerConfig
    from minikafka.client.producer import ProducerConfig

    fields: dict[str, int] = {}
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

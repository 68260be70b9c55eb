"""Client commands: topics, produce, consume, quorum, perf."""

from __future__ import annotations

import argparse

from common.cli_support import not_built


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", metavar="RUN", help="the run directory (default: the newest under ./runs/)")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="any broker's address")
    parser.add_argument("--bootstrap-controller", metavar="HOST:PORT", help="any controller's address")


def register(subparsers: argparse._SubParsersAction) -> None:
    topics = subparsers.add_parser("topics", help="create, describe and list topics")
    topic_commands = topics.add_subparsers(dest="topics_command", required=True, metavar="{create,describe,list}")
    create = topic_commands.add_parser("create", help="create a topic through the active controller")
    create.add_argument("name")
    create.add_argument("--partitions", type=int, default=-1)
    create.add_argument("--replication-factor", type=int, default=-1)
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    create.add_argument("--replica-assignment", metavar="1:2,2:3,...")
    add_connection_arguments(create)
    create.set_defaults(func=not_built("topics create", 6))
    describe = topic_commands.add_parser("describe", help="partitions, leaders, epochs and ISRs")
    describe.add_argument("name", nargs="?")
    describe.add_argument("--json", action="store_true")
    add_connection_arguments(describe)
    describe.set_defaults(func=not_built("topics describe", 6))
    listing = topic_commands.add_parser("list", help="topic names")
    listing.add_argument("--json", action="store_true")
    add_connection_arguments(listing)
    listing.set_defaults(func=not_built("topics list", 6))

    produce = subparsers.add_parser("produce", help="produce records (from stdin, or generated)")
    produce.add_argument("topic")
    produce.add_argument("--acks", choices=["0", "1", "all", "-1"], default="all")
    produce.add_argument("--partition", type=int)
    produce.add_argument("--num-records", type=int)
    produce.add_argument("--record-size", type=int, default=100)
    produce.add_argument("--history", metavar="FILE")
    add_connection_arguments(produce)
    produce.set_defaults(func=not_built("produce", 6))

    consume = subparsers.add_parser("consume", help="consume records below the high watermark")
    consume.add_argument("topic")
    consume.add_argument("--partition", type=int)
    start = consume.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true")
    start.add_argument("--offset", type=int)
    consume.add_argument("--max-messages", type=int)
    consume.add_argument("--timeout-ms", type=int, default=10000)
    consume.add_argument("--json", action="store_true")
    add_connection_arguments(consume)
    consume.set_defaults(func=not_built("consume", 6))

    quorum = subparsers.add_parser("quorum", help="the controller quorum")
    quorum_commands = quorum.add_subparsers(dest="quorum_command", required=True, metavar="{describe}")
    quorum_describe = quorum_commands.add_parser("describe", help="leader, epoch, high watermark, voters' lag")
    quorum_describe.add_argument("--json", action="store_true")
    add_connection_arguments(quorum_describe)
    quorum_describe.set_defaults(func=not_built("quorum describe", 6))

    perf = subparsers.add_parser("perf", help="load tests like Kafka's perf-test tools")
    perf_commands = perf.add_subparsers(dest="perf_command", required=True, metavar="{produce,consume}")
    for name in ("produce", "consume"):
        command = perf_commands.add_parser(name, help=f"{name} throughput and latency")
        command.add_argument("topic")
        command.add_argument("--num-records", type=int, required=True)
        if name == "produce":
            command.add_argument("--record-size", type=int, default=1024)
            command.add_argument("--throughput", type=int, default=-1, help="records/s cap; -1: none")
            command.add_argument("--acks", choices=["0", "1", "all", "-1"], default="all")
        command.add_argument("--json", action="store_true")
        add_connection_arguments(command)
        command.set_defaults(func=not_built(f"perf {name}", 8))

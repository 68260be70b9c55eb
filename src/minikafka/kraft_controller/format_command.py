"""`minikafka controller-format`, Kafka's `kafka-storage format` for a controller: write its metadata log directory's
identity (meta.properties with a new directory id) and the quorum it starts from (kraft.version 1, KIP-853):
`--standalone` (a quorum of this controller alone), `--initial-controllers ID@HOST:PORT:DIRECTORY_ID,...` (the
initial voters with their endpoints; this controller must be one, and gets its directory id from the list) or
`--no-initial-controllers` (a controller to add later: an observer until then)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NamedTuple

from minikafka.common.cli_support import CliError, add_config_arguments
from minikafka.common.config import load_config_file, parse_overrides
from minikafka.common.endpoints import parse_host_port
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.raft.bootstrap import format_controller
from minikafka.storage.meta_properties import new_directory_id, read_meta_properties


class InitialVoters(NamedTuple):
    directories: dict[int, str]  # id -> directory id
    endpoints: dict[int, str]  # id -> host:port


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser(
        "controller-format", help="format a controller's metadata log directory (kafka-storage format)"
    )
    add_config_arguments(parser)
    quorum = parser.add_mutually_exclusive_group(required=True)
    quorum.add_argument("--standalone", action="store_true", help="the quorum is this controller alone")
    quorum.add_argument(
        "--initial-controllers", metavar="ID@HOST:PORT:DIRECTORY_ID,...", help="the initial voters (this one too)"
    )
    quorum.add_argument(
        "--no-initial-controllers", action="store_true", help="a controller to add later (an observer until then)"
    )
    parser.add_argument("--ignore-formatted", action="store_true", help="leave an already formatted directory be")
    parser.set_defaults(func=format_command)


def parse_initial_controllers(text: str) -> InitialVoters:
    """Kafka's `--initial-controllers` list: `id@host:port:directoryId`, comma-separated."""
    voters = InitialVoters({}, {})
    for item in (part.strip() for part in text.split(",") if part.strip()):
        node, sep, rest = item.partition("@")
        address, _, directory = rest.rpartition(":")
        if not sep or not node.isdigit() or not directory or int(node) in voters.directories:
            expected = "expected id@host:port:directoryId, each id once"
            raise CliError(f"invalid --initial-controllers entry {item!r}: {expected}")
        try:
            host, port = parse_host_port(address)
        except ValueError as error:
            raise CliError(f"invalid --initial-controllers entry {item!r}: {error}") from None
        voters.directories[int(node)] = directory
        voters.endpoints[int(node)] = f"{host}:{port}"
    return voters


def format_command(args: argparse.Namespace) -> int:
    from minikafka.kraft_controller.process import own_endpoint

    config = load_config_file(ControllerConfig, Path(args.config), parse_overrides(args.set))
    log_dir = config.data_dir
    if read_meta_properties(log_dir) is not None:
        if args.ignore_formatted:
            print(f"Log directory {log_dir} is already formatted; left as it is.")
            return 0
        raise CliError(f"Log directory {log_dir} is already formatted. Use --ignore-formatted to leave it be.")
    if args.standalone:
        directory = new_directory_id()
        me = config.node_id
        voters: InitialVoters | None = InitialVoters({me: directory}, {me: own_endpoint(config)})
    elif args.initial_controllers:
        voters = parse_initial_controllers(args.initial_controllers)
        if config.node_id not in voters.directories:
            raise CliError(f"--initial-controllers does not name this controller (node.id {config.node_id})")
        directory = voters.directories[config.node_id]
    else:
        directory, voters = new_directory_id(), None
    log_dir.mkdir(parents=True, exist_ok=True)
    directories = None if voters is None else voters.directories
    format_controller(
        log_dir, config.cluster_id, config.node_id, directory, directories, voters.endpoints if voters else None
    )
    initial = "none (it joins as an observer)" if voters is None else sorted(voters.directories)
    print(f"Formatted metadata directory {log_dir}: directory.id {directory}, kraft.version 1, initial voters", initial)
    return 0

"""The `minikafka broker` and `minikafka dump-log` commands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.common.cli_support import CliError, add_config_arguments, print_json, run_event_loop
from minikafka.common.config import load_config_file, parse_overrides
from minikafka.common.errors import ErrorCode, KafkaError, ListenerBindError


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = subparsers.add_parser("broker", help="run one broker process")
    add_config_arguments(parser)
    parser.set_defaults(func=run_broker)

    dump = subparsers.add_parser("dump-log", help="print the batches of a segment (.log) or the entries of an index")
    dump.add_argument("path", type=Path)
    dump.add_argument("--json", action="store_true")
    dump.add_argument("--print-data-log", action="store_true", help="also print every record")
    dump.set_defaults(func=run_dump_log)


def load(args: argparse.Namespace) -> BrokerConfig:
    return load_config_file(BrokerConfig, Path(args.config), parse_overrides(args.set))


def run_broker(args: argparse.Namespace) -> int:
    from minikafka.broker.kafka_wire.listener_security import listener_security
    from minikafka.broker.process import run_broker_process
    from minikafka.common.event_log import configure_event_log

    config = load(args)
    for listener in config.kafka_listeners:  # an unreadable key or certificate is one line before anything starts
        listener_security(config, listener.name)
    configure_event_log(config.label, config.events_dir, config.log_level)
    try:
        run_event_loop(run_broker_process(config))
    except ListenerBindError as error:
        raise CliError(str(error)) from None
    except OSError as error:  # the log dir failed outside a partition log (the metadata log, at start-up)
        structlog.get_logger().error("log_dir_offline", log_dir=str(config.data_dir), reason=str(error))
        raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"log dir {config.data_dir} failed: {error}") from None
    return 0


def run_dump_log(args: argparse.Namespace) -> int:
    from minikafka.storage.dump_log import dump_log, format_text

    if not args.path.exists():
        raise CliError(f"{args.path}: no such file")
    if args.path.is_dir():
        raise CliError(f"{args.path} is a directory: give one of its .log or .index files")
    try:
        dump = dump_log(args.path, print_records=args.print_data_log)
    except ValueError as error:
        raise CliError(str(error)) from None
    except OSError as error:
        raise CliError(f"{args.path}: {error.strerror}") from None
    if args.json:
        print_json(dump)
    else:
        print(format_text(dump))
    return 0

"""`minikafka`: one entry point gathering the commands of every package."""

from __future__ import annotations

import os
import sys

import broker.cli
import client.cli
import deploy.cli
import kraft_controller.cli
from common.cli_support import CliError, OneLineErrorParser
from common.config import ConfigError
from common.errors import KafkaError
from common.event_log import configure_event_log


def build_parser() -> OneLineErrorParser:
    parser = OneLineErrorParser(
        prog="minikafka",
        description="A runnable mini-Kafka: KRaft controllers, replicating brokers, faults and analysis.",
    )
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=OneLineErrorParser
    )
    kraft_controller.cli.register(subparsers)
    broker.cli.register(subparsers)
    client.cli.register(subparsers)
    deploy.cli.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    reexecuted = deploy.cli.run_in_namespace(args, sys.argv[1:] if argv is None else argv)
    if reexecuted is not None:
        return reexecuted
    # Tools log readable lines to stderr only (stdout is their output); server processes reconfigure with a file.
    configure_event_log(f"minikafka-{args.command}", None, level="warning")
    try:
        return int(args.func(args) or 0)
    except (CliError, ConfigError, KafkaError) as error:
        sys.stderr.write(f"minikafka {args.command}: error: {error}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, and keep the interpreter's final flush from
        # failing again on the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a tool killed by the closed pipe


if __name__ == "__main__":
    sys.exit(main())

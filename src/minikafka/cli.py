"""`minikafka`: one entry point gathering the commands of every package."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from minikafka.broker import cli as broker_cli
from minikafka.client import cli as client_cli
from minikafka.common.cli_support import CliError, OneLineErrorParser
from minikafka.common.config import ConfigError
from minikafka.common.errors import KafkaError
from minikafka.common.event_log import configure_event_log
from minikafka.deploy import cli as deploy_cli
from minikafka.kraft_controller import cli as controller_cli
from minikafka.sim import SIMULATE_HELP

if TYPE_CHECKING:
    from minikafka.kraft_controller.process import ControllerNode, Stoppable


async def _controller_kafka_listeners(node: ControllerNode) -> Sequence[Stoppable]:
    """A controller's Kafka listeners: the broker's wire layer, which the controller package may not import."""
    from minikafka.broker.kafka_wire import controller_apis

    return await controller_apis.start_listeners(node)


def build_parser(command: str | None = None) -> OneLineErrorParser:
    """The whole command line; `simulate`'s own arguments only when it is the command, because the simulator
    imports every node's code (most of a second of CPU that every tool and node process would pay)."""
    parser = OneLineErrorParser(
        prog="minikafka",
        description="A runnable mini-Kafka: KRaft controllers, replicating brokers, faults and analysis.",
    )
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=OneLineErrorParser
    )
    controller_cli.register(subparsers, _controller_kafka_listeners)
    broker_cli.register(subparsers)
    client_cli.register(subparsers)
    deploy_cli.register(subparsers)
    if command == "simulate":
        from minikafka.sim import cli as sim_cli

        sim_cli.register(subparsers)
    else:
        subparsers.add_parser("simulate", help=SIMULATE_HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    command = next((a for a in arguments if not a.startswith("-")), None)
    args = build_parser(command).parse_args(arguments)
    reexecuted = deploy_cli.run_in_namespace(args, arguments)
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

"""The `minikafka controller` command."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from minikafka.common.cli_support import CliError, add_config_arguments, run_event_loop
from minikafka.common.config import load_config_file, parse_overrides
from minikafka.common.errors import ListenerBindError
from minikafka.kraft_controller import format_command
from minikafka.kraft_controller.config import ControllerConfig

if TYPE_CHECKING:
    from minikafka.kraft_controller.process import FrontEnd


def register(subparsers: argparse._SubParsersAction[Any], front_end: FrontEnd | None = None) -> None:
    """`front_end`: starts the controller's Kafka listeners (the entry point passes the broker's wire layer)."""
    parser = subparsers.add_parser("controller", help="run one KRaft controller process")
    add_config_arguments(parser)
    parser.set_defaults(func=functools.partial(run_controller, front_end=front_end))
    format_command.register(subparsers)


def load(args: argparse.Namespace) -> ControllerConfig:
    return load_config_file(ControllerConfig, Path(args.config), parse_overrides(args.set))


def run_controller(args: argparse.Namespace, front_end: FrontEnd | None = None) -> int:
    from minikafka.common.event_log import configure_event_log
    from minikafka.kraft_controller.process import run_controller_process

    config = load(args)
    configure_event_log(config.label, config.events_dir, config.log_level)
    try:
        run_event_loop(run_controller_process(config, front_end))
    except ListenerBindError as error:
        structlog.get_logger().error("listener_bind_failed", address=error.address, reason=str(error))
        raise CliError(str(error)) from None
    return 0

"""The `minikafka controller` command."""

from __future__ import annotations

import argparse
from pathlib import Path

from common.cli_support import CliError, add_config_arguments
from common.config import load_config_file, parse_overrides
from kraft_controller.config import ControllerConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("controller", help="run one KRaft controller process")
    add_config_arguments(parser)
    parser.set_defaults(func=run_controller)


def load(args: argparse.Namespace) -> ControllerConfig:
    return load_config_file(ControllerConfig, Path(args.config), parse_overrides(args.set))


def run_controller(args: argparse.Namespace) -> int:
    load(args)
    raise CliError("the controller process is not built yet (issue #4); the config is valid")

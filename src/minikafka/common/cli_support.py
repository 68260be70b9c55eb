"""What every package's command-line module shares: the error type, one-line failures, JSON output."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn, TypeVar

from minikafka.common.garbage_collection import tune_garbage_collector
from minikafka.common.memory_allocator import keep_freed_memory
from minikafka.common.node_environment import simulated_node

Handler = Callable[[argparse.Namespace], int]
T = TypeVar("T")


class CliError(Exception):
    """A user-facing failure: printed as one line on stderr, exit status 1."""


def not_built(command: str, issue: int) -> Handler:
    """The handler of a command whose capability does not exist yet: says so and fails (no fake output)."""

    def handler(_args: argparse.Namespace) -> int:
        raise CliError(f"'{command}' is not built yet (issue #{issue})")

    return handler


def run_event_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine on uvloop, with the garbage collector and the allocator set for a long-running
    process. Only entry points install uvloop, so no library chooses the event loop."""
    import uvloop

    tune_garbage_collector()
    keep_freed_memory()
    return uvloop.run(main)


def stop_requested() -> asyncio.Event:
    """An event a process's main coroutine awaits: set by SIGTERM or SIGINT (a graceful stop); a simulated node's is
    set by its simulation."""
    node = simulated_node()
    if node is not None:
        return node.stopping
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    return stopping


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, separators=(",", ":"), default=str) + "\n")
    sys.stdout.flush()


INT32_MAX = 2**31 - 1


def bounded_int(low: int, high: int = INT32_MAX, error: str = "") -> Callable[[str], int]:
    """An argparse `type` accepting an integer in [low, high] (Kafka's ConfigDef ranges; int32 unless said), so a
    bad number is refused before anything starts; `error` names the Kafka error the value would get."""
    prefix = f"{error}: " if error else ""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{prefix}invalid integer {text!r}") from None
        if not low <= value <= high:
            bound = f"at least {low}" if value < low else f"at most {high}"
            raise argparse.ArgumentTypeError(f"{prefix}{value} is out of range: must be {bound}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its own messages
    return parse


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None


def positive_float(text: str) -> float:
    """An argparse `type` for a duration or rate that must be above zero."""
    value = _number(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is out of range: must be a positive number")
    return value


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (`minikafka: error: ...`), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="the node's .properties file")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key (repeatable)"
    )


def probability(text: str) -> float:
    """An argparse `type` for a probability, in [0, 1]."""
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not a probability: must be in [0, 1]")
    return value

"""`minikafka transactions --abort`: which marker is written, picked from DescribeProducers by the transaction's
start offset as kafka-transactions does, and what the command line needs."""

from __future__ import annotations

import argparse
from typing import NamedTuple

import pytest

from minikafka.client import transactions_command
from minikafka.client.transaction_abort import AbortSpec, spec_at_offset, spec_for
from minikafka.common.cli_support import CliError


class Producer(NamedTuple):
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    current_txn_start_offset: int


PRODUCERS = [Producer(4, 0, 3, -1), Producer(5, 2, 1, 12), Producer(6, 0, -1, 20)]


def test_the_producer_whose_transaction_starts_at_the_offset_is_aborted() -> None:
    assert spec_at_offset("payments", 0, 12, PRODUCERS) == AbortSpec("payments", 0, 5, 2, 1)


def test_a_producer_with_no_coordinator_epoch_gets_zero() -> None:
    assert spec_at_offset("payments", 0, 20, PRODUCERS) == AbortSpec("payments", 0, 6, 0, 0)
    assert spec_for("payments", 3, 9, 1, -1) == AbortSpec("payments", 3, 9, 1, 0)


@pytest.mark.parametrize("offset", [-1, 0, 13])
def test_no_transaction_starting_there_is_a_clear_error(offset: int) -> None:
    with pytest.raises(CliError, match=f"Could not find any open transactions starting at offset {offset} on "
                       "partition payments-0"):  # fmt: skip
        spec_at_offset("payments", 0, offset, PRODUCERS)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    transactions_command.register(parser.add_subparsers())
    return parser.parse_args(["transactions", "--abort", *argv])


def test_the_command_line_names_the_transaction_one_way_or_the_other() -> None:
    assert transactions_command._abort_target(_args("--topic", "t", "--partition", "0", "--start-offset", "3")) is None
    named = _args("--topic", "t", "--partition", "0", "--producer-id", "5", "--producer-epoch", "1",
                  "--coordinator-epoch", "2")  # fmt: skip
    assert transactions_command._abort_target(named) == (5, 1, 2)
    with pytest.raises(CliError, match="--topic and --partition"):
        transactions_command._abort_target(_args("--start-offset", "3"))
    with pytest.raises(CliError, match="either with --start-offset"):
        transactions_command._abort_target(_args("--topic", "t", "--partition", "0", "--producer-id", "5"))

"""`minikafka features upgrade|downgrade --feature NAME=LEVEL`: what each --feature asks (Kafka's upgrade types) and
the clear errors of a malformed one."""

from __future__ import annotations

import argparse

import pytest

from minikafka.client.features_command import (
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureChange,
    parse_changes,
)
from minikafka.common.cli_support import CliError


def args(*features: str, downgrade: bool = False, unsafe: bool = False) -> argparse.Namespace:
    return argparse.Namespace(feature=list(features), downgrade=downgrade, unsafe=unsafe)


def test_each_feature_is_asked_with_kafkas_upgrade_type() -> None:
    assert parse_changes(args("transaction.version=2")) == [FeatureChange("transaction.version", 2, UPGRADE)]
    assert parse_changes(args("transaction.version=1", downgrade=True))[0].upgrade_type == SAFE_DOWNGRADE
    assert parse_changes(args("transaction.version=0", downgrade=True, unsafe=True))[0].upgrade_type == UNSAFE_DOWNGRADE


@pytest.mark.parametrize("given", [("transaction.version",), ("=2",), ("transaction.version=two",),
                                   ("transaction.version=1", "transaction.version=2")])  # fmt: skip
def test_a_malformed_or_repeated_feature_is_a_clear_error(given: tuple[str, ...]) -> None:
    with pytest.raises(CliError):
        parse_changes(args(*given))

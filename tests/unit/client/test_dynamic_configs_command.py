"""`minikafka configs` for topics and brokers: kafka-configs' --add-config syntax and entity rules."""

from __future__ import annotations

import argparse

import pytest

from minikafka.client.dynamic_configs_command import BROKER, TOPIC, Entity, entity_of, parse_add_config
from minikafka.common.cli_support import CliError


def test_add_config_pairs_and_bracketed_lists() -> None:
    assert parse_add_config("retention.ms=1000,cleanup.policy=[delete,compact],x=") == [
        ("retention.ms", "1000"),
        ("cleanup.policy", "delete,compact"),
        ("x", ""),
    ]
    for bad in ("novalue", "=1", "a=[1,2"):
        with pytest.raises(CliError):
            parse_add_config(bad)


def _args(**kw: object) -> argparse.Namespace:
    return argparse.Namespace(**{"entity_type": "brokers", "entity_name": None, "entity_default": False, **kw})


def test_entities() -> None:
    assert entity_of(_args(entity_type="topics", entity_name="orders")) == Entity(TOPIC, "orders")
    assert entity_of(_args(entity_default=True)) == Entity(BROKER, "")
    assert entity_of(_args(entity_name="2")) == Entity(BROKER, "2")
    for bad in (_args(entity_type="topics"), _args(entity_name="x"), _args(entity_name="1", entity_default=True)):
        with pytest.raises(CliError):
            entity_of(bad)

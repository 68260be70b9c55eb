"""`minikafka configs --describe --all`: every config of a topic or a broker with its value, source and synonyms, as
kafka-configs --all prints them, asked of the brokers' Kafka listeners with DescribeConfigs (a broker's own configs
from that broker, as Kafka's admin client asks)."""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from typing import Any

from minikafka.client.consumer_groups_command import cluster_metadata, kafka_bootstrap
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.cli_support import print_json, run_event_loop
from minikafka.common.config_source import ConfigSource
from minikafka.common.errors import ErrorCode, KafkaError

DESCRIBE_CONFIGS = 32
TOPIC, BROKER = 2, 4  # Kafka's ConfigResource.Type


@dataclass(frozen=True)
class DescribedSynonym:
    name: str
    value: str | None
    source: str


@dataclass(frozen=True)
class DescribedConfig:
    name: str
    value: str | None
    source: str
    sensitive: bool
    read_only: bool
    synonyms: tuple[DescribedSynonym, ...]


def describe_all(args: argparse.Namespace, resource_type: int, name: str, described: str) -> int:
    """Print every config of the resource; `described` names it as kafka-configs does ("topic orders")."""
    client = KafkaWireClient(kafka_bootstrap(args))

    async def run() -> list[DescribedConfig]:
        try:
            return await all_configs(client, resource_type, name)
        finally:
            await client.close()

    configs = run_event_loop(run())
    if args.json:
        kind = "topics" if resource_type == TOPIC else "brokers"
        print_json({"entity_type": kind, "entity_name": name, "configs": [asdict(config) for config in configs]})
        return 0
    default = resource_type == BROKER and not name
    print("Default configs for brokers in the cluster are:" if default else f"All configs for {described} are:")
    for config in configs:
        synonyms = ", ".join(f"{s.source}:{s.name}={_shown(s.value)}" for s in config.synonyms)
        print(
            f"  {config.name}={_shown(config.value)} sensitive={str(config.sensitive).lower()} synonyms={{{synonyms}}}"
        )
    return 0


async def all_configs(client: KafkaWireClient, resource_type: int, name: str) -> list[DescribedConfig]:
    """DescribeConfigs v4 with synonyms, sorted by name; a broker's resource goes to that broker."""
    cls = request_class(DESCRIBE_CONFIGS, 4)
    resource = nested(cls, "DescribeConfigsResource")(
        resource_type=resource_type, resource_name=name, configuration_keys=None
    )
    body = cls(resources=(resource,), include_synonyms=True, include_documentation=False)
    if resource_type == BROKER and name:
        response = await client.connection(await _broker_address(client, int(name))).send(body)
    else:
        response = await client.any_broker(body)
    [result] = response.results
    error = ErrorCode.of(int(result.error_code.value))
    if error != ErrorCode.NONE:
        raise KafkaError(error, result.error_message or error.name)
    return sorted((_config(entry) for entry in result.configs), key=lambda config: config.name)


async def _broker_address(client: KafkaWireClient, broker_id: int) -> str:
    brokers, _ = await cluster_metadata(client)
    if broker_id not in brokers:
        raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not in the cluster's metadata")
    return brokers[broker_id]


def _config(entry: Any) -> DescribedConfig:
    synonyms = tuple(DescribedSynonym(s.name, s.value, ConfigSource.name_of(s.source)) for s in entry.synonyms)
    return DescribedConfig(
        name=entry.name,
        value=entry.value,
        source=ConfigSource.name_of(entry.config_source),
        sensitive=bool(entry.is_sensitive),
        read_only=bool(entry.read_only),
        synonyms=synonyms,
    )


def _shown(value: str | None) -> str:
    return "null" if value is None else value

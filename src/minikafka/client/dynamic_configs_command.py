"""`minikafka configs --entity-type topics|brokers`: dynamic configs as Kafka's kafka-configs changes them
(IncrementalAlterConfigs SET and DELETE through the active controller, which writes ConfigRecords).

    minikafka configs --alter --entity-type topics --entity-name orders --add-config retention.ms=60000
    minikafka configs --alter --entity-type brokers --entity-default --add-config min.insync.replicas=2
    minikafka configs --alter --entity-type brokers --entity-name 1 --delete-config log.retention.ms
    minikafka configs --describe --entity-type topics --entity-name orders [--json]"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from minikafka.common.cli_support import CliError, print_json
from minikafka.common.config_source import ConfigSource
from minikafka.common.errors import ErrorCode, KafkaError

TOPIC, BROKER = 2, 4  # Kafka's ConfigResource.Type
SET, DELETE = 0, 1  # Kafka's AlterConfigOp.OpType
_SOURCES = {TOPIC: ConfigSource.DYNAMIC_TOPIC_CONFIG.name, BROKER: ConfigSource.DYNAMIC_BROKER_CONFIG.name}


@dataclass(frozen=True)
class Entity:
    resource_type: int
    name: str  # "" for the cluster-wide broker default

    def described(self) -> str:
        if self.resource_type == TOPIC:
            return f"topic {self.name}"
        return f"broker {self.name}" if self.name else "default brokers"


def entity_of(args: argparse.Namespace) -> Entity:
    if args.entity_type == "topics":
        if args.entity_default or not args.entity_name:
            raise CliError("--entity-type topics needs --entity-name TOPIC")
        return Entity(TOPIC, args.entity_name)
    if args.entity_default and args.entity_name:
        raise CliError("give --entity-name or --entity-default, not both")
    if args.entity_name and not args.entity_name.isdigit():
        raise CliError(f"--entity-name {args.entity_name!r}: a broker is named by its id")
    return Entity(BROKER, args.entity_name or "")


def parse_add_config(text: str) -> list[tuple[str, str]]:
    """Kafka's `k1=v1,k2=[a,b]`: a value holding commas goes in square brackets."""
    pairs, position = [], 0
    while position < len(text):
        key, equals, rest = text[position:].partition("=")
        if not equals or not key.strip():
            raise CliError(f"--add-config {text!r}: expected key=value,...")
        if rest.startswith("["):
            end = rest.find("]")
            if end < 0:
                raise CliError(f"--add-config {text!r}: unclosed [")
            value, consumed = rest[1:end], end + 1
        else:
            end = rest.find(",")
            value, consumed = (rest, len(rest)) if end < 0 else (rest[:end], end)
        pairs.append((key.strip(), value))
        position += len(key) + 1 + consumed
        if position < len(text) and text[position] == ",":
            position += 1
    if not pairs:
        raise CliError("--add-config is empty")
    return pairs


def command(admin: Any, args: argparse.Namespace) -> int:
    entity = entity_of(args)
    if args.describe:
        return _describe(admin, entity, args.json)
    return _alter(admin, entity, args)


def _alter(admin: Any, entity: Entity, args: argparse.Namespace) -> int:
    from minikafka.pb import controller_pb2

    if not args.add_config and not args.delete_config:
        raise CliError("--alter needs --add-config or --delete-config")
    request = controller_pb2.AlterConfigsRequest(incremental=True)
    resource = request.resources.add()
    resource.resource.resource_type = entity.resource_type
    resource.resource.resource_name = entity.name
    for key, value in parse_add_config(args.add_config) if args.add_config else []:
        resource.configs.add(name=key, op=SET, value=value)
    for key in (k.strip() for k in (args.delete_config or "").split(",")):
        if key:
            resource.configs.add(name=key, op=DELETE)
    [result] = admin.alter_configs(request)
    if result.error_code != ErrorCode.NONE:
        raise KafkaError(ErrorCode.of(result.error_code), f"{entity.described()}: {result.error_message}")
    if entity.resource_type == BROKER and not entity.name:
        print("Completed updating default config for brokers in the cluster.")
    else:
        print(f"Completed updating config for {entity.described()}.")
    return 0


def _describe(admin: Any, entity: Entity, as_json: bool) -> int:
    [described] = admin.describe_dynamic_configs([(entity.resource_type, entity.name)])
    if described.error_code != ErrorCode.NONE:
        raise KafkaError(ErrorCode.of(described.error_code), f"{entity.described()}: {described.error_message}")
    configs = dict(sorted(described.configs.items()))
    if as_json:
        kind = "topics" if entity.resource_type == TOPIC else "brokers"
        print_json({"entity_type": kind, "entity_name": entity.name, "configs": configs})
        return 0
    if entity.resource_type == BROKER and not entity.name:
        print("Default configs for brokers in the cluster are:")
        source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.name
    else:
        print(f"Dynamic configs for {entity.described()} are:")
        source = _SOURCES[entity.resource_type]
    for key, value in configs.items():
        print(f"  {key}={value} sensitive=false synonyms={{{source}:{key}={value}}}")
    return 0

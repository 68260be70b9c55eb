"""DescribeCluster and DescribeConfigs, answered from this broker's metadata image and configuration."""

from __future__ import annotations

from typing import Any

from minikafka.broker.config import BrokerConfig
from minikafka.broker.kafka_wire.api_versions import DESCRIBE_CLUSTER, DESCRIBE_CONFIGS
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.errors import ErrorCode
from minikafka.common.topic_config import LONG_MAX, TOPIC_CONFIGS

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # Kafka's ConfigResource.Type
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5  # Kafka's ConfigSource
CONFIG_TYPES = {"int": 3, "long": 5, "list": 7, "boolean": 1}  # Kafka's ConfigType
NO_AUTHORIZED_OPERATIONS = -2147483648


def describe_cluster(ctx: WireContext, request: Request) -> Any:
    """As a KRaft broker answers: the brokers on this listener, and a live broker (this one) as the controller
    that clients send controller requests to; it forwards them."""
    cls = response_class(DESCRIBE_CLUSTER, request.header.api_version)
    image = ctx.manager.metadata.image
    entry = sibling(cls, "DescribeClusterBroker")
    brokers = []
    for broker_id, broker in sorted(image.brokers.items()):
        endpoint = next((e for e in broker.endpoints if e.name == ctx.listener_name), None)
        if not broker.fenced and endpoint is not None:
            brokers.append(build(entry, broker_id=broker_id, host=endpoint.host, port=endpoint.port, rack=None))
    return build(
        cls,
        throttle_time=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=1,
        cluster_id=ctx.manager.config.cluster_id,
        controller_id=ctx.manager.config.node_id,
        brokers=tuple(brokers),
        cluster_authorized_operations=NO_AUTHORIZED_OPERATIONS,
    )


def topic_defaults(config: BrokerConfig) -> dict[str, str]:
    """Each topic config's value when the topic does not set it: the broker's log.* setting."""
    flush_ms = config.log_flush_interval_ms
    return {
        "min.insync.replicas": str(config.min_insync_replicas),
        "segment.bytes": str(config.log_segment_bytes),
        "retention.ms": str(config.log_retention_ms),
        "retention.bytes": str(config.log_retention_bytes),
        "flush.messages": str(config.log_flush_interval_messages),
        "flush.ms": str(LONG_MAX if flush_ms is None else flush_ms),
        "cleanup.policy": "delete",
        "unclean.leader.election.enable": "false",
    }


def describe_configs(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_CONFIGS, request.header.api_version)
    results = tuple(_resource(ctx, cls, resource) for resource in request.body.resources)
    return build(cls, throttle_time=0, results=results)


def _resource(ctx: WireContext, cls: type, resource: Any) -> Any:
    result_cls = sibling(cls, "DescribeConfigsResult")
    name = resource.resource_name
    base = {"resource_type": resource.resource_type, "resource_name": name}
    image = ctx.manager.metadata.image
    if resource.resource_type == TOPIC_RESOURCE:
        if name not in image.topics_by_name:
            return build(
                result_cls, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=None, configs=(), **base
            )
        defaults = topic_defaults(ctx.manager.config)
        values = {key: (image.topic_config(name, key), DYNAMIC_TOPIC_CONFIG) for key in defaults}
        values = {key: (v, s) if v is not None else (defaults[key], DEFAULT_CONFIG) for key, (v, s) in values.items()}
    elif resource.resource_type == BROKER_RESOURCE and name in ("", str(ctx.manager.config.node_id)):
        values = {"broker.id": (str(ctx.manager.config.node_id), STATIC_BROKER_CONFIG)}
    else:
        return build(
            result_cls, error_code=ErrorCode.INVALID_REQUEST, error_message=f"resource {name!r}", configs=(), **base
        )
    wanted = resource.configuration_keys
    entry_cls = sibling(cls, "DescribeConfigsResourceResult")
    configs = tuple(
        build(
            entry_cls,
            name=key,
            value=value,
            read_only=resource.resource_type == BROKER_RESOURCE,
            config_source=source,
            is_sensitive=False,
            synonyms=(),
            config_type=CONFIG_TYPES.get(TOPIC_CONFIGS[key].kind, 0) if key in TOPIC_CONFIGS else 0,
            documentation=None,
        )
        for key, (value, source) in sorted(values.items())
        if wanted is None or key in wanted
    )
    return build(result_cls, error_code=ErrorCode.NONE, error_message=None, configs=configs, **base)

"""DescribeCluster and DescribeConfigs, answered from this broker's metadata image and configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minikafka.broker.kafka_wire.api_versions import DESCRIBE_CLUSTER, DESCRIBE_CONFIGS
from minikafka.broker.kafka_wire.config_entries import (
    ConfigEntry,
    DynamicBrokerValues,
    broker_entries,
    cluster_default_entries,
    group_entries,
    topic_entries,
)
from minikafka.broker.kafka_wire.config_resources import (
    BROKER_RESOURCE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    broker_name_problem,
    config_denial,
)
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation
from minikafka.common.errors import ErrorCode
from minikafka.common.topic_config import TOPIC_CONFIGS
from minikafka.kraft_controller.metadata.image import MetadataImage

NO_AUTHORIZED_OPERATIONS = -2147483648
BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2  # DescribeCluster's endpoint types (KIP-919)
ENDPOINT_TYPE_NAMES = {BROKER_ENDPOINT: "BROKER", CONTROLLER_ENDPOINT: "CONTROLLER"}


@dataclass(frozen=True)
class EndpointTypeProblem:
    code: ErrorCode
    message: str


def endpoint_type_problem(served: int, asked: int, api_version: int) -> EndpointTypeProblem | None:
    """Kafka's check of DescribeCluster's endpoint type against the one this listener serves. A v0 request names
    none (it means BROKER), so a controller answers it INVALID_REQUEST, as Kafka's does."""
    if asked == served:
        return None
    if asked not in ENDPOINT_TYPE_NAMES:
        code = ErrorCode.INVALID_REQUEST if api_version == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        return EndpointTypeProblem(code, f"Unsupported endpoint type {asked}")
    code = ErrorCode.INVALID_REQUEST if api_version == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE
    return EndpointTypeProblem(
        code,
        f"The request was sent to an endpoint of type {ENDPOINT_TYPE_NAMES[served]}, but we wanted an endpoint of "
        f"type {ENDPOINT_TYPE_NAMES[asked]}",
    )


def describe_cluster_error(cls: type, code: ErrorCode, message: str) -> Any:
    """A DescribeCluster answer carrying only its error: every other field at its schema default, as Kafka's."""
    return build(
        cls,
        throttle_time=0,
        error_code=code,
        error_message=message,
        endpoint_type=BROKER_ENDPOINT,
        cluster_id="",
        controller_id=-1,
        brokers=(),
        cluster_authorized_operations=NO_AUTHORIZED_OPERATIONS,
    )


def describe_cluster(ctx: WireContext, request: Request) -> Any:
    """As a KRaft broker answers: the brokers on this listener (v2 may ask for the fenced ones too, marked), and
    a live broker (this one) as the controller that clients send controller requests to; it forwards them. A
    broker serves the BROKER endpoint type (1) only."""
    cls = response_class(DESCRIBE_CLUSTER, request.header.api_version)
    image = ctx.manager.metadata.image
    entry = sibling(cls, "DescribeClusterBroker")
    endpoint_type = getattr(request.body, "endpoint_type", BROKER_ENDPOINT)
    with_fenced = getattr(request.body, "include_fenced_brokers", False)
    brokers = []
    for broker_id, broker in sorted(image.brokers.items()):
        endpoint = next((e for e in broker.endpoints if e.name == ctx.listener_name), None)
        if endpoint is not None and (with_fenced or not broker.fenced):
            brokers.append(
                build(
                    entry,
                    broker_id=broker_id,
                    host=endpoint.host,
                    port=endpoint.port,
                    rack=broker.rack or None,
                    is_fenced=broker.fenced,
                )
            )
    problem = endpoint_type_problem(BROKER_ENDPOINT, endpoint_type, request.header.api_version)
    if problem is not None:
        return describe_cluster_error(cls, problem.code, problem.message)
    return build(
        cls,
        throttle_time=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=BROKER_ENDPOINT,
        cluster_id=ctx.manager.config.cluster_id,
        controller_id=ctx.manager.config.node_id,
        brokers=tuple(brokers),
        cluster_authorized_operations=(
            ctx.cluster_authorized_operations()
            if request.body.include_cluster_authorized_operations
            else NO_AUTHORIZED_OPERATIONS
        ),
    )


@dataclass(frozen=True)
class Include:
    """What the request asks for beside the values (the fields are absent from the versions before them)."""

    synonyms: bool
    documentation: bool


def describe_configs(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_CONFIGS, request.header.api_version)
    body = request.body
    include = Include(getattr(body, "include_synonyms", False), getattr(body, "include_documentation", False))
    results = tuple(_resource(ctx, cls, resource, include) for resource in body.resources)
    return build(cls, throttle_time=0, results=results)


def _resource(ctx: WireContext, cls: type, resource: Any, include: Include) -> Any:
    result_cls = sibling(cls, "DescribeConfigsResult")
    name = resource.resource_name
    base = {"resource_type": resource.resource_type, "resource_name": name}
    config = ctx.manager.config
    image = ctx.manager.metadata.image
    denial = config_denial(ctx, resource.resource_type, name, AclOperation.DESCRIBE_CONFIGS)
    if denial is not None:
        return build(result_cls, error_code=denial, error_message=None, configs=(), **base)
    if resource.resource_type == TOPIC_RESOURCE:
        if name not in image.topics_by_name:
            return build(
                result_cls, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=None, configs=(), **base
            )
        topic_values = {key: image.topic_config(name, key) for key in TOPIC_CONFIGS}
        entries = topic_entries(config, topic_values, _dynamic(image, config.node_id))
    elif resource.resource_type == BROKER_RESOURCE:
        # A broker describes only its own static configs; the AdminClient sends a broker's resource to that broker.
        problem = broker_name_problem(name, config.node_id)
        if problem is not None:
            return build(result_cls, error_code=ErrorCode.INVALID_REQUEST, error_message=problem, configs=(), **base)
        if name == "":
            entries = cluster_default_entries(image.broker_configs.get("", {}))
        else:
            entries = broker_entries(config, _dynamic(image, config.node_id))
    elif resource.resource_type == GROUP_RESOURCE and name:
        entries = group_entries(config, image.group_configs.get(name, {}))
    else:
        return build(
            result_cls, error_code=ErrorCode.INVALID_REQUEST, error_message=f"resource {name!r}", configs=(), **base
        )
    wanted = resource.configuration_keys
    configs = tuple(_entry(cls, entry, include) for entry in entries if wanted is None or entry.name in wanted)
    return build(result_cls, error_code=ErrorCode.NONE, error_message=None, configs=configs, **base)


def _dynamic(image: MetadataImage, node_id: int) -> DynamicBrokerValues:
    return DynamicBrokerValues(image.broker_configs.get(str(node_id), {}), image.broker_configs.get("", {}))


def _entry(cls: type, entry: ConfigEntry, include: Include) -> Any:
    synonym_cls = sibling(cls, "DescribeConfigsSynonym")
    synonyms = tuple(build(synonym_cls, name=s.name, value=s.value, source=s.source) for s in entry.synonyms)
    return build(
        sibling(cls, "DescribeConfigsResourceResult"),
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=entry.source,
        is_sensitive=entry.sensitive,
        synonyms=synonyms if include.synonyms else (),
        config_type=entry.config_type,
        documentation=entry.doc if include.documentation else None,
    )

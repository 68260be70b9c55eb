"""Dynamic configs in the metadata log (Kafka's ConfigurationControlManager): the ConfigRecords an alter generates,
and the cluster-wide min.insync.replicas that KIP-966 needs every node to share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from minikafka.common.errors import ErrorCode
from minikafka.common.group_config import GROUP_CONFIGS, group_configs_problem
from minikafka.common.topic_config import DYNAMIC_BROKER_CONFIGS, TOPIC_CONFIGS, TopicConfigDef, config_problem
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.metadata.image import MIN_INSYNC_REPLICAS, MetadataImage
from minikafka.kraft_controller.metadata.records import (
    CLUSTER_DEFAULT,
    ConfigRecord,
    ConfigResourceType,
    PartitionChange,
    Record,
)


def apply_records(image: MetadataImage, records: Iterable[Record]) -> MetadataImage:
    """A scratch image with `records` applied, to check later resources of the same request against."""
    for record in records:
        image = image.replay(record, image.offset)
    return image


def elr_safety_records(image: MetadataImage, static_min_insync_replicas: int) -> list[Record]:
    """With eligible.leader.replicas.version on, Kafka's maybeGenerateElrSafetyRecords: a cluster-wide
    min.insync.replicas (the active controller's static value) when the log has none, and no per-broker one. The
    controller puts a replica in the ELR only while the ISR is below its min ISR; that is safe only if the leader's
    HWM stood still meanwhile, which the leader decides with its own min ISR: both must read the same value."""
    if not image.elr_enabled:
        return []
    records: list[Record] = []
    if image.broker_config(CLUSTER_DEFAULT, MIN_INSYNC_REPLICAS) is None:
        value = str(static_min_insync_replicas)
        records.append(ConfigRecord(ConfigResourceType.BROKER, CLUSTER_DEFAULT, MIN_INSYNC_REPLICAS, value))
    for resource_name, configs in sorted(image.broker_configs.items()):
        if resource_name != CLUSTER_DEFAULT and MIN_INSYNC_REPLICAS in configs:
            records.append(ConfigRecord(ConfigResourceType.BROKER, resource_name, MIN_INSYNC_REPLICAS, None))
    return records


# ---- IncrementalAlterConfigs and AlterConfigs ----


class AlterConfigOp(IntEnum):
    """Kafka's AlterConfigOp.OpType numbers."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class AlterableConfig:
    name: str
    op: AlterConfigOp
    value: str | None


@dataclass(frozen=True)
class AlterConfigsResource:
    resource_type: int  # Kafka's ConfigResource.Type
    resource_name: str
    configs: tuple[AlterableConfig, ...]


@dataclass(frozen=True)
class AlterConfigsRequest:
    """IncrementalAlterConfigs, or with `incremental` False the legacy AlterConfigs, whose SETs replace every dynamic
    config of the resource (a key it leaves out is deleted)."""

    resources: tuple[AlterConfigsResource, ...]
    validate_only: bool = False
    incremental: bool = True


@dataclass(frozen=True)
class AlterConfigsResourceResult:
    resource_type: int
    resource_name: str
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True)
class AlterConfigsResponse:
    results: tuple[AlterConfigsResourceResult, ...]


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def alter_configs(image: MetadataImage, request: AlterConfigsRequest) -> ControllerResult[AlterConfigsResponse]:
    """Each resource altered all or nothing, in request order, each against the image after the earlier ones
    (Kafka's ConfigurationControlManager.incrementalAlterConfigs / legacyAlterConfigs); a min.insync.replicas
    change clears the ELRs it governs, as Kafka does, since they were chosen under the old value."""
    records: list[Record] = []
    results = []
    scratch = image
    for resource in request.resources:
        try:
            changes = _resource_records(scratch, resource, request.incremental)
        except _Refused as refused:
            results.append(
                AlterConfigsResourceResult(
                    resource.resource_type, resource.resource_name, refused.code, refused.message
                )
            )
            continue
        changes += _elr_clearing(scratch, changes)
        results.append(AlterConfigsResourceResult(resource.resource_type, resource.resource_name, ErrorCode.NONE))
        if not request.validate_only:
            records += changes
            scratch = apply_records(scratch, changes)
    return ControllerResult(tuple(records), AlterConfigsResponse(tuple(results)))


def _resource_records(image: MetadataImage, resource: AlterConfigsResource, incremental: bool) -> list[Record]:
    kind, definitions, current = _resource_of(image, resource)
    wanted = dict(current)
    if not incremental:
        wanted = {}
    is_group = kind is ConfigResourceType.GROUP
    for config in resource.configs:
        value = config.value if config.op is AlterConfigOp.SET else None
        definition = definitions.get(config.name)
        if definition is None and kind is ConfigResourceType.BROKER:
            definition = _custom_broker_config(config.name)
        known = definitions if definition is None else {config.name: definition}
        problem = config_problem(known, config.name, value, kind="group" if is_group else None)
        if problem is not None or definition is None:
            raise _Refused(ErrorCode.INVALID_CONFIG, problem or config.name)
        value = _new_value(definition, config, wanted.get(config.name))
        if value is None:
            wanted.pop(config.name, None)
        else:
            wanted[config.name] = value
    _check_elr_rules(image, resource, current, wanted)
    if is_group:
        problem = group_configs_problem(wanted)
        if problem is not None:
            raise _Refused(ErrorCode.INVALID_CONFIG, problem)
    records: list[Record] = []
    for key in sorted(set(current) | set(wanted)):
        if current.get(key) != wanted.get(key):
            records.append(ConfigRecord(kind, resource.resource_name, key, wanted.get(key)))
    return records


def _custom_broker_config(name: str) -> TopicConfigDef:
    """A broker config this controller does not define: stored as given, as Kafka's controller stores any name for a
    broker (a plugin's own setting, say); the broker refuses the names it knows to be static before forwarding."""
    return TopicConfigDef(name, "string", lambda _value: None, name)


def _resource_of(
    image: MetadataImage, resource: AlterConfigsResource
) -> tuple[ConfigResourceType, Mapping[str, TopicConfigDef], dict[str, str]]:
    """The resource's type, the definitions its keys are checked with, and its dynamic configs now."""
    name = resource.resource_name
    if resource.resource_type == ConfigResourceType.TOPIC:
        if name not in image.topics_by_name:
            raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        return ConfigResourceType.TOPIC, TOPIC_CONFIGS, dict(image.topic_configs.get(name, {}))
    if resource.resource_type == ConfigResourceType.BROKER:
        if name != CLUSTER_DEFAULT and not name.isdigit():
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Illegal non-integral BROKER resource type name: {name}")
        return ConfigResourceType.BROKER, DYNAMIC_BROKER_CONFIGS, dict(image.broker_configs.get(name, {}))
    if resource.resource_type == ConfigResourceType.GROUP:
        if not name:
            raise _Refused(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
        return ConfigResourceType.GROUP, GROUP_CONFIGS, dict(image.group_configs.get(name, {}))
    raise _Refused(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}")


def _new_value(definition: TopicConfigDef, config: AlterableConfig, current: str | None) -> str | None:
    """The key's value after the operation; APPEND and SUBTRACT work on lists only."""
    if config.op is AlterConfigOp.SET:
        return config.value
    if config.op is AlterConfigOp.DELETE:
        return None
    if definition.kind != "list":
        raise _Refused(ErrorCode.INVALID_CONFIG, f"Can not apply the operation to non-list config {config.name}")
    items = [item for item in (current or "").split(",") if item]
    given = [item.strip() for item in (config.value or "").split(",") if item.strip()]
    if config.op is AlterConfigOp.APPEND:
        items += [item for item in given if item not in items]
    else:
        items = [item for item in items if item not in given]
    value = ",".join(items)
    problem = config_problem({definition.name: definition}, definition.name, value) if value else None
    if problem is not None:
        raise _Refused(ErrorCode.INVALID_CONFIG, problem)
    return value or None


def _check_elr_rules(
    image: MetadataImage, resource: AlterConfigsResource, current: Mapping[str, str], wanted: Mapping[str, str]
) -> None:
    """With the ELR on, every node must read one min.insync.replicas: no per-broker value, and the cluster default
    stays (Kafka's messages)."""
    if not image.elr_enabled or resource.resource_type != ConfigResourceType.BROKER:
        return
    touched = any(c.name == MIN_INSYNC_REPLICAS for c in resource.configs) or (
        current.get(MIN_INSYNC_REPLICAS) != wanted.get(MIN_INSYNC_REPLICAS)
    )
    if not touched:
        return
    if resource.resource_name != CLUSTER_DEFAULT:
        raise _Refused(
            ErrorCode.INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
        )
    if wanted.get(MIN_INSYNC_REPLICAS) is None:
        raise _Refused(
            ErrorCode.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
        )


def _elr_clearing(image: MetadataImage, changes: list[Record]) -> list[Record]:
    """PartitionChanges emptying the ELR and LastKnownElr of the partitions whose min ISR the changes set: a
    topic's own, or every partition's for the cluster default."""
    topics: set[str] | None = set()
    for change in changes:
        if not isinstance(change, ConfigRecord) or change.name != MIN_INSYNC_REPLICAS:
            continue
        if change.resource_type is ConfigResourceType.TOPIC and topics is not None:
            topics.add(change.resource_name)
        elif change.resource_type is ConfigResourceType.BROKER and change.resource_name == CLUSTER_DEFAULT:
            topics = None
    if topics == set():
        return []
    return [
        PartitionChange(topic.topic_id, index, elr=(), last_known_elr=(), reason="min_isr_config_change")
        for topic, index, p in image.partitions()
        if (topics is None or topic.name in topics) and (p.elr or p.last_known_elr)
    ]


# ---- reads ----


@dataclass(frozen=True)
class DynamicConfigs:
    resource_type: int
    resource_name: str
    error_code: ErrorCode
    error_message: str
    configs: Mapping[str, str]


def describe_dynamic_configs(image: MetadataImage, resources: Iterable[tuple[int, str]]) -> list[DynamicConfigs]:
    """The dynamic configs of each (resource type, name) as the metadata log holds them (kafka-configs --describe)."""
    described = []
    for resource_type, name in resources:
        try:
            _, _, current = _resource_of(image, AlterConfigsResource(resource_type, name, ()))
        except _Refused as refused:
            described.append(DynamicConfigs(resource_type, name, refused.code, refused.message, {}))
            continue
        described.append(DynamicConfigs(resource_type, name, ErrorCode.NONE, "", current))
    return described

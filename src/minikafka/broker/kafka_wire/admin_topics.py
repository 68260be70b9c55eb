"""CreateTopics and DeleteTopics: a broker forwards them to the active controller (as a KRaft broker forwards
admin requests), and answers with the controller's per-topic results."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from minikafka.broker.kafka_wire.api_versions import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.forwarded import forwarded_outcome
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.topic import validate_name
from minikafka.pb import controller_pb2

ZERO_UUID = uuid.UUID(int=0)
CREATE, TOPIC = AclOperation.CREATE, ResourceType.TOPIC
DENIED = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")


def _timeout_ms(body: Any) -> int:
    return int(body.timeout.total_seconds() * 1000)


def _topic_id(raw: bytes) -> uuid.UUID:
    return uuid.UUID(bytes=raw) if len(raw) == 16 else ZERO_UUID


async def create_topics(ctx: WireContext, request: Request) -> Any:
    body = request.body
    # Kafka: CREATE on the cluster, or on each topic; a topic refused is not forwarded.
    cluster_create = ctx.allowed_on_cluster(AclOperation.CREATE)
    denied = {t.name for t in body.topics if not cluster_create and not ctx.allowed(CREATE, TOPIC, t.name)}
    forwarded = controller_pb2.CreateTopicsRequest(timeout_ms=_timeout_ms(body), validate_only=body.validate_only)
    for topic in body.topics:
        if topic.name in denied:
            continue
        entry = forwarded.topics.add(
            name=topic.name,
            num_partitions=topic.num_partitions,
            replication_factor=topic.replication_factor,
            configs={c.name: c.value for c in topic.configs if c.value is not None},
        )
        for assignment in topic.assignments:
            entry.assignments.add(partition_index=assignment.partition_index, broker_ids=list(assignment.broker_ids))
    answer = await _forward(ctx, "CreateTopics", forwarded, bool(forwarded.topics))
    cls = response_class(CREATE_TOPICS, request.header.api_version)
    entry_cls = sibling(cls, "CreatableTopicResult")
    results = {r.name: r for r in answer.topics} if answer is not None else {}
    topics = []
    for topic in body.topics:
        result = results.get(topic.name)
        code, message = DENIED if topic.name in denied else forwarded_outcome(answer, result)
        topics.append(
            build(
                entry_cls,
                name=topic.name,
                topic_id=_topic_id(result.topic_id) if result is not None else ZERO_UUID,
                error_code=code,
                error_message=message,
                topic_config_error_code=ErrorCode.NONE,
                num_partitions=result.num_partitions if result is not None and code == ErrorCode.NONE else -1,
                replication_factor=result.replication_factor if result is not None and code == ErrorCode.NONE else -1,
                configs=(),
            )
        )
    return build(cls, throttle_time=0, topics=tuple(topics))


async def delete_topics(ctx: WireContext, request: Request) -> Any:
    body = request.body
    image = ctx.manager.metadata.image
    if hasattr(body, "topic_names"):
        names = list(body.topic_names)
    else:  # v6: by name or by topic id
        names = []
        for state in body.topics:
            known = image.topic(state.topic_id) if state.name is None else None
            names.append(state.name if state.name is not None else (known.name if known else str(state.topic_id)))
    denied = {name for name in names if not ctx.allowed(AclOperation.DELETE, TOPIC, name)}
    allowed = [name for name in names if name not in denied]
    forwarded = controller_pb2.DeleteTopicsRequest(topic_names=allowed, timeout_ms=_timeout_ms(body))
    answer = await _forward(ctx, "DeleteTopics", forwarded, bool(allowed))
    cls = response_class(DELETE_TOPICS, request.header.api_version)
    entry_cls = sibling(cls, "DeletableTopicResult")
    results = {r.name: r for r in answer.responses} if answer is not None else {}
    responses = []
    for name in dict.fromkeys(names):  # a duplicated name has one answer, as in Kafka
        result = results.get(name)
        code, message = DENIED if name in denied else forwarded_outcome(answer, result)
        topic_id = _topic_id(result.topic_id) if result is not None else ZERO_UUID
        responses.append(build(entry_cls, name=name, topic_id=topic_id, error_code=code, error_message=message))
    return build(cls, throttle_time=0, responses=tuple(responses))


async def create_partitions(ctx: WireContext, request: Request) -> Any:
    body = request.body
    denied = {t.name for t in body.topics if not ctx.allowed(AclOperation.ALTER, TOPIC, t.name)}
    forwarded = controller_pb2.CreatePartitionsRequest(timeout_ms=_timeout_ms(body), validate_only=body.validate_only)
    for topic in body.topics:
        if topic.name in denied:
            continue
        entry = forwarded.topics.add(name=topic.name, count=topic.count)
        for assignment in topic.assignments or ():
            entry.assignments.add(broker_ids=list(assignment.broker_ids))
    answer = await _forward(ctx, "CreatePartitions", forwarded, bool(forwarded.topics))
    cls = response_class(CREATE_PARTITIONS, request.header.api_version)
    entry_cls = sibling(cls, "CreatePartitionsTopicResult")
    results = {r.name: r for r in answer.results} if answer is not None else {}
    topics = []
    for topic in body.topics:
        code, message = DENIED if topic.name in denied else forwarded_outcome(answer, results.get(topic.name))
        topics.append(build(entry_cls, name=topic.name, error_code=code, error_message=message))
    return build(cls, throttle_time=0, results=tuple(topics))


async def _forward(ctx: WireContext, method: str, request: Any, anything: bool) -> Any:
    """The controller's answer; no call when every topic was refused here."""
    return await ctx.manager.controller.call_forwarded(method, request) if anything else None


def auto_create_topics(ctx: WireContext, names: list[str]) -> None:
    """Kafka's auto.create.topics.enable: ask the controller to create topics a Metadata request named, with the
    broker's num.partitions and default.replication.factor (Kafka's AutoTopicCreationManager), without waiting (a
    name it refuses stays unknown)."""
    creating = ctx.manager.auto_creations
    pending = sorted({name for name in names if name not in creating and _legal(name)})
    if not pending:
        return
    config = ctx.manager.config
    forwarded = controller_pb2.CreateTopicsRequest(timeout_ms=5000)
    for name in pending:
        forwarded.topics.add(
            name=name, num_partitions=config.num_partitions, replication_factor=config.default_replication_factor
        )
    task = asyncio.get_running_loop().create_task(ctx.manager.controller.call("CreateTopics", forwarded))
    for name in pending:
        creating[name] = task
    task.add_done_callback(lambda _done: [creating.pop(name, None) for name in pending])


def _legal(name: str) -> bool:
    try:
        validate_name(name)
    except KafkaError:
        return False
    return True

"""OffsetDelete through the Kafka listener's handler and the production coordinator shell: Kafka's refusals
(ACLs, unknown partitions, an empty group id), a consumer-protocol group's subscribed topics kept, and an offset
gone only after its tombstone was written to __consumer_offsets with acks=all."""

from __future__ import annotations

import asyncio
import dataclasses
from types import SimpleNamespace
from typing import Any

from immutables import Map
from kio.schema.offset_commit.v8 import request as commit_v8
from kio.schema.offset_delete.v0 import request as delete_v0
from kio.schema.offset_fetch.v7 import request as fetch_v7
from test_consumer_group_wire import answer, heartbeat, leading_manager, loaded

from minikafka.broker.client_authorizer import Caller, ClientAuthorizer
from minikafka.broker.group.coordinator import CoordinatorConfig, GroupCoordinator
from minikafka.broker.group.records import OffsetCommitKey, decode
from minikafka.broker.group.state import GroupConfig
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.common.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import iter_batches
from minikafka.common.standard_authorizer import AuthorizerSettings

OFFSET_COMMIT, OFFSET_FETCH, OFFSET_DELETE = 8, 9, 47


def offset_delete(group: str, *partitions: tuple[str, int]) -> Request:
    topics = tuple(
        delete_v0.OffsetDeleteRequestTopic(
            name=name,
            partitions=tuple(
                delete_v0.OffsetDeleteRequestPartition(partition_index=p) for n, p in partitions if n == name
            ),
        )
        for name in dict.fromkeys(n for n, _ in partitions)
    )
    return Request(ApiHeader(OFFSET_DELETE, 0, 1), "test", delete_v0.OffsetDeleteRequest(group_id=group, topics=topics))


def simple_commit(offset: int) -> Request:
    partition = commit_v8.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=None
    )
    body = commit_v8.OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=(commit_v8.OffsetCommitRequestTopic(name="t", partitions=(partition,)),),
    )
    return Request(ApiHeader(OFFSET_COMMIT, 8, 1), "test", body)


def committed() -> Request:
    body = fetch_v7.OffsetFetchRequest(group_id="g", topics=None, require_stable=False)
    return Request(ApiHeader(OFFSET_FETCH, 7, 1), "test", body)


def errors(response: Any) -> dict[tuple[str, int], ErrorCode]:
    return {(t.name, p.partition_index): ErrorCode(p.error_code) for t in response.topics for p in t.partitions}


def coordinator() -> tuple[GroupCoordinator, WireContext, Any]:
    config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
    manager = leading_manager()
    groups = GroupCoordinator(manager, SimpleNamespace(), config)  # type: ignore[arg-type]
    return groups, WireContext(groups.manager, "PLAINTEXT", groups=groups), manager


def test_a_consumer_protocol_groups_topics_are_kept_and_an_empty_groups_offset_goes_once_written() -> None:
    async def scenario() -> list[Any]:
        groups, ctx, manager = coordinator()
        groups.group("g")
        await loaded(groups)
        await answer(ctx, heartbeat(0, ()))  # a member subscribed to t
        asked = [
            await answer(ctx, offset_delete("g", ("t", 0), ("t", 5), ("x", 0))),
            await answer(ctx, offset_delete("")),
        ]
        await answer(ctx, heartbeat(-1))
        before = len(manager.written)
        asked.append(await answer(ctx, simple_commit(42)))
        asked.append(await answer(ctx, offset_delete("g", ("t", 0))))
        asked.append(await answer(ctx, committed()))
        asked.append([r for batch in manager.written[before + 1 :] for r in batch_records(batch)])
        return asked

    subscribed, no_id, commit, deleted, fetched, records = asyncio.run(scenario())
    assert subscribed.error_code == ErrorCode.NONE and errors(subscribed) == {
        ("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
        ("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("x", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert no_id.error_code == ErrorCode.INVALID_GROUP_ID and no_id.topics == ()
    assert errors(commit) == {("t", 0): ErrorCode.NONE}
    assert deleted.error_code == ErrorCode.NONE and errors(deleted) == {("t", 0): ErrorCode.NONE}
    assert fetched.topics == ()  # nothing committed any more
    assert (OffsetCommitKey("g", "t", 0), None) in records  # the tombstone, written with acks=all


def batch_records(batch: bytes) -> list[tuple[Any, Any]]:
    decoded = [decode(r.key, r.value) for b in iter_batches(batch) for r in b.records()]
    return [(d.key, d.value) for d in decoded]


def test_delete_on_the_group_and_read_on_each_topic_are_needed() -> None:
    alice = Caller("User:alice", "127.0.0.1", "PLAINTEXT")

    def allow(operation: AclOperation, resource_type: ResourceType, name: str) -> AclBinding:
        return AclBinding(
            resource_type, name, PatternType.LITERAL, alice.principal, "*", operation, AclPermissionType.ALLOW
        )

    async def scenario(acls: Map) -> Any:
        groups, admin, _ = coordinator()
        authorizer = ClientAuthorizer(AuthorizerSettings(enabled=True), lambda: acls)
        ctx = dataclasses.replace(admin, caller=alice, authorizer=authorizer)
        groups.group("g")
        await loaded(groups)
        await answer(admin, simple_commit(42))
        return await answer(ctx, offset_delete("g", ("t", 0)))

    read_group = Map({"1": allow(AclOperation.READ, ResourceType.GROUP, "g")})
    refused = asyncio.run(scenario(read_group))
    assert refused.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED and refused.topics == ()
    delete_group = Map({"1": allow(AclOperation.DELETE, ResourceType.GROUP, "g")})
    topic_refused = asyncio.run(scenario(delete_group))
    assert topic_refused.error_code == ErrorCode.NONE
    assert errors(topic_refused) == {("t", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    both = Map({**delete_group, "2": allow(AclOperation.READ, ResourceType.TOPIC, "t")})
    assert errors(asyncio.run(scenario(both))) == {("t", 0): ErrorCode.NONE}

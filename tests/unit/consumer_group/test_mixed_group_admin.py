"""DescribeGroups and ListGroups of a consumer group with a classic member, as Kafka's GroupMetadataManager answers
them: DescribeGroups describes classic groups only (a consumer group, mixed or not, is Dead with no members, as
for a group that does not exist), ListGroups lists it once, as a consumer group, and filters it by type and state;
ConsumerGroupDescribe tells each member's protocol."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kio.schema.consumer_group_describe.v1 import request as consumer_describe_v1
from kio.schema.describe_groups.v5 import request as describe_v5
from kio.schema.describe_groups.v6 import request as describe_v6
from kio.schema.list_groups.v5 import request as list_v5
from kio.schema.offset_commit.v8 import request as commit_v8

from minikafka.broker.group.coordinator import CoordinatorConfig, GroupCoordinator
from minikafka.broker.group.state import GroupConfig
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.common.errors import ErrorCode
from tests.unit.consumer_group.test_consumer_group_wire import answer, classic_join, heartbeat, leading_manager, loaded

DESCRIBE_GROUPS, LIST_GROUPS, OFFSET_COMMIT, CONSUMER_GROUP_DESCRIBE = 15, 16, 8, 69


def commit(member_id: str, generation: int) -> Request:
    partition = commit_v8.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=5, committed_leader_epoch=-1, committed_metadata=""
    )
    body = commit_v8.OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=None,
        topics=(commit_v8.OffsetCommitRequestTopic(name="t", partitions=(partition,)),),
    )
    return Request(ApiHeader(OFFSET_COMMIT, 8, 1), "test", body)


def describe(version: int = 5, group: str = "g") -> Request:
    module = describe_v6 if version == 6 else describe_v5
    body = module.DescribeGroupsRequest(groups=(group,), include_authorized_operations=False)
    return Request(ApiHeader(DESCRIBE_GROUPS, version, 1), "test", body)


def consumer_describe() -> Request:
    body = consumer_describe_v1.ConsumerGroupDescribeRequest(group_ids=("g",), include_authorized_operations=False)
    return Request(ApiHeader(CONSUMER_GROUP_DESCRIBE, 1, 1), "test", body)


def listing(types: tuple[str, ...] = (), states: tuple[str, ...] = ()) -> Request:
    body = list_v5.ListGroupsRequest(states_filter=states, types_filter=types)
    return Request(ApiHeader(LIST_GROUPS, 5, 1), "test", body)


def test_a_mixed_group_is_described_as_kafka_describes_a_non_classic_group_and_listed_as_a_consumer_group() -> None:
    async def scenario() -> list[Any]:
        config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
        groups = GroupCoordinator(leading_manager(), SimpleNamespace(), config)  # type: ignore[arg-type]
        ctx = WireContext(groups.manager, "PLAINTEXT", groups=groups)
        groups.group("g")
        await loaded(groups)
        await answer(ctx, heartbeat(0, ()))
        required = await answer(ctx, classic_join())
        joined = await answer(ctx, classic_join(required.member_id))
        assert joined.error_code == ErrorCode.NONE
        # Its committed offsets are kept beside the consumer group: they do not make a classic group of it.
        committed = await answer(ctx, commit(joined.member_id, joined.generation_id))
        assert committed.topics[0].partitions[0].error_code == ErrorCode.NONE
        return [
            await answer(ctx, describe()),
            await answer(ctx, listing()),
            await answer(ctx, listing(types=("Consumer",))),
            await answer(ctx, listing(types=("classic",))),
            await answer(ctx, listing(states=("reconciling", "stable", "assigning"))),
            await answer(ctx, listing(states=("empty",))),
            await answer(ctx, consumer_describe()),
            await answer(ctx, describe(6)),
            await answer(ctx, describe(6, "nobody")),
        ]

    described, listed, consumer, classic, active, empty, members, v6, missing = asyncio.run(scenario())
    (group,) = described.groups
    assert (group.error_code, group.group_state, group.protocol_type, group.members) == (ErrorCode.NONE, "Dead", "", ())
    (entry,) = listed.groups
    assert (entry.group_id, entry.protocol_type, entry.group_type) == ("g", "consumer", "consumer")
    assert entry.group_state in ("Assigning", "Reconciling", "Stable")
    assert [g.group_id for g in consumer.groups] == ["g"] and classic.groups == ()
    assert [g.group_id for g in active.groups] == ["g"] and empty.groups == ()
    # ConsumerGroupDescribe v1 tells each member's protocol (MemberType: 0 classic, 1 consumer).
    types = {m.member_id: m.member_type for m in members.groups[0].members}
    assert types["m-1"] == 1 and sorted(types.values()) == [0, 1]
    # v6, Kafka 4's: GROUP_ID_NOT_FOUND with the reason.
    (group,) = v6.groups
    assert (group.error_code, group.group_state) == (ErrorCode.GROUP_ID_NOT_FOUND, "Dead")
    assert group.error_message == "Group g is not a classic group."
    assert missing.groups[0].error_message == "Group nobody not found."

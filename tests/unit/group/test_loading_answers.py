"""What the group APIs answer while the coordinator loads a __consumer_offsets partition, through the production
shell (GroupCoordinator) and Kafka listener handlers over a replica manager that leads an empty partition."""

from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace
from typing import Any

from kio.schema.heartbeat.v4 import request as heartbeat_v4
from kio.schema.join_group.v9 import request as join_v9

from minikafka.broker.group.coordinator import OFFSETS_TOPIC, CoordinatorConfig, GroupCoordinator
from minikafka.broker.group.state import GroupConfig
from minikafka.broker.kafka_wire import apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.broker.log_manager import TopicPartition
from minikafka.common.errors import ErrorCode

HEARTBEAT, JOIN_GROUP = 12, 11


def leading_manager() -> Any:
    """A replica manager leading partition 0, the only one, of an empty __consumer_offsets."""
    topic = SimpleNamespace(partitions={0: SimpleNamespace(leader=1)})
    log = SimpleNamespace(log_start_offset=0, log_end_offset=0)
    replica = SimpleNamespace(leader=1, leader_epoch=3, log=log)
    return SimpleNamespace(
        metadata=SimpleNamespace(image=SimpleNamespace(topics_by_name={OFFSETS_TOPIC: topic})),
        replicas={TopicPartition(OFFSETS_TOPIC, 0): replica},
        serving=lambda: True,
        high_watermark_reached=lambda *_: None,  # the log holds no uncommitted tail
    )


def coordinator() -> GroupCoordinator:
    config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
    return GroupCoordinator(leading_manager(), SimpleNamespace(), config)  # type: ignore[arg-type]


def heartbeat_request() -> Request:
    body = heartbeat_v4.HeartbeatRequest(group_id="g", generation_id=4, member_id="m-1", group_instance_id=None)
    return Request(ApiHeader(HEARTBEAT, 4, 1), "test", body)


def join_request() -> Request:
    body = join_v9.JoinGroupRequest(
        group_id="g",
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=10),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(join_v9.JoinGroupRequestProtocol(name="range", metadata=b""),),
        reason=None,
    )
    return Request(ApiHeader(JOIN_GROUP, 9, 1), "test", body)


async def until_loaded(groups: GroupCoordinator) -> None:
    for _ in range(1000):  # the load of an empty partition takes a few turns of the loop
        if groups.group("g") != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return
        await asyncio.sleep(0)
    raise AssertionError("the partition never loaded")


def test_a_heartbeat_while_the_group_loads_is_answered_none_and_checked_once_loaded() -> None:
    async def scenario() -> tuple[int, int, int]:
        groups = coordinator()
        ctx = WireContext(groups.manager, "PLAINTEXT", groups=groups)
        loading = await apis.HANDLERS[HEARTBEAT](ctx, heartbeat_request())
        join_loading = await apis.HANDLERS[JOIN_GROUP](ctx, join_request())
        await until_loaded(groups)
        loaded = await apis.HANDLERS[HEARTBEAT](ctx, heartbeat_request())
        return int(loading.error_code.value), int(join_loading.error_code.value), int(loaded.error_code.value)

    heartbeat_loading, join_loading, heartbeat_loaded = asyncio.run(scenario())
    assert heartbeat_loading == ErrorCode.NONE  # Kafka answers blindly: the member keeps its session
    assert join_loading == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert heartbeat_loaded == ErrorCode.UNKNOWN_MEMBER_ID  # once loaded, the member is checked: no such group

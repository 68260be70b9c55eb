"""The consumer group APIs' keys, advertised version ranges and handlers, registered beside the other APIs.

Ranges start where older librdkafka (kcat 1.7) looks for them before it enables its group consumer: FindCoordinator,
JoinGroup, SyncGroup, Heartbeat and LeaveGroup 0, OffsetFetch 1; OffsetCommit starts at Kafka 4's lowest, 2."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire import (
    consumer_group,
    consumer_group_describe,
    consumer_group_heartbeat,
    find_coordinator,
    group_admin,
    group_offsets,
    offset_delete,
)

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
CONSUMER_GROUP_HEARTBEAT = consumer_group_heartbeat.CONSUMER_GROUP_HEARTBEAT
CONSUMER_GROUP_DESCRIBE = consumer_group_describe.CONSUMER_GROUP_DESCRIBE
# The consumer protocol's APIs: advertised only where group.coordinator.rebalance.protocols lists "consumer".
CONSUMER_PROTOCOL_APIS = frozenset({CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE})

VERSIONS: dict[int, tuple[int, int]] = {
    OFFSET_COMMIT: (2, 9),  # v9: a consumer-protocol member commits with its member epoch
    OFFSET_FETCH: (1, 9),
    FIND_COORDINATOR: (0, 4),
    JOIN_GROUP: (0, 9),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 5),
    SYNC_GROUP: (0, 5),
    DESCRIBE_GROUPS: (0, 6),
    LIST_GROUPS: (0, 5),
    DELETE_GROUPS: (0, 2),
    CONSUMER_GROUP_HEARTBEAT: (0, 1),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
    **offset_delete.VERSIONS,
}

HANDLERS: dict[int, Any] = {
    OFFSET_COMMIT: group_offsets.handle_commit,
    OFFSET_FETCH: group_offsets.handle_fetch,
    FIND_COORDINATOR: find_coordinator.handle,
    JOIN_GROUP: consumer_group.handle_join,
    HEARTBEAT: consumer_group.handle_heartbeat,
    LEAVE_GROUP: consumer_group.handle_leave,
    SYNC_GROUP: consumer_group.handle_sync,
    DESCRIBE_GROUPS: group_admin.handle_describe,
    LIST_GROUPS: group_admin.handle_list,
    DELETE_GROUPS: group_admin.handle_delete,
    CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat.handle,
    CONSUMER_GROUP_DESCRIBE: consumer_group_describe.handle,
    offset_delete.OFFSET_DELETE: offset_delete.handle,
}


def hidden_apis(protocols: tuple[str, ...]) -> frozenset[int]:
    """The group APIs a broker neither advertises nor answers, from group.coordinator.rebalance.protocols."""
    return frozenset() if "consumer" in protocols else CONSUMER_PROTOCOL_APIS

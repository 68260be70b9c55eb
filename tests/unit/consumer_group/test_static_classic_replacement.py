"""A static classic member (JoinGroup with a group.instance.id and no member id) joining a consumer group takes the
place of the member holding its instance id, whichever protocol that one speaks and whether or not it left, as
Kafka's GroupMetadataManager does: its partitions and target, without a rebalance. When the member it replaced was
the group's last consumer-protocol member, the group becomes a classic group (the downgrade), Stable, each member
keeping its partitions. A JoinGroup with a member id must hold the instance id (UNKNOWN_MEMBER_ID,
FENCED_INSTANCE_ID)."""

from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace
from typing import Any

from kio.schema.join_group.v9 import request as join_v9
from kio.schema.sync_group.v5 import request as sync_v5

from minikafka.broker.consumer_group import classic_members, shell
from minikafka.broker.consumer_group.classic_members import ClassicJoin
from minikafka.broker.consumer_group.classic_protocol import decode_assignment
from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest
from minikafka.broker.consumer_group.model import ClassicProtocol, ConsumerGroup, ConsumerGroupConfig
from minikafka.broker.consumer_group.persistence import ConsumerGroupRecord
from minikafka.broker.group.coordinator import CoordinatorConfig, GroupCoordinator
from minikafka.broker.group.effects import Append, JoinResult, SyncResult
from minikafka.broker.group.membership import SyncRequest, sync_group
from minikafka.broker.group.records import GroupMetadataKey
from minikafka.broker.group.state import GroupConfig, GroupState
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.common.errors import ErrorCode
from tests.unit.consumer_group.test_consumer_group_wire import (
    SUBSCRIPTION_T,
    answer,
    leading_manager,
    loaded,
    static_or_regex,
)
from tests.unit.consumer_group.test_group_migration_core import (
    CONFIG,
    IDS,
    TOPICS,
    replayed,
    stable_classic_group,
    subscription,
)


def static_consumer_join(instance: str, member_id: str = "") -> HeartbeatRequest:
    return HeartbeatRequest(member_id, 0, 30000, ("t",), None, frozenset(), instance_id=instance)


def static_classic_join(instance: str, member_id: str = "") -> ClassicJoin:
    protocols = (ClassicProtocol("range", subscription(["t"])),)
    return ClassicJoin(member_id, instance, "client", "/127.0.0.1", 10000, 30000, "consumer", protocols, True)


def reconciled(group: ConsumerGroup, now: int) -> ConsumerGroup:
    """Every member reaches the target: the classic ones rejoin and sync, the consumer ones heartbeat."""
    for _ in range(3):
        for member_id, member in sorted(group.members.items()):
            if member.uses_classic_protocol:
                join = ClassicJoin(
                    member_id, member.instance_id, "client", "/127.0.0.1", 10000, 30000, "consumer",
                    (ClassicProtocol("range", subscription(["t"], sorted(member.assigned))),), True,
                )  # fmt: skip
                group = classic_members.join(group, join, TOPICS, CONFIG, now, "unused").group
                epoch = group.members[member_id].member_epoch
                group = classic_members.sync(group, member_id, member.instance_id, epoch, None, None, now).group
            else:
                beat = HeartbeatRequest(member_id, member.member_epoch, owned=member.assigned)
                step = shell.heartbeat(group, None, "g", beat, TOPICS, IDS, CONFIG, now)
                assert step.group is not None and step.response.error == ErrorCode.NONE
                group = step.group
    assert all(m.reconciled_to(group.assignment_epoch) for m in group.members.values())
    return group


def mixed(*instances: str) -> tuple[ConsumerGroup, dict[str, str]]:
    """A classic group (c1, c2) upgraded by a static consumer-protocol member per instance id, reconciled."""
    classic = stable_classic_group()
    group: ConsumerGroup | None = None
    ids = {}
    for instance in instances:
        step = shell.heartbeat(group, classic, "g", static_consumer_join(instance), TOPICS, IDS, CONFIG, 1000, 9)
        assert step.response.error == ErrorCode.NONE and step.group is not None
        group, classic = step.group, None
        ids[instance] = step.response.member_id or ""
    assert group is not None
    return reconciled(group, 2000), ids


def test_a_static_classic_member_replacing_the_last_consumer_member_downgrades_the_group_without_a_rebalance() -> None:
    group, ids = mixed("i1")
    old = group.members[ids["i1"]]
    assert old.assigned and not old.uses_classic_protocol
    joined = classic_members.join(group, static_classic_join("i1"), TOPICS, CONFIG, 3000, "new-1")
    result = joined.result
    assert isinstance(result, JoinResult) and result.error == ErrorCode.NONE and result.member_id == "new-1"
    assert result.generation_id == group.group_epoch
    assert joined.replaced == ids["i1"]
    step = shell.classic_request(group, joined, IDS, holder=shell.Holder(None, CONFIG, 3000, 55))
    assert step.group is None and step.conversion is not None
    classic = step.conversion.classic
    # Kafka's downgrade on a static replacement: Stable at the group epoch, no rebalance, the new instance holding
    # what the old one held.
    assert (classic.state, classic.generation) == (GroupState.STABLE, group.group_epoch)
    assert set(classic.members) == {"c1", "c2", "new-1"} and classic.members["new-1"].group_instance_id == "i1"
    assert decode_assignment(classic.members["new-1"].assignment) == old.assigned
    appended = [e for e in step.conversion.effects if isinstance(e, Append)]
    assert [a.request_id for a in appended] == [55] and isinstance(appended[0].records[0].key, GroupMetadataKey)
    # Every consumer group record is deleted, the same batch as Kafka's.
    assert replayed(step.records, []) == {}
    assert all(isinstance(r, ConsumerGroupRecord) for r in step.records)
    reasons = {e.fields["member_id"]: e.fields.get("reason") for e in step.events if e.name.endswith("_left")}
    assert reasons[ids["i1"]] == "replaced" and reasons["new-1"] == "converted"
    assert any(e.name == "group_protocol_converted" for e in step.events)
    # The new instance's SyncGroup goes to the classic group and gets its partitions at once.
    sync = SyncRequest(7, "new-1", "i1", classic.generation, "consumer", "range", ())
    synced = sync_group(classic, sync, 3100)
    answers = [e.result for e in synced.effects if hasattr(e, "result")]
    assert isinstance(answers[0], SyncResult) and decode_assignment(answers[0].assignment) == old.assigned


def test_with_another_consumer_member_left_the_static_classic_member_replaces_without_a_downgrade() -> None:
    group, ids = mixed("i1", "i2")
    old = group.members[ids["i1"]]
    joined = classic_members.join(group, static_classic_join("i1"), TOPICS, CONFIG, 3000, "new-1")
    assert isinstance(joined.result, JoinResult) and joined.result.error == ErrorCode.NONE
    step = shell.classic_request(group, joined, IDS, holder=shell.Holder(None, CONFIG, 3000, 55))
    assert step.conversion is None and step.group is not None
    member = step.group.members["new-1"]
    assert ids["i1"] not in step.group.members
    assert (member.instance_id, member.assigned, member.uses_classic_protocol) == ("i1", old.assigned, True)
    assert step.group.group_epoch == group.group_epoch  # no rebalance
    # The old instance is fenced.
    beat = HeartbeatRequest(ids["i1"], old.member_epoch, instance_id="i1", owned=old.assigned)
    fenced = shell.heartbeat(step.group, None, "g", beat, TOPICS, IDS, CONFIG, 3100)
    assert fenced.response.error == ErrorCode.FENCED_INSTANCE_ID


def test_the_downgrade_policy_decides_as_for_a_leaving_member() -> None:
    group, ids = mixed("i1")
    joined = classic_members.join(group, static_classic_join("i1"), TOPICS, CONFIG, 3000, "new-1")
    config = ConsumerGroupConfig(migration_policy="upgrade")
    step = shell.classic_request(group, joined, IDS, holder=shell.Holder(None, config, 3000, 55))
    assert step.conversion is None and step.group is not None
    assert all(m.uses_classic_protocol for m in step.group.members.values())


def test_a_restarted_static_classic_member_replaces_its_previous_instance() -> None:
    group, _ = mixed("i1")
    first = classic_members.join(group, static_classic_join("s"), TOPICS, CONFIG, 3000, "s-1")
    assert isinstance(first.result, JoinResult) and first.result.error == ErrorCode.NONE
    second = classic_members.join(first.group, static_classic_join("s"), TOPICS, CONFIG, 4000, "s-2")
    assert isinstance(second.result, JoinResult) and second.result.error == ErrorCode.NONE
    assert "s-1" not in second.group.members and second.group.members["s-2"].instance_id == "s"
    assert second.replaced == "s-1"


def test_a_classic_join_with_a_member_id_must_hold_the_instance_id() -> None:
    group, ids = mixed("i1")
    fenced = classic_members.join(group, static_classic_join("i1", "c1"), TOPICS, CONFIG, 3000, "x").result
    assert fenced == JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id="c1")
    unknown = classic_members.join(group, static_classic_join("nobody", "c1"), TOPICS, CONFIG, 3000, "x").result
    assert unknown == JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id="c1")


def test_through_the_coordinator_the_replacing_member_syncs_with_the_classic_group_it_made() -> None:
    """The production shell: the consumer group's tombstones written, the classic group stored, Stable, and the
    new instance's SyncGroup answered by the classic core with its predecessor's partitions."""

    def join(instance: str) -> Request:
        body = join_v9.JoinGroupRequest(
            group_id="g",
            session_timeout=datetime.timedelta(seconds=10),
            rebalance_timeout=datetime.timedelta(seconds=10),
            member_id="",
            group_instance_id=instance,
            protocol_type="consumer",
            protocols=(join_v9.JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION_T),),
            reason=None,
        )
        return Request(ApiHeader(11, 9, 1), "test", body)

    def sync(member_id: str, generation: int) -> Request:
        body = sync_v5.SyncGroupRequest(
            group_id="g",
            generation_id=generation,
            member_id=member_id,
            group_instance_id="i",
            protocol_type="consumer",
            protocol_name="range",
            assignments=(),
        )
        return Request(ApiHeader(14, 5, 1), "test", body)

    async def scenario() -> tuple[list[Any], Any, Any]:
        config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
        groups = GroupCoordinator(leading_manager(), SimpleNamespace(), config)  # type: ignore[arg-type]
        ctx = WireContext(groups.manager, "PLAINTEXT", groups=groups)
        groups.group("g")
        await loaded(groups)
        joined = await answer(ctx, static_or_regex("m-1", "i", None))
        replacing = await answer(ctx, join("i"))
        synced = await answer(ctx, sync(replacing.member_id, replacing.generation_id))
        return [joined, replacing, synced], groups.consumer_group("g"), groups.group("g")

    (joined, replacing, synced), consumer, classic = asyncio.run(scenario())
    assert joined.error_code == ErrorCode.NONE and joined.member_epoch == 1
    assert replacing.error_code == ErrorCode.NONE and replacing.generation_id == 1
    assert consumer is None and classic.state == GroupState.STABLE and list(classic.members) == [replacing.member_id]
    assert synced.error_code == ErrorCode.NONE
    assert decode_assignment(bytes(synced.assignment)) == {("t", 0), ("t", 1)}


def test_a_static_consumer_member_takes_the_place_of_the_live_classic_member_holding_its_instance_id() -> None:
    """The other way, as Kafka's: a static classic member restarted with the consumer protocol replaces its classic
    instance without waiting for it to leave (only two consumer-protocol instances conflict)."""
    group, _ = mixed("i1")
    first = classic_members.join(group, static_classic_join("s"), TOPICS, CONFIG, 3000, "s-1")
    group = reconciled(first.group, 3000)
    held = group.members["s-1"].assigned
    assert held
    step = shell.heartbeat(group, None, "g", static_consumer_join("s", "s-2"), TOPICS, IDS, CONFIG, 4000)
    assert step.response.error == ErrorCode.NONE and step.group is not None
    member = step.group.members["s-2"]
    assert "s-1" not in step.group.members
    assert (member.uses_classic_protocol, member.assigned) == (False, held)
    left = {e.fields["member_id"]: e.fields["reason"] for e in step.events if e.name == "consumer_group_member_left"}
    assert left == {"s-1": "replaced"}
    fenced = classic_members.heartbeat(step.group, "s-1", "s", group.members["s-1"].member_epoch, 4100)
    assert fenced.result.error == ErrorCode.FENCED_INSTANCE_ID

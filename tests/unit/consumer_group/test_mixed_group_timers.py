"""The timers of a consumer group's classic members, as Kafka's GroupMetadataManager runs them: a member answered
JoinGroup must send SyncGroup within its rebalance timeout (the sync timeout), and a member told to rejoin
(Heartbeat answered REBALANCE_IN_PROGRESS) must send JoinGroup within it (the join timeout), else it is removed
from the group, whose epoch moves on; a member heartbeating all the while is removed all the same."""

from __future__ import annotations

from minikafka.broker.consumer_group import classic_members, shell
from minikafka.broker.consumer_group.model import ConsumerGroup
from minikafka.common.errors import ErrorCode
from tests.unit.consumer_group.test_group_migration_core import CONFIG, IDS, TOPICS, classic_join, upgraded

REBALANCE_TIMEOUT = 30000  # the classic members' (classic_join's and the converted group's)


def mixed_group() -> ConsumerGroup:
    """Converted at t=1000: classic members c1 and c2 (generation 3, session timeout 10 s), and a consumer one."""
    group = upgraded().group
    assert group is not None
    return group


def beat(group: ConsumerGroup, member_id: str, now: int) -> tuple[ConsumerGroup, ErrorCode]:
    step = classic_members.heartbeat(group, member_id, None, group.members[member_id].member_epoch, now)
    return step.group, step.result.error


def alive(group: ConsumerGroup, now: int, *members: str) -> ConsumerGroup:
    """The consumer-protocol member and `members` keep their sessions."""
    consumer = next(m for m in group.members.values() if not m.uses_classic_protocol)
    group = group.with_member(consumer.evolve(last_heartbeat_ms=now))
    for member_id in members:
        group, _ = beat(group, member_id, now)
    return group


def test_a_classic_member_that_joined_but_never_syncs_is_removed_after_its_rebalance_timeout() -> None:
    group = mixed_group()
    group = classic_members.join(group, classic_join("c1"), TOPICS, CONFIG, 2000, "x").group
    group = classic_members.join(group, classic_join("c2"), TOPICS, CONFIG, 2000, "x").group
    group = classic_members.sync(group, "c2", None, 4, None, None, 2500).group  # c2 syncs, c1 does not
    for now in (10000, 20000, 31000):
        group = alive(group, now, "c1", "c2")
    assert shell.tick(group, TOPICS, IDS, CONFIG, 31999).events == ()
    ticked = shell.tick(group, TOPICS, IDS, CONFIG, 2000 + REBALANCE_TIMEOUT)
    fenced = [(e.fields["member_id"], e.fields["reason"]) for e in ticked.events if e.name.endswith("_fenced")]
    assert fenced == [("c1", "sync timeout")]
    assert ticked.group is not None and set(ticked.group.members) >= {"c2"} and "c1" not in ticked.group.members
    assert ticked.group.group_epoch == group.group_epoch + 1


def test_a_classic_member_told_to_rejoin_that_never_joins_is_removed_after_its_rebalance_timeout() -> None:
    group = mixed_group()
    group, error = beat(group, "c2", 2000)
    assert error == ErrorCode.REBALANCE_IN_PROGRESS
    # Told again later: the join timeout runs from the first time (Kafka schedules it only if absent).
    group = alive(group, 20000, "c2")
    group = classic_members.join(group, classic_join("c1"), TOPICS, CONFIG, 2000, "x").group
    group = classic_members.sync(group, "c1", None, 4, None, None, 2000).group
    group = alive(group, 31000, "c1", "c2")
    ticked = shell.tick(group, TOPICS, IDS, CONFIG, 2000 + REBALANCE_TIMEOUT)
    fenced = [(e.fields["member_id"], e.fields["reason"]) for e in ticked.events if e.name.endswith("_fenced")]
    assert fenced == [("c2", "join timeout")]


def test_classic_members_that_rejoin_and_sync_in_time_are_not_removed() -> None:
    group = mixed_group()
    group, _ = beat(group, "c1", 2000)
    group = classic_members.join(group, classic_join("c1"), TOPICS, CONFIG, 20000, "x").group
    group = classic_members.sync(group, "c1", None, 4, None, None, 25000).group
    group = alive(group, 40000, "c1")
    group = classic_members.join(group, classic_join("c2"), TOPICS, CONFIG, 40000, "x").group
    group = classic_members.sync(group, "c2", None, 4, None, None, 41000).group
    group = alive(group, 60000, "c1", "c2")
    assert shell.tick(group, TOPICS, IDS, CONFIG, 65000).events == ()

"""Online conversion between classic and consumer groups (group.consumer.migration.policy): the pure core's upgrade
when a consumer-protocol member joins a classic group, its classic members served by the consumer group through
JoinGroup/SyncGroup/Heartbeat/LeaveGroup, and the downgrade when the last consumer-protocol member leaves; the
records that store each step replay to the same group."""

from __future__ import annotations

import struct
import uuid

import pytest

from minikafka.broker.consumer_group import classic_members, shell
from minikafka.broker.consumer_group.classic_members import ClassicJoin, Leaving
from minikafka.broker.consumer_group.classic_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest
from minikafka.broker.consumer_group.model import (
    ClassicProtocol,
    ConsumerGroupConfig,
    MemberState,
    TopicPartition,
)
from minikafka.broker.consumer_group.persistence import ConsumerGroupRecord, load_consumer_groups
from minikafka.broker.group.effects import Answer, Append, HeartbeatResult, JoinResult, SyncResult
from minikafka.broker.group.records import GroupMetadataKey, OffsetsRecord, decode, encode_key, encode_value
from minikafka.broker.group.state import Group, GroupState, Member, OffsetAndMetadata, Protocol, TopicPartitionKey
from minikafka.common.errors import ErrorCode

TOPICS = {"t": 4}
IDS = {"t": uuid.UUID(int=7)}
NAMES = {v: k for k, v in IDS.items()}
CONFIG = ConsumerGroupConfig(session_timeout_ms=45000, heartbeat_interval_ms=5000)


def tp(partition: int) -> TopicPartition:
    return TopicPartition("t", partition)


def subscription(topics: list[str], owned: list[TopicPartition] = (), rack: str | None = None) -> bytes:  # type: ignore[assignment]
    """ConsumerProtocolSubscription v3, as a classic Java or librdkafka member writes it."""

    def string(value: str) -> bytes:
        return struct.pack(">h", len(value)) + value.encode()

    out = struct.pack(">hi", 3, len(topics)) + b"".join(string(t) for t in topics) + struct.pack(">i", -1)
    by_topic: dict[str, list[int]] = {}
    for p in owned:
        by_topic.setdefault(p.topic, []).append(p.partition)
    out += struct.pack(">i", len(by_topic))
    for topic, numbers in by_topic.items():
        out += string(topic) + struct.pack(">i", len(numbers)) + b"".join(struct.pack(">i", n) for n in numbers)
    out += struct.pack(">i", -1)
    out += string(rack) if rack is not None else struct.pack(">h", -1)
    return out


def classic_member(member_id: str, partitions: list[int], sync_request: int | None = None) -> Member:
    return Member(
        member_id,
        None,
        "client",
        "/127.0.0.1",
        30000,
        10000,
        "consumer",
        (Protocol("range", subscription(["t"])),),
        0,
        assignment=encode_assignment(frozenset(tp(p) for p in partitions)),
        sync_request=sync_request,
    )


def stable_classic_group(**changes: object) -> Group:
    offsets = {TopicPartitionKey("t", 0): OffsetAndMetadata(42, -1, "", 1)}
    group = Group(
        "g",
        state=GroupState.STABLE,
        generation=3,
        protocol_type="consumer",
        protocol_name="range",
        leader_id="c1",
        members={"c1": classic_member("c1", [0, 1]), "c2": classic_member("c2", [2, 3])},
        offsets=offsets,
    )
    return group.evolve(**changes)


def join_request(member_id: str = "") -> HeartbeatRequest:
    return HeartbeatRequest(member_id, 0, 30000, ("t",), None, frozenset())


def upgraded(config: ConsumerGroupConfig = CONFIG, classic: Group | None = None) -> shell.ShellStep:
    source = classic if classic is not None else stable_classic_group()
    return shell.heartbeat(None, source, "g", join_request(), TOPICS, IDS, config, 1000, 99)


def classic_join(member_id: str, owned: list[TopicPartition] = ()) -> ClassicJoin:  # type: ignore[assignment]
    protocols = (ClassicProtocol("range", subscription(["t"], list(owned), rack="r1")),)
    return ClassicJoin(member_id, None, "client", "/127.0.0.1", 10000, 30000, "consumer", protocols, True)


def replayed(records: tuple[ConsumerGroupRecord | OffsetsRecord, ...], before: list[ConsumerGroupRecord]) -> dict:
    """The consumer groups a coordinator loads from `before` then `records`, through their bytes."""
    consumer = list(before)
    for record in records:
        decoded = decode(encode_key(record.key), encode_value(record.value))
        if not isinstance(decoded.key, GroupMetadataKey):
            consumer.append(ConsumerGroupRecord(decoded.key, decoded.value))  # type: ignore[arg-type]
    return load_consumer_groups(consumer, NAMES, 1000)


def test_the_consumer_protocol_subscription_and_assignment_read_back() -> None:
    decoded = decode_subscription(subscription(["t", "u"], [tp(1)], rack="rack-a"))
    assert decoded.topics == ("t", "u")
    assert decoded.owned == frozenset({tp(1)})
    assert decoded.rack_id == "rack-a"
    assert decode_assignment(encode_assignment(frozenset({tp(0), tp(3)}))) == frozenset({tp(0), tp(3)})
    assert decode_assignment(b"") == frozenset()


def test_a_consumer_member_joining_a_classic_group_converts_it_keeping_members_partitions_and_offsets() -> None:
    step = upgraded(
        classic=stable_classic_group(
            members={"c1": classic_member("c1", [0, 1], sync_request=5), "c2": classic_member("c2", [2, 3])}
        )
    )
    assert step.response.error == ErrorCode.NONE
    group = step.group
    assert group is not None
    c1, c2 = group.members["c1"], group.members["c2"]
    # The classic members keep their generation as member epoch and their partitions until they rejoin.
    assert (c1.member_epoch, c1.assigned, c1.uses_classic_protocol) == (3, frozenset({tp(0), tp(1)}), True)
    assert c2.assigned == frozenset({tp(2), tp(3)})
    assert group.group_epoch == 4 and group.assignment_epoch == 4
    new = group.members[step.response.member_id or ""]
    assert new.assigned == frozenset()  # nothing free yet
    assert sorted(len(p) for p in group.target.values()) == [1, 1, 2]
    assert step.conversion is not None
    holder = step.conversion.classic
    assert holder.members == {} and holder.offsets == stable_classic_group().offsets
    assert Answer(5, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)) in step.conversion.effects
    assert step.records[0] == OffsetsRecord(GroupMetadataKey("g"), None)  # the classic group's metadata goes
    assert any(e.name == "group_protocol_converted" for e in step.events)
    holding = {e.fields["member_id"] for e in step.events if e.name == "consumer_group_member_assignment"}
    assert holding >= {"c1", "c2"}  # the classic members enter holding their partitions
    assert replayed(step.records, [])["g"] == group


@pytest.mark.parametrize("policy", ["downgrade", "disabled"])
def test_a_policy_without_upgrade_refuses_with_group_id_not_found(policy: str) -> None:
    step = upgraded(ConsumerGroupConfig(migration_policy=policy))
    assert step.response.error == ErrorCode.GROUP_ID_NOT_FOUND
    assert step.response.error_message == "Group g is not a consumer group."
    assert step.group is None and step.records == () and step.conversion is None


def test_a_classic_group_of_another_protocol_type_is_not_converted() -> None:
    step = upgraded(classic=stable_classic_group(protocol_type="connect"))
    assert step.response.error == ErrorCode.GROUP_ID_NOT_FOUND


def test_classic_members_rejoin_and_reach_the_target_then_the_new_member_gets_its_partitions() -> None:
    step = upgraded()
    group = step.group
    assert group is not None
    new_id = step.response.member_id or ""
    beat = classic_members.heartbeat(group, "c1", None, 3, 2000)
    assert beat.result == HeartbeatResult(ErrorCode.REBALANCE_IN_PROGRESS)
    assert classic_members.heartbeat(group, "c1", None, 2, 2000).result == HeartbeatResult(ErrorCode.ILLEGAL_GENERATION)
    for member_id in ("c1", "c2"):
        joined = classic_members.join(group, classic_join(member_id), TOPICS, CONFIG, 2000, "unused")
        result = joined.result
        assert isinstance(result, JoinResult) and result.error == ErrorCode.NONE
        assert result.generation_id == 4 and result.leader == "" and result.protocol_name == "range"
        group = joined.group
        synced = classic_members.sync(group, member_id, None, 4, "consumer", "range", 2000)
        assert isinstance(synced.result, SyncResult) and synced.result.error == ErrorCode.NONE
        assert decode_assignment(synced.result.assignment) == group.target[member_id]
        assert classic_members.heartbeat(group, member_id, None, 4, 2000).result.error == ErrorCode.NONE
        assert group.members[member_id].rack_id == "r1"
    after = shell.heartbeat(
        group, None, "g", HeartbeatRequest(new_id, 4, -1, None, None, frozenset()), TOPICS, IDS, CONFIG, 3000
    )
    assert after.group is not None
    assert after.group.members[new_id].assigned == group.target[new_id] != frozenset()
    owned = [p for m in after.group.members.values() for p in m.owns()]
    assert len(owned) == len(set(owned)) == 4


def test_a_classic_join_to_a_consumer_group_needs_the_consumer_protocol_type() -> None:
    group = upgraded().group
    assert group is not None
    wrong = ClassicJoin("", None, "c", "h", 10000, 30000, "connect", (ClassicProtocol("x", b""),), True)
    result = classic_members.join(group, wrong, TOPICS, CONFIG, 0, "m").result
    assert result == JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    required = classic_members.join(group, classic_join(""), TOPICS, CONFIG, 0, "fresh").result
    assert required == JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id="fresh")
    unknown = classic_members.sync(group, "nobody", None, 4, None, None, 0).result
    assert unknown == SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)


def test_the_last_consumer_member_leaving_converts_the_group_back_to_classic() -> None:
    step = upgraded()
    group = step.group
    assert group is not None and step.conversion is not None
    new_id = step.response.member_id or ""
    leave = HeartbeatRequest(new_id, -1)
    down = shell.heartbeat(group, step.conversion.classic, "g", leave, TOPICS, IDS, CONFIG, 5000, 77)
    assert down.response.error == ErrorCode.NONE and down.group is None
    assert down.conversion is not None
    classic = down.conversion.classic
    assert classic.state == GroupState.PREPARING_REBALANCE
    assert classic.generation == group.group_epoch + 1  # the leave bumped the epoch
    assert set(classic.members) == {"c1", "c2"}
    assert decode_assignment(classic.members["c1"].assignment) == frozenset({tp(0), tp(1)})
    assert classic.offsets == stable_classic_group().offsets
    appended = [e for e in down.conversion.effects if isinstance(e, Append)]
    assert appended and appended[0].request_id == 77 and isinstance(appended[0].records[0].key, GroupMetadataKey)
    assert replayed(down.records, list(replayed_records(step))) == {}  # every consumer group record deleted
    # The members left the consumer group (the analysis stops counting their partitions there).
    left = [e.fields["member_id"] for e in down.events if e.name == "consumer_group_member_left"]
    assert sorted(left) == sorted([new_id, "c1", "c2"])


def replayed_records(step: shell.ShellStep) -> list[ConsumerGroupRecord]:
    return [r for r in step.records if isinstance(r, ConsumerGroupRecord)]


def test_with_the_upgrade_policy_the_group_stays_a_consumer_group_with_its_classic_members() -> None:
    config = ConsumerGroupConfig(migration_policy="upgrade")
    step = upgraded(config)
    assert step.group is not None and step.conversion is not None
    leave = HeartbeatRequest(step.response.member_id or "", -1)
    down = shell.heartbeat(step.group, step.conversion.classic, "g", leave, TOPICS, IDS, config, 5000)
    assert down.conversion is None
    assert down.group is not None and set(down.group.members) == {"c1", "c2"}


def test_a_consumer_member_fenced_by_its_session_timeout_also_downgrades_the_group() -> None:
    step = upgraded()
    group = step.group
    assert group is not None
    # Only the classic members keep heartbeating.
    group = classic_members.heartbeat(group, "c1", None, 3, 40000).group
    group = classic_members.heartbeat(group, "c2", None, 3, 40000).group
    ticked = shell.tick(group, TOPICS, IDS, CONFIG, 47000, None, 5)
    assert ticked.group is None and ticked.conversion is not None
    assert set(ticked.conversion.classic.members) == {"c1", "c2"}


def test_a_classic_member_leaving_frees_its_partitions() -> None:
    group = upgraded().group
    assert group is not None
    left = classic_members.leave(group, (Leaving("c1", None), Leaving("ghost", None)), TOPICS)
    assert "c1" not in left.group.members and left.group.group_epoch == group.group_epoch + 1
    assert [m.error for m in left.result.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]  # type: ignore[union-attr]


def test_classic_members_commit_with_their_generation_in_any_version() -> None:
    group = upgraded().group
    assert group is not None
    assert shell.validate_commit(group, "c1", 3, 2) == ErrorCode.NONE
    assert shell.validate_commit(group, "c1", 2, 2) == ErrorCode.ILLEGAL_GENERATION


def test_a_cooperative_classic_member_revoking_partitions_keeps_its_epoch_and_syncs_what_it_keeps() -> None:
    group = upgraded().group
    assert group is not None
    assert group.target["c1"] == frozenset({tp(0)})
    # It rejoins still owning 0 and 1: 1 goes to the new member, once c1 reports it revoked.
    joined = classic_members.join(group, classic_join("c1", [tp(0), tp(1)]), TOPICS, CONFIG, 2000, "x")
    member = joined.group.members["c1"]
    assert (member.state, member.member_epoch, member.pending_revocation) == (
        MemberState.UNREVOKED_PARTITIONS,
        3,
        frozenset({tp(1)}),
    )
    assert isinstance(joined.result, JoinResult) and joined.result.generation_id == 3
    synced = classic_members.sync(joined.group, "c1", None, 3, None, None, 2000)
    assert isinstance(synced.result, SyncResult) and synced.result.error == ErrorCode.NONE
    assert decode_assignment(synced.result.assignment) == frozenset({tp(0)})
    assert classic_members.heartbeat(joined.group, "c1", None, 3, 2000).result.error == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = classic_members.join(joined.group, classic_join("c1", [tp(0)]), TOPICS, CONFIG, 2100, "x")
    assert rejoined.group.members["c1"].member_epoch == 4

"""Offset expiry (offsets.retention.minutes) in the pure group core, with the time passed in: which offsets expire
for each kind of group, the tombstones written, what a concurrent commit or transaction keeps, group deletion, and
the state timestamp surviving a reload onto another clock."""

from __future__ import annotations

import struct

from minikafka.broker.consumer_group.records import ConsumerGroupMetadataKey
from minikafka.broker.group.effects import Append, GroupEvent, GroupStep
from minikafka.broker.group.loader import load_groups
from minikafka.broker.group.offset_expiry import ExpiryScope, expire_offsets
from minikafka.broker.group.offsets import CommitEntry, CommitRequest, append_done, commit_offsets
from minikafka.broker.group.rebalance import metadata_record
from minikafka.broker.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsRecord,
    decode_value,
    encode_value,
    with_wall_state_timestamps,
)
from minikafka.broker.group.state import (
    Clock,
    Group,
    GroupConfig,
    GroupState,
    Member,
    OffsetAndMetadata,
    Protocol,
    TopicPartitionKey,
)
from minikafka.common.errors import ErrorCode

RETENTION_MS = 60000
CONFIG = GroupConfig(initial_rebalance_delay_ms=0)
WALL_START = 1_700_000_000_000  # epoch ms; the monotonic clock starts at 0
A0, B0 = TopicPartitionKey("a", 0), TopicPartitionKey("b", 0)


def at(monotonic_ms: int) -> Clock:
    return Clock(monotonic_ms, WALL_START + monotonic_ms)


def offset(value: int, committed_at_wall: int) -> OffsetAndMetadata:
    return OffsetAndMetadata(value, -1, "", committed_at_wall)


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0: version, topics, empty user data."""
    data = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        data += struct.pack(">h", len(topic)) + topic.encode()
    return data + struct.pack(">i", -1)


def member(member_id: str, protocol_type: str, metadata: bytes) -> Member:
    return Member(member_id, None, "c", "/127.0.0.1", 10000, 10000, protocol_type, (Protocol("range", metadata),), 0)


def expire(group: Group, now: int, scope: ExpiryScope | None = None, request_id: int = 7) -> GroupStep:
    return expire_offsets(group, at(now), scope or ExpiryScope(RETENTION_MS), request_id)


def stored(group: Group, request_id: int = 7, error: ErrorCode = ErrorCode.NONE) -> GroupStep:
    return append_done(group, request_id, error, CONFIG, 0)


def appended(step: GroupStep) -> list[OffsetsRecord]:
    return [record for effect in step.effects if isinstance(effect, Append) for record in effect.records]


def events(step: GroupStep, name: str) -> list[dict[str, object]]:
    return [e.fields for e in step.effects if isinstance(e, GroupEvent) and e.name == name]


def test_a_simple_group_s_offsets_expire_by_commit_timestamp_and_the_group_goes_with_the_last():
    group = Group("g", offsets={A0: offset(5, WALL_START), B0: offset(9, WALL_START + 30000)})
    assert expire(group, RETENTION_MS - 1).effects == ()
    step = expire(group, RETENTION_MS)
    assert appended(step) == [OffsetsRecord(OffsetCommitKey("g", "a", 0), None)]
    done = stored(step.group)
    assert done.group.offsets == {B0: offset(9, WALL_START + 30000)}
    assert done.group.state == GroupState.EMPTY
    assert events(done, "offsets_expired") == [{"group": "g", "partitions": ["a-0"], "group_deleted": False}]

    last = expire(done.group, 30000 + RETENTION_MS, request_id=8)
    assert appended(last) == [
        OffsetsRecord(OffsetCommitKey("g", "b", 0), None),
        OffsetsRecord(GroupMetadataKey("g"), None),
    ]
    gone = stored(last.group, 8)
    assert gone.group.state == GroupState.DEAD and gone.group.offsets == {} and not gone.group.pending_writes
    assert events(gone, "offsets_expired") == [{"group": "g", "partitions": ["b-0"], "group_deleted": True}]


def test_an_empty_group_s_offsets_count_from_when_it_became_empty_not_from_their_commit():
    emptied_at = 50000  # monotonic
    group = Group(
        "g", protocol_type="consumer", generation=3, state_timestamp_ms=emptied_at, offsets={A0: offset(5, 0)}
    )
    assert expire(group, emptied_at + RETENTION_MS - 1).effects == ()
    step = expire(group, emptied_at + RETENTION_MS)
    assert appended(step) == [
        OffsetsRecord(OffsetCommitKey("g", "a", 0), None),
        OffsetsRecord(GroupMetadataKey("g"), None),
    ]
    assert stored(step.group).group.state == GroupState.DEAD


def test_an_empty_group_without_offsets_is_deleted_at_the_next_check():
    group = Group("g", protocol_type="consumer", generation=2, state_timestamp_ms=10**9)
    step = expire(group, 0)
    assert appended(step) == [OffsetsRecord(GroupMetadataKey("g"), None)]
    assert stored(step.group).group.state == GroupState.DEAD


def test_a_stable_consumer_group_keeps_its_subscribed_topics_offsets_forever():
    group = Group(
        "g",
        state=GroupState.STABLE,
        generation=1,
        protocol_type="consumer",
        protocol_name="range",
        members={"m": member("m", "consumer", subscription("a"))},
        offsets={A0: offset(5, WALL_START), B0: offset(9, WALL_START)},
    )
    step = expire(group, 10 * RETENTION_MS)
    assert appended(step) == [OffsetsRecord(OffsetCommitKey("g", "b", 0), None)]  # no group tombstone: it has members
    done = stored(step.group)
    assert done.group.offsets == {A0: offset(5, WALL_START)} and done.group.state == GroupState.STABLE


def test_groups_whose_subscriptions_cannot_be_read_or_that_rebalance_keep_every_offset():
    offsets = {A0: offset(5, WALL_START)}
    connect = Group(
        "g",
        state=GroupState.STABLE,
        generation=1,
        protocol_type="connect",
        protocol_name="range",
        members={"m": member("m", "connect", b"\x00")},
        offsets=offsets,
    )
    rebalancing = connect.evolve(state=GroupState.PREPARING_REBALANCE, protocol_type="consumer")
    assert expire(connect, 10 * RETENTION_MS).effects == ()
    assert expire(rebalancing, 10 * RETENTION_MS).effects == ()


def test_a_commit_or_transaction_under_way_keeps_its_partition_and_the_group():
    group = Group("g", offsets={A0: offset(5, WALL_START), B0: offset(9, WALL_START)})
    request = CommitRequest(1, "", None, -1, (CommitEntry("a", 0, 6, -1, None),), 9, WALL_START + RETENTION_MS)
    committing = commit_offsets(group, request, CONFIG).group
    step = expire(committing, RETENTION_MS)
    assert appended(step) == [OffsetsRecord(OffsetCommitKey("g", "b", 0), None)]

    in_txn = expire(group, RETENTION_MS, ExpiryScope(RETENTION_MS, in_transaction=frozenset({B0})))
    assert appended(in_txn) == [OffsetsRecord(OffsetCommitKey("g", "a", 0), None)]  # no group tombstone either


def test_a_kip848_group_keeps_its_subscribed_topics_offsets_and_is_not_deleted():
    group = Group("g", offsets={A0: offset(5, WALL_START), B0: offset(9, WALL_START)})
    step = expire(group, RETENTION_MS, ExpiryScope(RETENTION_MS, consumer_subscribed=frozenset({"a"})))
    assert appended(step) == [OffsetsRecord(OffsetCommitKey("g", "b", 0), None)]
    only_unsubscribed = group.evolve(offsets={B0: offset(9, WALL_START)})
    step = expire(only_unsubscribed, RETENTION_MS, ExpiryScope(RETENTION_MS, consumer_subscribed=frozenset({"a"})))
    assert appended(step) == [OffsetsRecord(OffsetCommitKey("g", "b", 0), None)]
    assert stored(step.group).group.state == GroupState.EMPTY


def test_an_offset_committed_again_while_its_tombstone_is_written_stays():
    group = Group("g", offsets={A0: offset(5, WALL_START)})
    step = expire(group, RETENTION_MS)
    assert expire(step.group, RETENTION_MS + 1, request_id=8).effects == ()  # one expiry write at a time
    request = CommitRequest(1, "", None, -1, (CommitEntry("a", 0, 6, -1, None),), 9, WALL_START + RETENTION_MS)
    committed = commit_offsets(step.group, request, CONFIG)
    after_commit = stored(committed.group, 1).group
    done = stored(after_commit)
    assert done.group.offsets == {A0: offset(6, WALL_START + RETENTION_MS)}
    assert done.group.state == GroupState.EMPTY
    assert events(done, "offsets_expired")[0]["group_deleted"] is False


def test_a_failed_tombstone_write_keeps_the_offsets_for_the_next_check():
    group = Group("g", offsets={A0: offset(5, WALL_START)})
    step = expire(group, RETENTION_MS)
    failed = stored(step.group, error=ErrorCode.NOT_ENOUGH_REPLICAS)
    assert failed.group.offsets == group.offsets and not failed.group.pending_writes
    assert events(failed, "offsets_expiry_failed") == [{"group": "g", "error": "COORDINATOR_NOT_AVAILABLE"}]
    assert appended(expire(failed.group, RETENTION_MS + 1))


def test_commit_timestamps_are_the_request_s_epoch_ms_and_survive_a_reload():
    request = CommitRequest(1, "", None, -1, (CommitEntry("a", 0, 6, -1, "m"),), 9, WALL_START + 1234)
    step = commit_offsets(Group("g"), request, CONFIG)
    assert appended(step) == [
        OffsetsRecord(OffsetCommitKey("g", "a", 0), OffsetCommitValue(6, -1, "m", WALL_START + 1234))
    ]
    loaded = load_groups(appended(step), now=99, wall_now=WALL_START + 5000)
    assert loaded["g"].offsets == {A0: OffsetAndMetadata(6, -1, "m", WALL_START + 1234)}


def test_the_time_a_group_became_empty_survives_a_reload_onto_another_monotonic_clock():
    emptied_at = 50000  # the first coordinator's monotonic clock
    group = Group(
        "g", protocol_type="consumer", generation=3, state_timestamp_ms=emptied_at, offsets={A0: offset(5, 0)}
    )
    first = at(emptied_at + 10)
    records = with_wall_state_timestamps((metadata_record(group, emptied_at),), first.to_wall)
    assert records[0].value.current_state_timestamp == WALL_START + emptied_at
    records.append(OffsetsRecord(OffsetCommitKey("g", "a", 0), OffsetCommitValue(5, -1, "", 0)))

    # The new coordinator's monotonic clock reads 7 when the wall clock is 20 s after the group went empty.
    loaded = load_groups(records, now=7, wall_now=WALL_START + emptied_at + 20000)["g"]
    assert loaded.state == GroupState.EMPTY
    new_clock_at_expiry = Clock(7 + RETENTION_MS - 20000, WALL_START + emptied_at + RETENTION_MS)
    assert (
        expire_offsets(
            loaded, Clock(6 + RETENTION_MS - 20000, new_clock_at_expiry.wall_ms - 1), ExpiryScope(RETENTION_MS), 7
        ).effects
        == ()
    )
    assert appended(expire_offsets(loaded, new_clock_at_expiry, ExpiryScope(RETENTION_MS), 7))


def test_times_an_older_version_stored_on_the_monotonic_clock_count_from_the_load():
    value = GroupMetadataValue("consumer", 3, "range", None, 123456, ())  # a monotonic reading, not epoch ms
    records = [
        OffsetsRecord(GroupMetadataKey("g"), value),
        OffsetsRecord(OffsetCommitKey("g", "a", 0), OffsetCommitValue(5, -1, "", 98765)),
    ]
    loaded = load_groups(records, now=7, wall_now=WALL_START)["g"]
    assert loaded.state_timestamp_ms == 7
    assert loaded.offsets == {A0: OffsetAndMetadata(5, -1, "", WALL_START)}
    assert (
        expire_offsets(
            loaded, Clock(6 + RETENTION_MS, WALL_START + RETENTION_MS - 1), ExpiryScope(RETENTION_MS), 7
        ).effects
        == ()
    )


def test_an_explicit_retention_time_is_stored_as_the_offset_s_expire_timestamp_in_offset_commit_value_v1():
    """OffsetCommit v2-v4's RetentionTimeMs (not -1): Kafka's expireTimestamp, commit time plus the retention,
    written with the one OffsetCommitValue version that carries it (v1, which has no leader epoch)."""
    entry = CommitEntry("a", 0, 6, 4, "m")
    request = CommitRequest(1, "", None, -1, (entry,), 2, WALL_START + 1234, retention_time_ms=5000)
    step = commit_offsets(Group("g"), request, CONFIG)
    expire_at = WALL_START + 1234 + 5000
    value = OffsetCommitValue(6, 4, "m", WALL_START + 1234, expire_timestamp=expire_at)
    assert appended(step) == [OffsetsRecord(OffsetCommitKey("g", "a", 0), value)]
    data = encode_value(value)
    assert data == struct.pack(">hqh", 1, 6, 1) + b"m" + struct.pack(">qq", WALL_START + 1234, expire_at)
    decoded = decode_value(OffsetCommitKey("g", "a", 0), data)
    assert decoded == OffsetCommitValue(6, -1, "m", WALL_START + 1234, expire_timestamp=expire_at)
    loaded = load_groups([OffsetsRecord(OffsetCommitKey("g", "a", 0), decoded)], now=99, wall_now=WALL_START + 5000)
    assert loaded["g"].offsets[A0].expire_timestamp_ms == expire_at
    # Without one (-1, and every version from v5): no expire timestamp, the current version 3.
    default = commit_offsets(Group("g"), CommitRequest(1, "", None, -1, (entry,), 2, WALL_START), CONFIG)
    assert appended(default)[0].value == OffsetCommitValue(6, 4, "m", WALL_START)
    assert encode_value(appended(default)[0].value)[:2] == struct.pack(">h", 3)


def test_older_offset_commit_value_versions_are_read():
    key = OffsetCommitKey("g", "a", 0)
    v0 = struct.pack(">hqh", 0, 6, 1) + b"m" + struct.pack(">q", 11)
    v2 = struct.pack(">hqh", 2, 6, 1) + b"m" + struct.pack(">q", 11)
    assert decode_value(key, v0) == decode_value(key, v2) == OffsetCommitValue(6, -1, "m", 11)


def test_an_offset_with_an_expire_timestamp_expires_at_it_rather_than_by_the_retention():
    early = OffsetAndMetadata(5, -1, "", WALL_START, expire_timestamp_ms=WALL_START + 5000)
    late = OffsetAndMetadata(7, -1, "", WALL_START, expire_timestamp_ms=WALL_START + 2 * RETENTION_MS)
    group = Group("g", offsets={A0: early, B0: late, TopicPartitionKey("c", 0): offset(9, WALL_START)})
    assert expire(group, 4999).effects == ()
    assert appended(expire(group, 5000)) == [OffsetsRecord(OffsetCommitKey("g", "a", 0), None)]
    # The broker's retention passed: the offset without one goes, the one with a longer one stays.
    keys = [r.key for r in appended(expire(group, RETENTION_MS))]
    assert keys == [OffsetCommitKey("g", "a", 0), OffsetCommitKey("g", "c", 0)]
    assert [r.key for r in appended(expire(group, 2 * RETENTION_MS))][-1] == GroupMetadataKey("g")


def test_an_expire_timestamp_counts_in_an_empty_classic_group_but_not_for_a_subscribed_topic():
    early = OffsetAndMetadata(5, -1, "", WALL_START, expire_timestamp_ms=WALL_START + 5000)
    empty = Group("g", protocol_type="consumer", generation=2, state_timestamp_ms=4000, offsets={A0: early})
    assert appended(expire(empty, 5000))[0] == OffsetsRecord(OffsetCommitKey("g", "a", 0), None)
    scope = ExpiryScope(RETENTION_MS, consumer_subscribed=frozenset({"a"}))
    assert expire(Group("g", offsets={A0: early}), 5000, scope).effects == ()


def test_an_empty_kip848_group_goes_with_its_last_expired_offset_its_records_tombstoned():
    """Kafka's cleanupGroupMetadata: an Empty consumer group (no member subscribes to anything) whose offsets all
    expired is deleted, its records' tombstones after the offsets' in the same batch."""
    tombstones = (OffsetsRecord(ConsumerGroupMetadataKey("g"), None),)
    scope = ExpiryScope(RETENTION_MS, consumer_subscribed=frozenset(), consumer_group_tombstones=tombstones)
    group = Group("g", offsets={A0: offset(5, WALL_START), B0: offset(9, WALL_START + 1000)})
    first = expire(group, RETENTION_MS, scope)
    assert appended(first) == [OffsetsRecord(OffsetCommitKey("g", "a", 0), None)]  # one left: the group stays
    last = expire(stored(first.group).group, RETENTION_MS + 1000, scope)
    assert appended(last) == [OffsetsRecord(OffsetCommitKey("g", "b", 0), None), *tombstones]
    done = stored(last.group)
    assert done.group.state == GroupState.DEAD and events(done, "offsets_expired")[0]["group_deleted"] is True
    # Without offsets at all, at the first check.
    assert appended(expire(Group("g"), 0, scope)) == list(tombstones)

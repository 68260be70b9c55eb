"""KIP-848 groups stored as Kafka's ConsumerGroup* records of __consumer_offsets: the bytes are Kafka's formats,
a plain heartbeat writes nothing, and a coordinator that replays the log at any moment finds the group epoch,
member epochs and assignments the members were told, so members go on without being fenced and no partition
gets two owners across failovers."""

from __future__ import annotations

import random
import uuid

from minikafka.broker.consumer_group import shell
from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest, HeartbeatResponse
from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerGroupConfig, Partitions
from minikafka.broker.consumer_group.persistence import ConsumerGroupRecord, load_consumer_groups
from minikafka.broker.consumer_group.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    TopicMetadata,
    TopicPartitions,
)
from minikafka.broker.group.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsRecord,
    decode,
    encode_key,
    encode_value,
)
from minikafka.broker.group.shard import split_records
from minikafka.common.errors import ErrorCode

CONFIG = ConsumerGroupConfig(session_timeout_ms=45000, heartbeat_interval_ms=5000)
TOPICS = {"a": 5, "b": 3}
IDS = {"a": uuid.UUID(int=1), "b": uuid.UUID(int=2)}
NAMES = {v: k for k, v in IDS.items()}
A = IDS["a"]
A0, A3, A03 = (TopicPartitions(A, (0,)),), (TopicPartitions(A, (3,)),), (TopicPartitions(A, (0, 3)),)


def roundtrip(record: ConsumerGroupRecord) -> OffsetsRecord:
    return decode(encode_key(record.key), encode_value(record.value))


def test_every_record_type_reads_back_as_written() -> None:
    records = [
        ConsumerGroupRecord(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(7)),
        ConsumerGroupRecord(
            ConsumerGroupPartitionMetadataKey("g"), ConsumerGroupPartitionMetadataValue((TopicMetadata(A, "a", 5),))
        ),
        ConsumerGroupRecord(
            ConsumerGroupMemberMetadataKey("g", "m"),
            ConsumerGroupMemberMetadataValue("i", None, "client", "/127.0.0.1", ("a", "b"), "a.*", 30000, "uniform"),
        ),
        ConsumerGroupRecord(
            ConsumerGroupTargetAssignmentMetadataKey("g"), ConsumerGroupTargetAssignmentMetadataValue(7)
        ),
        ConsumerGroupRecord(
            ConsumerGroupTargetAssignmentMemberKey("g", "m"),
            ConsumerGroupTargetAssignmentMemberValue(A03),
        ),
        ConsumerGroupRecord(
            ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
            ConsumerGroupCurrentMemberAssignmentValue(7, 6, 1, A0, A3),
        ),
        ConsumerGroupRecord(ConsumerGroupCurrentMemberAssignmentKey("g", "m"), None),
    ]
    for record in records:
        read = roundtrip(record)
        assert (read.key, read.value) == (record.key, record.value)


def test_the_bytes_are_kafkas_record_type_then_a_flexible_version_0_value() -> None:
    key = encode_key(ConsumerGroupMetadataKey("g"))
    assert key == b"\x00\x03\x00\x01g"  # record type 3, then the group id as an int16-length string
    value = encode_value(ConsumerGroupMetadataValue(5))
    assert value == b"\x00\x00\x00\x00\x00\x05\x00"  # version 0, epoch, no tagged fields
    member = encode_key(ConsumerGroupCurrentMemberAssignmentKey("g", "m"))
    assert member == b"\x00\x08\x00\x01g\x00\x01m"
    # A tagged field this coordinator does not use (Kafka 4.1's metadata hash) is skipped.
    hashed = b"\x00\x00\x00\x00\x00\x05\x01\x00\x08" + bytes(8)
    assert decode(key, hashed).value == ConsumerGroupMetadataValue(5)


class Coordinator:
    """The shell's heartbeats and timers with a log of the records they wrote, and failovers that replay it."""

    def __init__(self) -> None:
        self.group: ConsumerGroup | None = None
        self.log: list[OffsetsRecord] = []  # each record as a coordinator reads it back from the bytes written
        self.now = 0
        self.failovers = 0

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        step = shell.heartbeat(self.group, None, "g", request, TOPICS, IDS, CONFIG, self.now)
        self.group = step.group
        self.write(step.records)
        return step.response

    def write(self, records: tuple[ConsumerGroupRecord, ...]) -> None:
        self.log += [decode(encode_key(r.key), encode_value(r.value)) for r in records]

    def replayed(self) -> ConsumerGroup | None:
        split = split_records(self.log)
        return load_consumer_groups(split.consumer, NAMES, self.now).get("g")

    def failover(self) -> None:
        self.failovers += 1
        self.group = self.replayed()


def comparable(group: ConsumerGroup | None) -> ConsumerGroup | None:
    """The group without what is not stored: when members were last heard from."""
    if group is None:
        return None
    members = {k: m.evolve(last_heartbeat_ms=0, revocation_deadline_ms=None) for k, m in group.members.items()}
    return group.evolve(members=members, subscription_metadata=dict(group.subscription_metadata))


def test_a_plain_heartbeat_writes_nothing_and_a_join_writes_kafkas_records_in_order() -> None:
    coordinator = Coordinator()
    joined = coordinator.heartbeat(HeartbeatRequest("m", 0, 30000, ("a",), None, frozenset()))
    types = [encode_key(r.key)[1] for r in coordinator.log]
    assert types == [5, 4, 3, 7, 6, 8]  # member, partitions, epoch, target member, target epoch, current
    written = len(coordinator.log)
    coordinator.heartbeat(HeartbeatRequest("m", joined.member_epoch, owned=joined.assignment))
    assert len(coordinator.log) == written


def test_the_last_member_leaving_tombstones_the_member_and_keeps_the_empty_group() -> None:
    """As Kafka: the member's three records get tombstones; the group, Empty, keeps its epoch record and is
    replayed as it was left."""
    coordinator = Coordinator()
    joined = coordinator.heartbeat(HeartbeatRequest("m", 0, 30000, ("a",), None, frozenset()))
    before = len(coordinator.log)
    assert coordinator.heartbeat(HeartbeatRequest("m", -1)).error == ErrorCode.NONE
    written = coordinator.log[before:]
    assert [r.value for r in written[:3]] == [None] * 3 and joined.member_id == "m"
    assert all(r.value is not None for r in written[3:])
    assert coordinator.group is not None and not coordinator.group.members
    assert comparable(coordinator.replayed()) == comparable(coordinator.group)


def test_offsets_and_classic_records_stay_with_the_classic_loader() -> None:
    offset = OffsetsRecord(OffsetCommitKey("g", "a", 0), OffsetCommitValue(5, -1, "", 0))
    epoch = OffsetsRecord(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(2))
    split = split_records([offset, epoch])
    assert split.classic == [offset]
    assert split.consumer == [ConsumerGroupRecord(epoch.key, epoch.value)]  # type: ignore[arg-type]


def test_failovers_at_random_moments_keep_epochs_and_assignments_and_never_give_a_partition_two_owners() -> None:
    """Members joining, leaving, changing subscriptions and being fenced by the timer, with the coordinator
    replaced by one that replays the log at random moments: the replayed group is the group, so the members
    carry on at their epochs (never fenced), and no two of them ever hold the same partition."""
    for seed in range(20):
        rng = random.Random(seed)
        coordinator = Coordinator()
        clients: dict[str, tuple[int, Partitions]] = {}
        for step in range(150):
            coordinator.now += 100
            roll = rng.random()
            if roll < 0.12 or not clients:
                subscribed = rng.choice([("a",), ("b",), ("a", "b")])
                request = HeartbeatRequest(f"m{step}", 0, 30000, subscribed, None, frozenset())
                response = coordinator.heartbeat(request)
                assert response.member_id is not None and response.assignment is not None
                clients[response.member_id] = (response.member_epoch, response.assignment)
            elif roll < 0.18:
                member_id = rng.choice(sorted(clients))
                clients.pop(member_id)
                assert coordinator.heartbeat(HeartbeatRequest(member_id, -1)).error == ErrorCode.NONE
            elif roll < 0.25:
                coordinator.failover()
            else:
                member_id = rng.choice(sorted(clients))
                epoch, held = clients[member_id]
                topics = rng.choice([None, None, None, ("a",), ("a", "b")])
                request = HeartbeatRequest(member_id, epoch, subscribed_topics=topics, owned=held)
                response = coordinator.heartbeat(request)
                assert response.error == ErrorCode.NONE, (seed, step, response)
                assignment = response.assignment if response.assignment is not None else held
                clients[member_id] = (response.member_epoch, assignment)
            if step % 5 == 0:
                assert comparable(coordinator.replayed()) == comparable(coordinator.group), (seed, step)
            holdings = [held for _, held in clients.values()]
            assert sum(len(h) for h in holdings) == len(frozenset().union(*holdings)), seed
        assert coordinator.failovers > 0


def test_a_member_fenced_by_the_timer_is_tombstoned() -> None:
    coordinator = Coordinator()
    coordinator.heartbeat(HeartbeatRequest("m1", 0, 30000, ("a",), None, frozenset()))
    coordinator.now = 100
    coordinator.heartbeat(HeartbeatRequest("m2", 0, 30000, ("a",), None, frozenset()))
    assert coordinator.group is not None
    step = shell.tick(coordinator.group, TOPICS, IDS, CONFIG, CONFIG.session_timeout_ms + 50)
    coordinator.group = step.group
    coordinator.write(step.records)
    replayed = coordinator.replayed()
    assert replayed is not None and set(replayed.members) == {"m2"}
    assert comparable(replayed) == comparable(coordinator.group)

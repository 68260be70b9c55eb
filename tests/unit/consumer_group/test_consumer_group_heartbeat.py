"""KIP-848's ConsumerGroupHeartbeat core, driven deterministically: epochs, target assignment, reconciliation
through revocation (UNREVOKED_PARTITIONS) and release (UNRELEASED_PARTITIONS), fencing, leaving, timers, and a
randomised run that checks no partition ever has two owners."""

from __future__ import annotations

import random

from minikafka.broker.consumer_group.heartbeat import (
    HeartbeatRequest,
    HeartbeatResponse,
    consumer_group_heartbeat,
    expire,
)
from minikafka.broker.consumer_group.model import (
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerGroupState,
    MemberState,
    Partitions,
    TopicPartition,
)
from minikafka.common.errors import ErrorCode

CONFIG = ConsumerGroupConfig(session_timeout_ms=45000, heartbeat_interval_ms=5000)
REBALANCE_MS = 30000


def parts(*partitions: int, topic: str = "t") -> Partitions:
    return frozenset(TopicPartition(topic, p) for p in partitions)


class Coordinator:
    """Feeds heartbeats to the core as the shell would, keeping the group between them."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.group: ConsumerGroup | None = None
        self.topics = topics
        self.now = 0
        self.ids = 0

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        self.ids += 1
        step = consumer_group_heartbeat(self.group, "g", request, self.topics, CONFIG, self.now, f"member-{self.ids}")
        self.group = step.group
        return step.response

    def join(self, topics: tuple[str, ...] = ("t",)) -> HeartbeatResponse:
        return self.heartbeat(HeartbeatRequest("", 0, REBALANCE_MS, topics, None, frozenset()))

    def beat(self, member_id: str, epoch: int, owned: Partitions | None) -> HeartbeatResponse:
        return self.heartbeat(HeartbeatRequest(member_id, epoch, owned=owned))

    def member_state(self, member_id: str) -> MemberState:
        assert self.group is not None
        return self.group.members[member_id].state


def test_a_first_member_gets_every_partition_at_epoch_one() -> None:
    coordinator = Coordinator({"t": 4})
    joined = coordinator.join()
    assert joined.error == ErrorCode.NONE and joined.member_id == "member-1"
    assert joined.member_epoch == 1 and joined.assignment == parts(0, 1, 2, 3)
    assert joined.heartbeat_interval_ms == 5000
    group = coordinator.group
    assert group is not None and group.group_epoch == group.assignment_epoch == 1
    assert group.state == ConsumerGroupState.STABLE
    again = coordinator.beat("member-1", 1, parts(0, 1, 2, 3))
    assert (again.member_epoch, again.assignment) == (1, None)  # nothing changed: no assignment sent


def two_members_reconciled(coordinator: Coordinator) -> tuple[str, str]:
    a = coordinator.join().member_id
    assert a is not None
    joined = coordinator.join()
    b = joined.member_id
    assert b is not None
    # b is at the new epoch, but its partitions are still a's: it waits for them.
    assert joined.member_epoch == 2 and joined.assignment == frozenset()
    assert coordinator.member_state(b) == MemberState.UNRELEASED_PARTITIONS
    assert coordinator.group is not None and coordinator.group.state == ConsumerGroupState.RECONCILING
    # a must revoke first: its epoch stays until it reports the partitions gone.
    revoke = coordinator.beat(a, 1, parts(0, 1, 2, 3))
    assert revoke.member_epoch == 1 and revoke.assignment == parts(0, 1)
    assert coordinator.member_state(a) == MemberState.UNREVOKED_PARTITIONS
    assert coordinator.beat(b, 2, frozenset()).assignment is None  # still unreleased
    revoked = coordinator.beat(a, 1, parts(0, 1))
    assert (revoked.member_epoch, revoked.assignment) == (2, None)
    released = coordinator.beat(b, 2, frozenset())
    assert (released.member_epoch, released.assignment) == (2, parts(2, 3))
    assert coordinator.group.state == ConsumerGroupState.STABLE
    return a, b


def test_a_second_member_gets_its_partitions_only_once_the_first_revoked_them() -> None:
    two_members_reconciled(Coordinator({"t": 4}))


def test_member_epochs_out_of_step_are_fenced_but_a_lost_answer_is_forgiven() -> None:
    coordinator = Coordinator({"t": 4})
    a, b = two_members_reconciled(coordinator)
    assert coordinator.beat(b, 3, parts(2, 3)).error == ErrorCode.FENCED_MEMBER_EPOCH
    rejoin = HeartbeatRequest(b, 0, REBALANCE_MS, ("t",), None, frozenset())
    assert coordinator.heartbeat(rejoin).error == ErrorCode.FENCED_MEMBER_EPOCH  # epoch 0 under a live member's id
    # a moved from epoch 1 to 2 without being told (the answer was lost): epoch 1 with a subset of its partitions
    # is accepted, with more than its assignment it is not.
    assert coordinator.beat(a, 1, parts(0, 1)).error == ErrorCode.NONE
    assert coordinator.beat(a, 1, parts(0, 1, 2)).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert coordinator.beat("stranger", 2, frozenset()).error == ErrorCode.UNKNOWN_MEMBER_ID
    missing = consumer_group_heartbeat(None, "nope", HeartbeatRequest("m", 3), {}, CONFIG, 0, "x")
    assert missing.response.error == ErrorCode.GROUP_ID_NOT_FOUND and missing.group is None


def test_a_leaving_member_bumps_the_group_epoch_and_its_partitions_move() -> None:
    coordinator = Coordinator({"t": 4})
    a, b = two_members_reconciled(coordinator)
    left = coordinator.beat(a, -1, None)
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -1)
    assert coordinator.group is not None and coordinator.group.group_epoch == 3 and a not in coordinator.group.members
    taken = coordinator.beat(b, 2, parts(2, 3))
    assert (taken.member_epoch, taken.assignment) == (3, parts(0, 1, 2, 3))
    assert coordinator.beat(a, -1, None).error == ErrorCode.UNKNOWN_MEMBER_ID


def test_more_partitions_bump_the_group_epoch() -> None:
    coordinator = Coordinator({"t": 2})
    a = coordinator.join().member_id
    assert a is not None
    coordinator.topics = {"t": 3}
    grown = coordinator.beat(a, 1, parts(0, 1))
    assert (grown.member_epoch, grown.assignment) == (2, parts(0, 1, 2))


def test_invalid_requests_are_refused_with_kafkas_errors() -> None:
    coordinator = Coordinator({"t": 2})
    cases = [
        (HeartbeatRequest("", 0, REBALANCE_MS, (), None, frozenset()), ErrorCode.INVALID_REQUEST),
        (HeartbeatRequest("", 0, -1, ("t",), None, frozenset()), ErrorCode.INVALID_REQUEST),
        (HeartbeatRequest("", 0, REBALANCE_MS, ("t",), None, parts(0)), ErrorCode.INVALID_REQUEST),
        (HeartbeatRequest("", 3), ErrorCode.INVALID_REQUEST),
        (HeartbeatRequest("m", -3), ErrorCode.INVALID_REQUEST),
        (HeartbeatRequest("", 0, REBALANCE_MS, ("t",), "sticky", frozenset()), ErrorCode.UNSUPPORTED_ASSIGNOR),
        (HeartbeatRequest("", 0, REBALANCE_MS, ("t",), None, frozenset(), instance_id=""), ErrorCode.INVALID_REQUEST),
        (HeartbeatRequest("m", -2), ErrorCode.INVALID_REQUEST),  # a static leave without its InstanceId
        (
            HeartbeatRequest("", 0, REBALANCE_MS, (), None, frozenset(), subscribed_topic_regex="orders-["),
            ErrorCode.INVALID_REGULAR_EXPRESSION,
        ),
        (
            HeartbeatRequest("", 0, REBALANCE_MS, (), None, frozenset(), subscribed_topic_regex="(?=t)t"),
            ErrorCode.INVALID_REGULAR_EXPRESSION,  # look-ahead is not RE2's
        ),
    ]
    for request, error in cases:
        response = coordinator.heartbeat(request)
        assert response.error == error and response.error_message, request
    assert coordinator.group is None  # nothing was created


def test_silent_members_and_members_that_never_revoke_are_fenced() -> None:
    coordinator = Coordinator({"t": 4})
    a = coordinator.join().member_id
    b = coordinator.join().member_id
    assert a is not None and b is not None
    coordinator.beat(a, 1, parts(0, 1, 2, 3))  # told to revoke 2 and 3, and never does
    coordinator.now += REBALANCE_MS
    coordinator.beat(b, 2, frozenset())
    assert coordinator.group is not None
    step = expire(coordinator.group, coordinator.topics, CONFIG, coordinator.now)
    assert [(f.member_id, f.reason) for f in step.fenced] == [(a, "rebalance timeout")]
    assert step.group.group_epoch == 3 and set(step.group.members) == {b}
    step = expire(step.group, coordinator.topics, CONFIG, coordinator.now + CONFIG.session_timeout_ms)
    assert [(f.member_id, f.reason) for f in step.fenced] == [(b, "session timeout")]
    assert step.group.state == ConsumerGroupState.EMPTY


def test_no_partition_ever_has_two_owners() -> None:
    """Consumers that hold exactly what they were last given and report it, joining, leaving and changing
    subscriptions in a random order: at no point do two of them hold the same partition."""
    for seed in range(30):
        rng = random.Random(seed)
        coordinator = Coordinator({"a": 5, "b": 3})
        clients: dict[str, tuple[int, Partitions]] = {}  # member id -> (epoch, partitions it holds)
        for _ in range(200):
            roll = rng.random()
            if roll < 0.15 or not clients:
                topics = rng.choice([("a",), ("b",), ("a", "b")])
                response = coordinator.join(topics)
                assert response.member_id is not None and response.assignment is not None
                clients[response.member_id] = (response.member_epoch, response.assignment)
            elif roll < 0.22:
                member_id = rng.choice(sorted(clients))
                epoch, _ = clients.pop(member_id)
                assert coordinator.beat(member_id, -1, None).error == ErrorCode.NONE
            else:
                member_id = rng.choice(sorted(clients))
                epoch, held = clients[member_id]
                topics = rng.choice([None, None, None, ("a",), ("a", "b")])
                request = HeartbeatRequest(member_id, epoch, subscribed_topics=topics, owned=held)
                response = coordinator.heartbeat(request)
                assert response.error == ErrorCode.NONE, (seed, response)
                assignment = response.assignment if response.assignment is not None else held
                clients[member_id] = (response.member_epoch, assignment)
            holdings = [held for _, held in clients.values()]
            assert sum(len(h) for h in holdings) == len(frozenset().union(*holdings)), seed

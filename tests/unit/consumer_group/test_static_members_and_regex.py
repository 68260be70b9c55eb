"""Static members (group.instance.id) and regex subscriptions in KIP-848's protocol, with Kafka's errors: a static
member that leaves with epoch -2 keeps its partitions for its next instance, which takes them over without a
rebalance; an instance id a live member holds is UNRELEASED_INSTANCE_ID; an old instance is FENCED_INSTANCE_ID;
a regular expression matches whole topic names, is resolved apart from the heartbeat that brought it, and new
matching topics join at the group's next resolution (at most every 10 s), as Kafka's coordinator does it; the
`range` assignor when members ask for it; all of it survives a replay of the stored records."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

from minikafka.broker.consumer_group import shell
from minikafka.broker.consumer_group.assignor import range_assign
from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest, HeartbeatResponse, expire
from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerGroupConfig, Partitions, TopicPartition
from minikafka.broker.consumer_group.persistence import load_consumer_groups
from minikafka.broker.consumer_group.regex_resolution import REGEX_BATCH_REFRESH_INTERVAL_MS, TopicsVersion
from minikafka.broker.consumer_group.subscriptions import preferred_assignor
from minikafka.broker.group.records import OffsetsRecord, decode, encode_key, encode_value
from minikafka.broker.group.shard import split_records
from minikafka.common.errors import ErrorCode

CONFIG = ConsumerGroupConfig(session_timeout_ms=45000, heartbeat_interval_ms=5000)
REBALANCE_MS = 30000


def parts(topic: str, *partitions: int) -> Partitions:
    return frozenset(TopicPartition(topic, p) for p in partitions)


class Coordinator:
    """The shell's heartbeats over a changing set of topics, keeping the records it wrote; a resolution a heartbeat
    leaves pending runs right after it, as the coordinator runs it."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.group: ConsumerGroup | None = None
        self.topics = topics
        self.log: list[OffsetsRecord] = []
        self.now = 0
        self.version = TopicsVersion(0, 0)  # the metadata's offset, and the last one that created a topic
        self.describable: Callable[[str], bool] | None = None  # the topics the resolving member may DESCRIBE

    def ids(self) -> dict[str, uuid.UUID]:
        return {name: uuid.uuid5(uuid.NAMESPACE_OID, name) for name in self.topics}

    def create(self, topic: str, partitions: int) -> None:
        self.topics[topic] = partitions
        self.version = TopicsVersion(self.version.offset + 1, self.version.offset + 1)

    def heartbeat(self, request: HeartbeatRequest, resolve: bool = True) -> HeartbeatResponse:
        pending = self.group is not None and self.group.regex_resolution_pending
        step = shell.heartbeat(
            self.group, None, "g", request, self.topics, self.ids(), CONFIG, self.now, version=self.version
        )
        self.group = step.group
        self.keep(step.records)
        if resolve and not pending and self.group is not None and self.group.regex_resolution_pending:
            self.resolve()
        return step.response

    def resolve(self) -> None:
        assert self.group is not None
        step = shell.resolve(self.group, self.topics, self.ids(), self.version, self.now, self.describable)
        self.group = step.group
        self.keep(step.records)

    def keep(self, records: tuple[shell.Record, ...]) -> None:
        self.log += [decode(encode_key(r.key), encode_value(r.value)) for r in records]

    def join(
        self, member_id: str, topics: tuple[str, ...] = ("t",), instance: str | None = None, regex: str | None = None
    ) -> HeartbeatResponse:
        request = HeartbeatRequest(
            member_id, 0, REBALANCE_MS, topics, None, frozenset(), instance_id=instance, subscribed_topic_regex=regex
        )
        return self.heartbeat(request)

    def replayed(self) -> ConsumerGroup | None:
        names = {v: k for k, v in self.ids().items()}
        return load_consumer_groups(split_records(self.log).consumer, names, self.now).get("g")


def test_a_static_member_leaving_with_epoch_minus_2_keeps_its_partitions_for_its_next_instance() -> None:
    coordinator = Coordinator({"t": 4})
    first = coordinator.join("a1", instance="a")
    other = coordinator.join("b1", instance="b")
    assert (first.member_epoch, other.member_epoch) == (1, 2)
    revoked = coordinator.heartbeat(HeartbeatRequest("a1", 1, owned=parts("t", 0, 1, 2, 3)))
    assert revoked.assignment is not None and len(revoked.assignment) == 2
    held = revoked.assignment
    coordinator.heartbeat(HeartbeatRequest("a1", 1, owned=held))
    assert coordinator.group is not None
    epoch = coordinator.group.group_epoch
    left = coordinator.heartbeat(HeartbeatRequest("a1", -2, instance_id="a"))
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -2)
    assert coordinator.group.members["a1"].member_epoch == -2 and coordinator.group.group_epoch == epoch
    # The next instance takes the place under its own id: the same partitions, no new group epoch.
    again = coordinator.join("a2", instance="a")
    assert again.error == ErrorCode.NONE and again.assignment == held
    assert set(coordinator.group.members) == {"a2", "b1"} and coordinator.group.group_epoch == epoch
    assert coordinator.group.target["a2"] == held and "a1" not in coordinator.group.target
    # The old instance is fenced; the id of a live instance cannot join twice.
    fenced = coordinator.heartbeat(HeartbeatRequest("a1", 2, instance_id="a", owned=held))
    assert fenced.error == ErrorCode.FENCED_INSTANCE_ID and fenced.error_message
    twice = coordinator.join("a3", instance="a")
    assert twice.error == ErrorCode.UNRELEASED_INSTANCE_ID
    assert twice.error_message == (
        "Static member a3 with instance id a cannot join the group because the instance id is owned by a2 member."
    )
    unknown = coordinator.heartbeat(HeartbeatRequest("z1", 2, instance_id="z", owned=frozenset()))
    assert unknown.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert _comparable(coordinator.replayed()) == _comparable(coordinator.group)


def test_a_released_static_member_is_removed_when_its_session_times_out() -> None:
    coordinator = Coordinator({"t": 2})
    coordinator.join("a1", instance="a")
    coordinator.heartbeat(HeartbeatRequest("a1", -2, instance_id="a"))
    assert coordinator.group is not None
    step = expire(coordinator.group, coordinator.topics, CONFIG, CONFIG.session_timeout_ms)
    assert [f.member_id for f in step.fenced] == ["a1"] and not step.group.members


def test_a_regex_is_resolved_after_the_heartbeat_that_brought_it_and_new_topics_join_at_most_every_10_s() -> None:
    coordinator = Coordinator({"orders-eu": 2, "orders-us": 1, "xorders-eu": 3})
    joined = coordinator.join("m1", topics=(), regex="orders-.*")
    # Its answer comes before the resolution: a new group at epoch 1, nothing to consume yet.
    assert (joined.member_epoch, joined.assignment) == (1, frozenset())
    assert coordinator.group is not None and coordinator.group.group_epoch == 2
    assert coordinator.group.resolved_regexes == {"orders-.*": frozenset({"orders-eu", "orders-us"})}
    matched = coordinator.heartbeat(HeartbeatRequest("m1", 1, owned=frozenset()))
    assert (matched.member_epoch, matched.assignment) == (2, parts("orders-eu", 0, 1) | parts("orders-us", 0))
    # A matching topic created within 10 s of the resolution waits for the next one.
    coordinator.now = 1000
    coordinator.create("orders-asia", 2)
    still = coordinator.heartbeat(HeartbeatRequest("m1", 2, owned=matched.assignment))
    assert (still.member_epoch, coordinator.group.group_epoch, still.assignment) == (2, 2, None)
    coordinator.now = REGEX_BATCH_REFRESH_INTERVAL_MS + 1
    coordinator.heartbeat(HeartbeatRequest("m1", 2, owned=matched.assignment))
    assert coordinator.group.group_epoch == 3 and "orders-asia" in coordinator.group.resolved_regexes["orders-.*"]
    grown = coordinator.heartbeat(HeartbeatRequest("m1", 2, owned=matched.assignment))
    assert grown.assignment == matched.assignment | parts("orders-asia", 0, 1)
    assert _comparable(coordinator.replayed()) == _comparable(coordinator.group)
    # An empty regex drops it; the group's records drop it too.
    cleared = HeartbeatRequest("m1", grown.member_epoch, subscribed_topics=("xorders-eu",), subscribed_topic_regex="")
    assert coordinator.heartbeat(cleared).error == ErrorCode.NONE
    assert coordinator.group.resolved_regexes == {}
    assert _comparable(coordinator.replayed()) == _comparable(coordinator.group)


def test_a_regex_and_a_topic_name_the_name_comes_first_and_a_resolved_regex_needs_no_new_resolution() -> None:
    """librdkafka's own test of the consumer protocol (0045, resubscribe with a regex and a topic) expects the named
    topic in one assignment and the regex's topics in a later one, as Kafka resolves regexes apart."""
    coordinator = Coordinator({"topic_regex1": 4, "topic_regex2": 4, "topic_a": 2})
    joined = coordinator.join("m1", topics=("topic_a",), regex="^.*topic_regex.*")
    assert joined.assignment == parts("topic_a", 0, 1)
    later = coordinator.heartbeat(HeartbeatRequest("m1", joined.member_epoch, owned=joined.assignment))
    assert later.assignment == joined.assignment | parts("topic_regex1", 0, 1, 2, 3) | parts("topic_regex2", 0, 1, 2, 3)
    # A second member taking up the resolved regex bumps the epoch in its own heartbeat, with no resolution.
    assert coordinator.group is not None
    epoch = coordinator.group.group_epoch
    coordinator.heartbeat(
        HeartbeatRequest("m2", 0, REBALANCE_MS, (), None, frozenset(), subscribed_topic_regex="^.*topic_regex.*"),
        resolve=False,
    )
    assert coordinator.group.group_epoch == epoch + 1 and not coordinator.group.regex_resolution_pending
    assert set(coordinator.group.target["m2"]) <= parts("topic_regex1", 0, 1, 2, 3) | parts("topic_regex2", 0, 1, 2, 3)
    assert coordinator.group.target["m2"]


def test_a_resolution_matches_only_the_topics_the_member_that_started_it_may_describe() -> None:
    """Kafka 4 filters a regex's matches by the DESCRIBE right of the member whose heartbeat started the resolution:
    a `.*` subscription learns no topic name its principal may not see."""
    coordinator = Coordinator({"orders": 2, "payroll": 1})
    coordinator.describable = lambda topic: topic != "payroll"
    coordinator.join("m1", topics=(), regex=".*")
    assert coordinator.group is not None and coordinator.group.resolved_regexes == {".*": frozenset({"orders"})}
    assert coordinator.group.subscription_metadata == {"orders": 2}


def test_range_gives_contiguous_ranges_per_topic_and_keeps_what_members_had() -> None:
    subscriptions = {m: frozenset({"a", "b"}) for m in ("m1", "m2")}
    target = range_assign(subscriptions, {"a": 5, "b": 2}, {})
    assert target == {"m1": parts("a", 0, 1, 2) | parts("b", 0), "m2": parts("a", 3, 4) | parts("b", 1)}
    three = {**subscriptions, "m3": frozenset({"a"})}
    moved = range_assign(three, {"a": 5, "b": 2}, target)
    assert moved["m1"] & parts("a", 0, 1, 2) == parts("a", 0, 1) and moved["m2"] >= parts("a", 3)
    assert sorted(len(p & parts("a", 0, 1, 2, 3, 4)) for p in moved.values()) == [1, 2, 2]
    assert moved["m3"] <= parts("a", 0, 1, 2, 3, 4) and moved["m1"] | moved["m2"] >= parts("b", 0, 1)


def test_the_group_uses_the_assignor_most_members_ask_for() -> None:
    coordinator = Coordinator({"a": 4, "b": 4})
    coordinator.heartbeat(HeartbeatRequest("m1", 0, REBALANCE_MS, ("a", "b"), "range", frozenset()))
    assert coordinator.group is not None and preferred_assignor(coordinator.group, CONFIG) == "range"
    assert coordinator.group.target["m1"] == parts("a", 0, 1, 2, 3) | parts("b", 0, 1, 2, 3)
    coordinator.heartbeat(HeartbeatRequest("m2", 0, REBALANCE_MS, ("a", "b"), "range", frozenset()))
    # range: each member the same partition numbers of the co-partitioned topics
    assert coordinator.group.target["m1"] == parts("a", 0, 1) | parts("b", 0, 1)
    assert preferred_assignor(ConsumerGroup("g"), CONFIG) == "uniform"  # the first of group.consumer.assignors


def _comparable(group: ConsumerGroup | None) -> ConsumerGroup | None:
    if group is None:
        return None
    members = {k: m.evolve(last_heartbeat_ms=0, revocation_deadline_ms=None) for k, m in group.members.items()}
    return group.evolve(
        members=members,
        subscription_metadata=dict(group.subscription_metadata),
        resolved_regexes=dict(group.resolved_regexes),
        # When the regexes were resolved is the coordinator's memory; the metadata offset they are as of is stored.
        regexes_resolved_ms=None,
        regexes_version=group.regexes_version if group.resolved_regexes else -1,
        regex_resolution_pending=False,
    )


def test_static_members_regexes_and_new_topics_at_random_never_give_a_partition_two_owners() -> None:
    """Members joining (some static, some by regex), leaving for good or for a while (-2), instances coming back,
    topics appearing: no two clients ever hold the same partition, and the stored records always replay to the
    group in memory."""
    for seed in range(15):
        rng = random.Random(seed)
        coordinator = Coordinator({"a": 3, "b": 2})
        clients: dict[str, tuple[int, Partitions, str | None]] = {}  # member id -> (epoch, holds, instance)
        for step in range(150):
            coordinator.now += 100
            roll = rng.random()
            live = {instance for _, _, instance in clients.values()}
            if roll < 0.15 or not clients:
                instance = rng.choice([None, "i1", "i2", "i3"])
                regex = rng.choice([None, None, "a|b", "c.*"])
                topics = () if regex else rng.choice([("a",), ("b",), ("a", "b")])
                response = coordinator.join(f"m{step}", topics, instance, regex)
                if instance in live and instance is not None:
                    assert response.error == ErrorCode.UNRELEASED_INSTANCE_ID, (seed, step)
                    continue
                assert response.error == ErrorCode.NONE and response.assignment is not None, (seed, step, response)
                clients[f"m{step}"] = (response.member_epoch, response.assignment, instance)
            elif roll < 0.22:
                member_id = rng.choice(sorted(clients))
                _, _, instance = clients.pop(member_id)
                epoch = -2 if instance is not None and rng.random() < 0.7 else -1
                response = coordinator.heartbeat(HeartbeatRequest(member_id, epoch, instance_id=instance))
                assert response.error == ErrorCode.NONE, (seed, step, response)
            elif roll < 0.25:
                coordinator.create(f"c{step}", rng.randint(1, 3))
            else:
                member_id = rng.choice(sorted(clients))
                epoch, held, instance = clients[member_id]
                request = HeartbeatRequest(member_id, epoch, owned=held, instance_id=instance)
                response = coordinator.heartbeat(request)
                assert response.error == ErrorCode.NONE, (seed, step, response)
                assignment = response.assignment if response.assignment is not None else held
                clients[member_id] = (response.member_epoch, assignment, instance)
            holdings = [held for _, held, _ in clients.values()]
            assert sum(len(h) for h in holdings) == len(frozenset().union(*holdings)), (seed, step)
            if step % 5 == 0:
                assert _comparable(coordinator.replayed()) == _comparable(coordinator.group), (seed, step)

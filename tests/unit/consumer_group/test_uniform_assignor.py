"""The server-side `uniform` assignor: every subscribed partition to one subscriber, even shares, sticky."""

from __future__ import annotations

from minikafka.broker.consumer_group.assignor import uniform_assign
from minikafka.broker.consumer_group.model import TopicPartition


def parts(topic: str, *partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(topic, p) for p in partitions)


def test_homogeneous_members_get_even_shares_of_every_partition() -> None:
    subscriptions = {m: frozenset({"a", "b"}) for m in ("m1", "m2", "m3")}
    target = uniform_assign(subscriptions, {"a": 4, "b": 3}, {})
    assert sorted(len(p) for p in target.values()) == [2, 2, 3]
    assert frozenset().union(*target.values()) == parts("a", 0, 1, 2, 3) | parts("b", 0, 1, 2)
    assert sum(len(p) for p in target.values()) == 7  # each partition once


def test_a_new_member_takes_only_what_balance_needs() -> None:
    previous = {"m1": parts("t", 0, 1, 2), "m2": parts("t", 3, 4, 5)}
    subscriptions = {m: frozenset({"t"}) for m in ("m1", "m2", "m3")}
    target = uniform_assign(subscriptions, {"t": 6}, previous)
    assert len(target["m3"]) == 2 and len(target["m1"]) == len(target["m2"]) == 2
    assert target["m1"] <= previous["m1"] and target["m2"] <= previous["m2"]  # nothing moves between m1 and m2


def test_heterogeneous_subscriptions_only_get_their_topics() -> None:
    subscriptions = {"m1": frozenset({"a"}), "m2": frozenset({"a", "b"}), "m3": frozenset({"c"})}
    target = uniform_assign(subscriptions, {"a": 4, "b": 4}, {})
    assert target["m3"] == frozenset()  # topic c does not exist
    assert all(tp.topic == "a" for tp in target["m1"])
    assert target["m1"] | target["m2"] == parts("a", 0, 1, 2, 3) | parts("b", 0, 1, 2, 3)
    assert not target["m1"] & target["m2"]
    assert len(target["m1"]) == len(target["m2"]) == 4  # m1 takes all of a, m2 all of b


def test_a_departed_member_and_a_shrunk_subscription_free_their_partitions() -> None:
    previous = {"gone": parts("t", 0, 1), "m1": parts("t", 2) | parts("u", 0), "m2": parts("t", 3)}
    subscriptions = {"m1": frozenset({"t"}), "m2": frozenset({"t"})}
    target = uniform_assign(subscriptions, {"t": 4, "u": 1}, previous)
    assert target["m1"] | target["m2"] == parts("t", 0, 1, 2, 3)
    assert TopicPartition("t", 2) in target["m1"] and TopicPartition("t", 3) in target["m2"]


def test_the_same_input_gives_the_same_assignment() -> None:
    subscriptions = {f"m{i}": frozenset({"a", "b"} if i % 2 else {"a"}) for i in range(5)}
    first = uniform_assign(subscriptions, {"a": 7, "b": 5}, {})
    assert first == uniform_assign(dict(reversed(list(subscriptions.items()))), {"a": 7, "b": 5}, {})


def test_with_racks_each_member_gets_the_partitions_of_its_rack_without_losing_the_balance() -> None:
    from minikafka.broker.consumer_group.assignor import Racks, range_assign

    subscriptions = {"m1": frozenset({"t"}), "m2": frozenset({"t"})}
    racks = {TopicPartition("t", p): frozenset({"a" if p % 2 == 0 else "b"}) for p in range(4)}
    members = {"m1": "b", "m2": "a"}
    even, odd = (
        frozenset({TopicPartition("t", 0), TopicPartition("t", 2)}),
        frozenset({TopicPartition("t", 1), TopicPartition("t", 3)}),
    )
    for assign in (uniform_assign, range_assign):
        assert assign(subscriptions, {"t": 4}, {}, Racks())["m1"] != odd  # without racks, another split
        aware = assign(subscriptions, {"t": 4}, {}, Racks(members, racks))
        assert (aware["m1"], aware["m2"]) == (odd, even), assign.__name__
        # Every replica in rack a: balance first, two each all the same.
        one_rack = Racks(members, {tp: frozenset({"a"}) for tp in racks})
        assert sorted(len(p) for p in assign(subscriptions, {"t": 4}, {}, one_rack).values()) == [2, 2]

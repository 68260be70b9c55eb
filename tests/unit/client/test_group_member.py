"""The group member's consumer protocol encodings and Kafka's range assignor."""

from __future__ import annotations

from minikafka.client.consumer_groups_command import decode_assignment
from minikafka.client.group_member import decode_subscription, encode_assignment, encode_subscription, range_assign


def test_subscription_and_assignment_round_trip_through_kafkas_formats() -> None:
    assert decode_subscription(encode_subscription(["orders", "payments"])) == ["orders", "payments"]
    assert decode_assignment(encode_assignment([("b", 1), ("a", 2), ("a", 0)])) == [("a", 0), ("a", 2), ("b", 1)]
    assert decode_assignment(encode_assignment([])) == []


def test_range_assignor_gives_the_first_members_one_more() -> None:
    assignment = range_assign({"m2": ["t"], "m1": ["t"], "m3": ["t", "u"]}, {"t": 5, "u": 2})
    assert assignment == {
        "m1": [("t", 0), ("t", 1)],
        "m2": [("t", 2), ("t", 3)],
        "m3": [("t", 4), ("u", 0), ("u", 1)],
    }

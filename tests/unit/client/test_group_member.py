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


async def test_committed_with_require_stable_waits_out_an_unstable_offset() -> None:
    """KIP-447: while a transactional commit awaits its marker the coordinator answers UNSTABLE_OFFSET_COMMIT; the
    member asks again until the offset is stable."""
    from types import SimpleNamespace
    from typing import Any

    from minikafka.client.group_member import GroupMember, GroupTimeouts
    from minikafka.common.errors import ErrorCode

    asked: list[bool] = []
    answers = [ErrorCode.UNSTABLE_OFFSET_COMMIT, ErrorCode.UNSTABLE_OFFSET_COMMIT, ErrorCode.NONE]

    class Client:
        async def any_broker(self, body: Any) -> Any:
            return SimpleNamespace(error_code=0, node_id=1, host="b1", port=9094, error_message=None)

        def connection(self, address: str) -> Any:
            class Connection:
                async def send(self, body: Any) -> Any:
                    asked.append(body.require_stable)
                    error = answers.pop(0)
                    offset = 42 if error == ErrorCode.NONE else -1
                    partition = SimpleNamespace(partition_index=0, committed_offset=offset, error_code=int(error))
                    return SimpleNamespace(error_code=0, topics=[SimpleNamespace(name="in", partitions=[partition])])

            return Connection()

    member = GroupMember(Client(), "g", ["in"], None, GroupTimeouts(retry_backoff_ms=0))  # type: ignore[arg-type]
    assert await member.committed([("in", 0)], require_stable=True) == {("in", 0): 42}
    assert asked == [True, True, True]

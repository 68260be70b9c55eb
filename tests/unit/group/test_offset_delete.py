"""OffsetDelete on the group core: which offsets go, which are refused and why, and that they go only once their
tombstones are stored."""

from __future__ import annotations

from minikafka.broker.group.effects import Answer, Append, GroupEvent, GroupStep, OffsetDeleteResult
from minikafka.broker.group.loader import load_groups
from minikafka.broker.group.offset_delete import OffsetDeleteRequest, decode_subscription_topics, delete_offsets
from minikafka.broker.group.offsets import append_done
from minikafka.broker.group.records import OffsetCommitKey, OffsetCommitValue, OffsetsRecord
from minikafka.broker.group.state import (
    Group,
    GroupConfig,
    GroupState,
    Member,
    OffsetAndMetadata,
    Protocol,
    TopicPartitionKey,
)
from minikafka.client.group_member import encode_subscription
from minikafka.common.errors import ErrorCode

T0, T1, U0 = TopicPartitionKey("t", 0), TopicPartitionKey("t", 1), TopicPartitionKey("u", 0)
CONFIG = GroupConfig()


def _offsets(*keys: TopicPartitionKey) -> dict[TopicPartitionKey, OffsetAndMetadata]:
    return {key: OffsetAndMetadata(5, -1, "", 0) for key in keys}


def _member(member_id: str, metadata: bytes) -> Member:
    return Member(member_id, None, "c", "/127.0.0.1", 10000, 10000, "consumer", (Protocol("range", metadata),), 0)


def _stable(protocol_type: str, metadata: bytes) -> Group:
    return Group(
        "g",
        state=GroupState.STABLE,
        generation=1,
        protocol_type=protocol_type,
        protocol_name="range",
        leader_id="m1",
        members={"m1": _member("m1", metadata)},
        offsets=_offsets(T0, T1, U0),
    )


def _answer(step: GroupStep, rid: int) -> OffsetDeleteResult:
    answers = [e.result for e in step.effects if isinstance(e, Answer) and e.request_id == rid]
    assert len(answers) == 1 and isinstance(answers[0], OffsetDeleteResult), step.effects
    return answers[0]


def _stored(group: Group, step: GroupStep, error: ErrorCode = ErrorCode.NONE) -> tuple[GroupStep, Append]:
    appends = [e for e in step.effects if isinstance(e, Append)]
    assert len(appends) == 1 and not any(isinstance(e, Answer) for e in step.effects)
    return append_done(step.group, appends[0].request_id, error, CONFIG, 0), appends[0]


def test_an_empty_groups_offsets_go_once_their_tombstones_are_stored() -> None:
    group = Group("g", offsets=_offsets(T0, T1, U0))
    step = delete_offsets(group, OffsetDeleteRequest(1, (T0, U0, TopicPartitionKey("t", 7))))
    assert step.group.offsets == group.offsets  # nothing changes before the write is stored
    done, append = _stored(group, step)
    assert append.records == (
        OffsetsRecord(OffsetCommitKey("g", "t", 0), None),
        OffsetsRecord(OffsetCommitKey("g", "u", 0), None),
    )
    assert _answer(done, 1) == OffsetDeleteResult(
        ErrorCode.NONE,
        ((T0, ErrorCode.NONE), (U0, ErrorCode.NONE), (TopicPartitionKey("t", 7), ErrorCode.NONE)),
    )
    assert set(done.group.offsets) == {T1}
    assert any(isinstance(e, GroupEvent) and e.name == "offsets_deleted" for e in done.effects)


def test_a_coordinator_loading_the_log_after_the_tombstones_has_no_such_offsets() -> None:
    commits = [
        OffsetsRecord(OffsetCommitKey("g", k.topic, k.partition), OffsetCommitValue(5, -1, "", 0)) for k in (T0, T1)
    ]
    group = load_groups(commits, 0)["g"]
    done, append = _stored(group, delete_offsets(group, OffsetDeleteRequest(1, (T0,))))
    reloaded = load_groups([*commits, *append.records], 0)
    assert set(reloaded["g"].offsets) == {T1} == set(done.group.offsets)


def test_a_failed_write_deletes_nothing_and_says_why() -> None:
    group = Group("g", offsets=_offsets(T0))
    done, _ = _stored(group, delete_offsets(group, OffsetDeleteRequest(1, (T0,))), ErrorCode.NOT_ENOUGH_REPLICAS)
    assert _answer(done, 1).partitions == ((T0, ErrorCode.COORDINATOR_NOT_AVAILABLE),)
    assert set(done.group.offsets) == {T0}


def test_a_group_that_does_not_exist_is_group_id_not_found() -> None:
    for group in (Group("g"), Group("g", state=GroupState.DEAD, offsets=_offsets(T0))):
        step = delete_offsets(group, OffsetDeleteRequest(1, (T0,)))
        assert _answer(step, 1) == OffsetDeleteResult(ErrorCode.GROUP_ID_NOT_FOUND)


def test_a_consumer_group_with_members_keeps_the_offsets_of_its_subscribed_topics() -> None:
    group = _stable("consumer", encode_subscription(["t"]))
    step = delete_offsets(group, OffsetDeleteRequest(1, (T0, U0)))
    done, append = _stored(group, step)
    assert append.records == (OffsetsRecord(OffsetCommitKey("g", "u", 0), None),)
    assert _answer(done, 1).partitions == ((U0, ErrorCode.NONE), (T0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
    assert set(done.group.offsets) == {T0, T1}


def test_a_subscription_that_cannot_be_read_protects_every_topic() -> None:
    group = _stable("consumer", b"\x00\x00\xff")
    step = delete_offsets(group, OffsetDeleteRequest(1, (U0,)))
    assert _answer(step, 1).partitions == ((U0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),)
    assert not any(isinstance(e, Append) for e in step.effects)


def test_a_non_consumer_group_with_members_is_non_empty_group() -> None:
    group = _stable("connect", b"anything")
    assert _answer(delete_offsets(group, OffsetDeleteRequest(1, (U0,))), 1) == OffsetDeleteResult(
        ErrorCode.NON_EMPTY_GROUP
    )


def test_a_kip_848_group_is_judged_by_its_subscriptions_even_without_offsets() -> None:
    nothing = delete_offsets(Group("g"), OffsetDeleteRequest(1, (U0,), frozenset({"t"})))
    assert _answer(nothing, 1) == OffsetDeleteResult(ErrorCode.NONE, ((U0, ErrorCode.NONE),))
    group = Group("g", offsets=_offsets(T0, U0))
    done, _ = _stored(group, delete_offsets(group, OffsetDeleteRequest(1, (T0, U0), frozenset({"t"}))))
    assert _answer(done, 1).partitions == ((U0, ErrorCode.NONE), (T0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
    assert set(done.group.offsets) == {T0}


def test_subscriptions_decode_in_every_version_and_garbage_is_none() -> None:
    assert decode_subscription_topics(encode_subscription(["a", "bc"])) == ["a", "bc"]
    assert decode_subscription_topics(b"\x00\x01\x00\x00\x00\x01\x00\x01z" + b"\xff\xff\xff\xff") == ["z"]
    assert decode_subscription_topics(b"\x00\x00\x7f\xff\xff\xff") is None
    assert decode_subscription_topics(b"") is None

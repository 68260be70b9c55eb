"""TxnOffsetCommit's checks are Kafka's ClassicGroup.validateOffsetCommit with isTransactional: a commit without a
member id and generation (TxnOffsetCommit before v3, as aiokafka and kafkajs send it) is taken by a group with
members, where a plain OffsetCommit so sent is UNKNOWN_MEMBER_ID; a member that names itself is still checked."""

from __future__ import annotations

from minikafka.broker.group.offsets import CommitRequest, validate_offset_commit
from minikafka.broker.group.state import Group, GroupState, Member, Protocol
from minikafka.common.errors import ErrorCode


def _group(state: GroupState) -> Group:
    member = Member("m1", None, "c", "/127.0.0.1", 10000, 10000, "consumer", (Protocol("range", b""),), 0)
    return Group(
        "g",
        state=state,
        generation=3,
        protocol_type="consumer",
        protocol_name="range",
        leader_id="m1",
        members={"m1": member},
    )


ANONYMOUS = CommitRequest(0, "", None, -1, (), 8)


def test_a_transactional_commit_without_a_member_goes_to_a_group_with_members() -> None:
    for state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.PREPARING_REBALANCE):
        assert validate_offset_commit(_group(state), ANONYMOUS, transactional=True) == ErrorCode.NONE
        assert validate_offset_commit(_group(state), ANONYMOUS) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_transactional_commit_naming_a_member_is_checked_as_kafka_checks_it() -> None:
    stable = _group(GroupState.STABLE)
    assert validate_offset_commit(stable, CommitRequest(0, "m1", None, 3, (), 8), transactional=True) == 0
    unknown = CommitRequest(0, "m9", None, 3, (), 8)
    assert validate_offset_commit(stable, unknown, transactional=True) == ErrorCode.UNKNOWN_MEMBER_ID
    stale = CommitRequest(0, "m1", None, 2, (), 8)
    assert validate_offset_commit(stable, stale, transactional=True) == ErrorCode.ILLEGAL_GENERATION
    rebalancing = CommitRequest(0, "m1", None, 3, (), 8)
    completing = _group(GroupState.COMPLETING_REBALANCE)
    assert validate_offset_commit(completing, rebalancing, transactional=True) == ErrorCode.NONE
    assert validate_offset_commit(completing, rebalancing) == ErrorCode.REBALANCE_IN_PROGRESS

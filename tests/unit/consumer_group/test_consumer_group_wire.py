"""ConsumerGroupHeartbeat through the production shell (GroupCoordinator) and the Kafka listener's handler: the
load answer, a join with its assignment by topic id, the classic protocol refused while the group has members
and allowed once the last one left."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import uuid
from types import SimpleNamespace
from typing import Any

import structlog.testing
from immutables import Map
from kio.schema.consumer_group_heartbeat.v1 import request as heartbeat_v1
from kio.schema.delete_groups.v2 import request as delete_v2
from kio.schema.join_group.v9 import request as join_v9

from minikafka.broker.client_authorizer import Caller, ClientAuthorizer
from minikafka.broker.group.coordinator import OFFSETS_TOPIC, CoordinatorConfig, GroupCoordinator
from minikafka.broker.group.state import Clock, GroupConfig
from minikafka.broker.kafka_wire import apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import answered
from minikafka.common.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import iter_batches
from minikafka.common.standard_authorizer import AuthorizerSettings

CONSUMER_GROUP_HEARTBEAT, JOIN_GROUP, DELETE_GROUPS = 68, 11, 42
TOPIC_ID = uuid.uuid4()


def leading_manager(write_error: ErrorCode = ErrorCode.NONE, appended: bool = False) -> Any:
    """A replica manager leading the only partition of an empty __consumer_offsets; topic t has 2 partitions.
    Its appends (kept in `written`) answer `write_error`, as one made (`appended`, at offset 0) or refused before."""
    offsets = SimpleNamespace(name=OFFSETS_TOPIC, topic_id=uuid.uuid4(), partitions={0: SimpleNamespace(leader=1)})
    topic = SimpleNamespace(name="t", topic_id=TOPIC_ID, partitions={0: object(), 1: object()})
    log = SimpleNamespace(log_start_offset=0, log_end_offset=0)
    replica = SimpleNamespace(leader=1, leader_epoch=3, log=log)
    image = SimpleNamespace(
        brokers={},
        offset=0,
        topics_by_name={OFFSETS_TOPIC: offsets, "t": topic},
        topics_by_id={offsets.topic_id: offsets, TOPIC_ID: topic},
    )
    written: list[bytes] = []

    def produce(tp: TopicPartition, batch: bytes, acks: int, timeout_ms: int, **_: Any) -> Any:
        assert (tp, acks) == (TopicPartition(OFFSETS_TOPIC, 0), -1)
        written.append(batch)
        return answered(ProduceResult(write_error, 0 if appended or write_error == ErrorCode.NONE else -1))

    return SimpleNamespace(
        metadata=SimpleNamespace(image=image),
        replicas={TopicPartition(OFFSETS_TOPIC, 0): replica},
        serving=lambda: True,
        high_watermark_reached=lambda *_: None,  # the log holds no uncommitted tail
        produce=produce,
        written=written,
    )


async def answer(ctx: WireContext, request: Request) -> Any:
    response = apis.HANDLERS[request.header.api_key](ctx, request)
    return await response if inspect.isawaitable(response) else response


async def loaded(groups: GroupCoordinator) -> None:
    for _ in range(1000):  # the load of an empty partition takes a few turns of the loop
        if groups.group("g") != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return
        await asyncio.sleep(0)


def heartbeat(member_epoch: int, owned: tuple[int, ...] | None = None) -> Request:
    body = heartbeat_v1.ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m-1",
        member_epoch=member_epoch,
        rebalance_timeout=datetime.timedelta(seconds=30),
        subscribed_topic_names=("t",) if member_epoch == 0 else None,
        topic_partitions=_owned(owned),
    )
    return Request(ApiHeader(CONSUMER_GROUP_HEARTBEAT, 1, 1), "test", body)


def _owned(owned: tuple[int, ...] | None) -> Any:
    if owned is None:
        return None  # not reported
    return (heartbeat_v1.TopicPartitions(topic_id=TOPIC_ID, partitions=owned),) if owned else ()


SUBSCRIPTION_T = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"  # ConsumerProtocolSubscription v0 of t


def classic_join(member_id: str = "", metadata: bytes = SUBSCRIPTION_T) -> Request:
    body = join_v9.JoinGroupRequest(
        group_id="g",
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=10),
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(join_v9.JoinGroupRequestProtocol(name="range", metadata=metadata),),
        reason=None,
    )
    return Request(ApiHeader(JOIN_GROUP, 9, 1), "test", body)


def test_a_classic_member_joins_a_consumer_group_which_becomes_classic_when_the_last_consumer_member_leaves() -> None:
    async def scenario() -> tuple[list[Any], Any, Any]:
        config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
        groups = GroupCoordinator(leading_manager(), SimpleNamespace(), config)  # type: ignore[arg-type]
        ctx = WireContext(groups.manager, "PLAINTEXT", groups=groups)
        answers = [await answer(ctx, heartbeat(0, ()))]
        await loaded(groups)
        answers.append(await answer(ctx, heartbeat(0, ())))
        answers.append(await answer(ctx, classic_join(metadata=b"")))
        answers.append(await answer(ctx, classic_join()))
        answers.append(await answer(ctx, classic_join(answers[-1].member_id)))
        answers.append(await answer(ctx, heartbeat(-1)))
        return answers, groups.consumer_group("g"), groups.group("g")

    answers, consumer, classic = asyncio.run(scenario())
    loading, joined, unreadable, required, classic_joined, left = answers
    assert loading.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert joined.error_code == ErrorCode.NONE and joined.member_id == "m-1" and joined.member_epoch == 1
    assert [(t.topic_id, tuple(t.partitions)) for t in joined.assignment.topic_partitions] == [(TOPIC_ID, (0, 1))]
    assert unreadable.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert required.error_code == ErrorCode.MEMBER_ID_REQUIRED and required.member_id
    assert classic_joined.error_code == ErrorCode.NONE
    # Served by the consumer group: its generation is its member epoch, it is no leader, it runs no assignor.
    assert (classic_joined.generation_id, classic_joined.leader, classic_joined.protocol_name) == (2, "", "range")
    assert left.error_code == ErrorCode.NONE and left.member_epoch == -1
    assert consumer is None  # converted back: a classic group with the classic member, rebalancing
    assert list(classic.members) == [required.member_id] and classic.state.value == "PreparingRebalance"


def test_the_join_is_answered_only_after_its_records_are_written_and_a_failed_write_is_an_error() -> None:
    """Kafka's ConsumerGroup* records go to __consumer_offsets with acks=all before the answer; a write that fails
    is the member's COORDINATOR_NOT_AVAILABLE, and the partition's groups are reloaded from the log."""

    async def scenario(write_error: ErrorCode) -> tuple[Any, Any, list[bytes]]:
        config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
        manager = leading_manager(write_error)
        groups = GroupCoordinator(manager, SimpleNamespace(), config)  # type: ignore[arg-type]
        ctx = WireContext(groups.manager, "PLAINTEXT", groups=groups)
        groups.group("g")
        await loaded(groups)
        return await answer(ctx, heartbeat(0, ())), groups.group("g"), manager.written

    joined, _, written = asyncio.run(scenario(ErrorCode.NONE))
    assert joined.error_code == ErrorCode.NONE and len(written) == 1
    types = [record.key[1] for batch in iter_batches(written[0]) for record in batch.records()]
    assert types == [5, 4, 3, 7, 6, 8]  # Kafka's ConsumerGroup* record types, in the order Kafka writes them
    failed, after, _ = asyncio.run(scenario(ErrorCode.NOT_ENOUGH_REPLICAS))
    assert failed.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert after == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # unloaded, and reloading from the log


async def loaded_coordinator(manager: Any) -> tuple[GroupCoordinator, WireContext]:
    """A group coordinator over `manager`'s one __consumer_offsets partition, loaded, and a listener context."""
    config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
    groups = GroupCoordinator(manager, SimpleNamespace(), config)  # type: ignore[arg-type]
    groups.group("g")
    await loaded(groups)
    return groups, WireContext(groups.manager, "PLAINTEXT", groups=groups)


async def reload_events(groups: GroupCoordinator) -> list[tuple[str, str]]:
    """The consumer_group_* events (with their reasons) of the partition unloaded after a failed write and loaded
    again."""
    with structlog.testing.capture_logs() as logged:
        groups.runtime.unload(groups.runtime.loaded_shards()[0], "a consumer group write failed: test")
        groups.group("g")
        await loaded(groups)
    return [(e["event"], e.get("reason", "")) for e in logged if e["event"].startswith("consumer_group_")]


def test_a_changes_events_are_logged_only_once_its_records_are_acknowledged() -> None:
    """A join whose write is refused before its append (NOT_ENOUGH_REPLICAS), or appended by a leader that loses
    the partition (NOT_LEADER_OR_FOLLOWER: its records truncated), is answered an error and logs nothing."""

    async def scenario(write_error: ErrorCode, appended: bool) -> list[str]:
        _, ctx = await loaded_coordinator(leading_manager(write_error, appended))
        with structlog.testing.capture_logs() as logged:
            await answer(ctx, heartbeat(0, ()))
        return [e["event"] for e in logged if e["event"].startswith("consumer_group_")]

    kip_848 = ["consumer_group_member_joined", "consumer_group_target_assignment", "consumer_group_member_assignment"]
    assert asyncio.run(scenario(ErrorCode.NONE, appended=True)) == kip_848
    assert asyncio.run(scenario(ErrorCode.NOT_ENOUGH_REPLICAS, appended=False)) == []
    assert asyncio.run(scenario(ErrorCode.NOT_LEADER_OR_FOLLOWER, appended=True)) == []


def test_a_reload_tells_of_the_members_the_log_holds_and_those_it_no_longer_does() -> None:
    """The group's records never reach this fake's log: reloaded, the partition holds no member, and the member
    this broker told of is logged gone (`reloaded`), so no analysis takes it for an owner any more."""

    async def scenario() -> list[tuple[str, str]]:
        groups, ctx = await loaded_coordinator(leading_manager())
        await answer(ctx, heartbeat(0, ()))
        return await reload_events(groups)

    assert asyncio.run(scenario()) == [("consumer_group_member_left", "reloaded")]


def test_a_reload_of_a_log_that_saw_a_member_leave_tells_that_it_holds_nothing() -> None:
    """The join's and the leave's records are in this fake's log: the reload replays them, finds the group without
    the member it named, and logs it gone (`reloaded`), whichever broker told of it."""

    async def scenario() -> list[tuple[str, str]]:
        manager = leading_manager()
        groups, ctx = await loaded_coordinator(manager)
        joined = await answer(ctx, heartbeat(0, ()))
        await answer(ctx, heartbeat(-1))
        assert joined.error_code == ErrorCode.NONE and len(manager.written) == 2
        log_what_was_written(manager)
        groups._announced.clear()  # as on another broker: the log alone names the member
        return await reload_events(groups)

    assert asyncio.run(scenario()) == [("consumer_group_member_left", "reloaded")]


def log_what_was_written(manager: Any) -> None:
    """Gives the fake's partition a log of the batches it was asked to write."""
    batches = b"".join(manager.written)
    log = SimpleNamespace(
        log_start_offset=0, log_end_offset=1, read=lambda offset, *_, **__: batches if offset == 0 else b""
    )
    manager.replicas[TopicPartition(OFFSETS_TOPIC, 0)].log = log


def test_a_loaded_tail_past_the_high_watermark_is_answered_and_told_of_only_once_the_high_watermark_passes_it() -> None:
    """The join's records are in the log, above its HWM, when the partition is loaded again: a heartbeat that
    changes nothing waits for the tail, and the member's holdings are logged only once the tail is acknowledged.
    A tail that is not (the HWM never got there) is loaded again and answered as a failed write."""

    async def scenario(tail_error: ErrorCode) -> tuple[list[str], list[str], Any]:
        manager = leading_manager()
        groups, ctx = await loaded_coordinator(manager)
        joined = await answer(ctx, heartbeat(0, ()))
        log_what_was_written(manager)
        tail: asyncio.Future[ProduceResult] = asyncio.get_running_loop().create_future()
        manager.high_watermark_reached = lambda *_: tail
        with structlog.testing.capture_logs() as logged:
            groups.runtime.unload(groups.runtime.loaded_shards()[0], "test")
            groups.group("g")
            await loaded(groups)
            pending = asyncio.ensure_future(answer(ctx, heartbeat(joined.member_epoch, (0, 1))))
            for _ in range(10):
                await asyncio.sleep(0)
            assert not pending.done()
            before = [e["event"] for e in logged if e["event"].startswith("consumer_group_")]
            tail.set_result(ProduceResult(tail_error, 0))
            answered_after = await pending
        after = [e["event"] for e in logged if e["event"].startswith("consumer_group_")]
        return before, after, (answered_after.error_code, groups.group("g"))

    before, after, (error, loading) = asyncio.run(scenario(ErrorCode.NONE))
    assert before == [] and after == ["consumer_group_member_assignment"] and error == ErrorCode.NONE
    before, after, (error, loading) = asyncio.run(scenario(ErrorCode.REQUEST_TIMED_OUT))
    assert before == after == [] and error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert loading == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # unloaded, and reading the log again


def test_while_a_loaded_tail_is_uncommitted_classic_answers_wait_and_reads_are_load_in_progress() -> None:
    """Kafka's rule for every request on the partition: a classic JoinGroup's answer waits for the tail too, and
    the read-only APIs (OffsetFetch, DescribeGroups, ConsumerGroupDescribe) do not read the tail's state meanwhile."""

    async def scenario() -> tuple[bool, Any, Any, Any]:
        manager = leading_manager()
        groups, ctx = await loaded_coordinator(manager)
        tail: asyncio.Future[ProduceResult] = asyncio.get_running_loop().create_future()
        manager.high_watermark_reached = lambda *_: tail
        groups.runtime.unload(groups.runtime.loaded_shards()[0], "test")
        groups.group("g")
        for _ in range(100):  # the load of the fake's empty log
            await asyncio.sleep(0)
        reading = (groups.group("g"), groups.described_consumer_group("g"))
        pending = asyncio.ensure_future(answer(ctx, classic_join()))
        for _ in range(10):
            await asyncio.sleep(0)
        waited = not pending.done()
        tail.set_result(ProduceResult(ErrorCode.NONE, 0))
        return waited, reading, await pending, groups.group("g")

    waited, reading, joined, after = asyncio.run(scenario())
    assert waited and reading == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,) * 2
    assert joined.error_code == ErrorCode.MEMBER_ID_REQUIRED and not isinstance(after, ErrorCode)


def test_the_events_of_a_write_after_one_that_timed_out_are_left_to_the_reload() -> None:
    """Two joins in flight; the first one's write times out (it may be in the log all the same) and the partition
    is unloaded. The second one's write is then acknowledged, which commits the first too: its events would tell
    of a state built on one never told, so they are not logged; the reload tells of what the log holds."""

    async def scenario() -> tuple[list[str], Any]:
        manager = leading_manager()
        groups, ctx = await loaded_coordinator(manager)
        writes: list[asyncio.Future[ProduceResult]] = []

        def produce(*_: Any, **__: Any) -> asyncio.Future[ProduceResult]:
            writes.append(asyncio.get_running_loop().create_future())
            return writes[-1]

        manager.produce = produce
        with structlog.testing.capture_logs() as logged:
            first = asyncio.ensure_future(answer(ctx, heartbeat(0, ())))
            second = asyncio.ensure_future(answer(ctx, static_or_regex("m-2", None, None)))
            for _ in range(10):
                await asyncio.sleep(0)
            writes[0].set_result(ProduceResult(ErrorCode.REQUEST_TIMED_OUT, 0))
            writes[1].set_result(ProduceResult(ErrorCode.NONE, 1))
            await asyncio.gather(first, second)
        return [e["event"] for e in logged if e["event"].startswith("consumer_group_")], second.result()

    events, second = asyncio.run(scenario())
    assert events == [] and second.error_code == ErrorCode.NONE  # answered: its records are committed


def static_or_regex(member_id: str, instance: str | None, regex: str | None) -> Request:
    body = heartbeat_v1.ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        instance_id=instance,
        rebalance_timeout=datetime.timedelta(seconds=30),
        subscribed_topic_names=() if regex else ("t",),
        subscribed_topic_regex=regex,
        server_assignor="sticky" if member_id == "m-3" else None,
        topic_partitions=(),
    )
    return Request(ApiHeader(CONSUMER_GROUP_HEARTBEAT, 1, 1), "test", body)


async def resolved(groups: GroupCoordinator) -> Any:
    for _ in range(1000):  # the coordinator resolves a new regex in a later turn of the loop, after the heartbeat
        group = groups.consumer_group("g")
        if not isinstance(group, ErrorCode) and group is not None and group.resolved_regexes:
            return group
        await asyncio.sleep(0)
    raise AssertionError("the group's regex was never resolved")


def test_bad_heartbeats_get_kafkas_errors_through_the_listener() -> None:
    """A regex that does not compile, a static member's instance id reused while it is alive, an unknown assignor,
    a wrong member epoch; a valid regex is resolved after the heartbeat that brought it, as Kafka resolves it."""

    async def scenario() -> list[Any]:
        config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
        groups = GroupCoordinator(leading_manager(), SimpleNamespace(), config)  # type: ignore[arg-type]
        ctx = WireContext(groups.manager, "PLAINTEXT", groups=groups)
        groups.group("g")
        await loaded(groups)
        return [
            await answer(ctx, static_or_regex("m-1", None, "t[")),
            await answer(ctx, static_or_regex("m-1", "i", None)),
            await answer(ctx, static_or_regex("m-2", "i", None)),
            await answer(ctx, static_or_regex("m-3", None, None)),
            await answer(ctx, heartbeat(7, ())),
            await answer(ctx, static_or_regex("m-4", None, "^t$")),
            await resolved(groups),
        ]

    regex, joined, reused, assignor, epoch, matched, group = asyncio.run(scenario())
    assert regex.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION and "t[" in regex.error_message
    assert joined.error_code == ErrorCode.NONE
    assert reused.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert assignor.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert epoch.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    # Joined at the group's epoch with nothing yet; the resolution then matched topic t and bumped the epoch.
    assert (matched.error_code, matched.member_epoch, matched.assignment.topic_partitions) == (ErrorCode.NONE, 1, ())
    assert (group.group_epoch, group.resolved_regexes) == (2, {"^t$": frozenset({"t"})})


def test_a_regex_matches_only_the_topics_its_member_may_describe() -> None:
    """With an authorizer, the resolution a member's heartbeat starts matches only the topics its principal may
    DESCRIBE, as Kafka 4 filters them: alice may read the group but not see topic t."""
    read_group = AclBinding(
        ResourceType.GROUP, "g", PatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW
    )
    authorizer = ClientAuthorizer(AuthorizerSettings(enabled=True), lambda: Map({"id-1": read_group}))

    async def scenario() -> list[Any]:
        config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
        groups = GroupCoordinator(leading_manager(), SimpleNamespace(), config)  # type: ignore[arg-type]
        alice = Caller("User:alice", "127.0.0.1", "PLAINTEXT")
        ctx = WireContext(groups.manager, "PLAINTEXT", groups=groups, caller=alice, authorizer=authorizer)
        groups.group("g")
        await loaded(groups)
        return [await answer(ctx, static_or_regex("m-1", None, "^t$")), await resolved(groups)]

    joined, group = asyncio.run(scenario())
    assert joined.error_code == ErrorCode.NONE
    assert group.resolved_regexes == {"^t$": frozenset()} and group.subscription_metadata == {}


def delete_groups() -> Request:
    return Request(ApiHeader(DELETE_GROUPS, 2, 1), "test", delete_v2.DeleteGroupsRequest(groups_names=("g",)))


def written_keys(written: list[bytes]) -> list[tuple[int, bool]]:
    """(record type, is a tombstone) of every record written to __consumer_offsets, in order."""
    return [(r.key[1], r.value is None) for batch in written for b in iter_batches(batch) for r in b.records()]


def coordinator() -> tuple[GroupCoordinator, WireContext, Any]:
    config = CoordinatorConfig(GroupConfig(), num_partitions=1, replication_factor=1, commit_timeout_ms=5000)
    manager = leading_manager()
    groups = GroupCoordinator(manager, SimpleNamespace(), config)  # type: ignore[arg-type]
    return groups, WireContext(groups.manager, "PLAINTEXT", groups=groups), manager


def test_an_empty_consumer_group_is_kept_until_deleted_with_its_records_tombstones() -> None:
    """As Kafka: the group its last member left stays, Empty, with its epoch; DeleteGroups refuses it while it has
    members and then deletes it, its ConsumerGroupMetadata, partition metadata and target epoch tombstoned."""

    async def scenario() -> tuple[Any, ...]:
        groups, ctx, manager = coordinator()
        groups.group("g")
        await loaded(groups)
        await answer(ctx, heartbeat(0, ()))
        refused = await answer(ctx, delete_groups())
        left = await answer(ctx, heartbeat(-1))
        empty = groups.consumer_group("g")
        before = len(manager.written)
        deleted = await answer(ctx, delete_groups())
        written = manager.written[before:]
        again = await answer(ctx, delete_groups())
        return refused, left, empty, deleted, groups.consumer_group("g"), written, again

    refused, left, empty, deleted, after, written, again = asyncio.run(scenario())
    assert again.results[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert refused.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    assert left.error_code == ErrorCode.NONE
    assert empty is not None and not empty.members and empty.state.value == "Empty" and empty.group_epoch == 2
    assert deleted.results[0].error_code == ErrorCode.NONE and after is None
    assert written_keys(written) == [(6, True), (4, True), (3, True)]


def test_a_classic_join_converts_an_empty_consumer_group_to_a_classic_group() -> None:
    async def scenario() -> tuple[Any, ...]:
        groups, ctx, manager = coordinator()
        groups.group("g")
        await loaded(groups)
        await answer(ctx, heartbeat(0, ()))
        await answer(ctx, heartbeat(-1))
        before = len(manager.written)
        required = await answer(ctx, classic_join())
        return required, groups.consumer_group("g"), manager.written[before:]

    required, consumer, written = asyncio.run(scenario())
    assert required.error_code == ErrorCode.MEMBER_ID_REQUIRED and consumer is None
    assert written_keys(written)[:3] == [(6, True), (4, True), (3, True)]


def test_an_empty_consumer_group_without_offsets_is_deleted_by_the_next_expiry_check() -> None:
    async def scenario() -> tuple[Any, ...]:
        groups, ctx, manager = coordinator()
        groups.group("g")
        await loaded(groups)
        await answer(ctx, heartbeat(0, ()))
        (shard,) = groups.runtime.loaded_shards()
        groups._expire_shard_offsets(shard, Clock(0, 0))
        kept = groups.consumer_group("g")
        await answer(ctx, heartbeat(-1))
        before = len(manager.written)
        groups._expire_shard_offsets(shard, Clock(0, 0))
        for _ in range(100):  # the write's completion takes a few turns of the loop
            await asyncio.sleep(0)
        return kept, groups.consumer_group("g"), groups.group("g"), manager.written[before:]

    kept, consumer, holder, written = asyncio.run(scenario())
    assert kept is not None and kept.members  # a group with members: nothing expires
    assert consumer is None and holder.state.value == "Dead"
    assert written_keys(written) == [(6, True), (4, True), (3, True)]

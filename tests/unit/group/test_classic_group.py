"""The classic group core, driven deterministically: joins, rebalances, syncs, heartbeats, session timeouts,
static members, generation fencing of commits, and loading from __consumer_offsets records."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from minikafka.broker.group.effects import (
    Answer,
    Append,
    CommitResult,
    GroupStep,
    HeartbeatResult,
    JoinResult,
    LeaveResult,
    SyncResult,
)
from minikafka.broker.group.loader import load_groups
from minikafka.broker.group.membership import (
    JoinRequest,
    MemberIdentity,
    SyncRequest,
    expire,
    heartbeat,
    join_group,
    leave_group,
    sync_group,
)
from minikafka.broker.group.offsets import CommitEntry, CommitRequest, append_done, commit_offsets, delete_group
from minikafka.broker.group.records import GroupMetadataValue, decode, encode_key, encode_value
from minikafka.broker.group.state import Group, GroupConfig, GroupState, Protocol, TopicPartitionKey
from minikafka.common.errors import ErrorCode

CONFIG = GroupConfig(initial_rebalance_delay_ms=0)
SESSION_MS = 10000
COMMIT_VERSION = 8  # OffsetCommit's version


class Driver:
    """Feeds requests to the core as the shell does: stores writes, completes appends, collects answers."""

    def __init__(self, config: GroupConfig = CONFIG) -> None:
        self.group = Group("g")
        self.config = config
        self.now = 0
        self.ids = itertools.count(1)
        self.answers: dict[int, object] = {}
        self.appends: list[Append] = []
        self.stored: list = []

    def apply(self, step: GroupStep, complete_appends: bool = True) -> None:
        self.group = step.group
        for effect in step.effects:
            if isinstance(effect, Answer):
                self.answers[effect.request_id] = effect.result
            elif isinstance(effect, Append):
                self.appends.append(effect)
        while complete_appends and self.appends:
            append = self.appends.pop(0)
            self.stored.extend(append.records)
            self.apply(append_done(self.group, append.request_id, ErrorCode.NONE, self.config, self.now))

    def join(
        self,
        member_id: str = "",
        instance: str | None = None,
        protocols: tuple[str, ...] = ("range",),
        complete_appends: bool = True,
        version: int = 9,
        metadata: bytes | None = None,
    ) -> int:
        """JoinGroup at `version`; each protocol's metadata is its name unless `metadata` is given."""
        rid = next(self.ids)
        request = JoinRequest(
            rid,
            member_id,
            instance,
            "client",
            "/127.0.0.1",
            SESSION_MS,
            SESSION_MS,
            "consumer",
            tuple(Protocol(p, p.encode() if metadata is None else metadata) for p in protocols),
            require_known_member_id=version >= 4,
            skip_assignment_supported=version >= 9,
        )
        self.apply(join_group(self.group, request, self.config, self.now, f"m{rid}"), complete_appends)
        return rid

    def sync(self, member_id: str, generation: int, assignments: tuple[tuple[str, bytes], ...] = ()) -> int:
        rid = next(self.ids)
        self.apply(
            sync_group(self.group, SyncRequest(rid, member_id, None, generation, None, None, assignments), self.now)
        )
        return rid

    def heartbeat(self, member_id: str, generation: int, instance: str | None = None) -> ErrorCode:
        rid = next(self.ids)
        self.apply(heartbeat(self.group, rid, MemberIdentity(member_id, instance, generation), self.now))
        result = self.answers[rid]
        assert isinstance(result, HeartbeatResult)
        return result.error

    def commit(
        self, member_id: str, generation: int, offset: int, partition: int = 0, instance: str | None = None
    ) -> CommitResult:
        rid = next(self.ids)
        entry = CommitEntry("t", partition, offset, -1, "")
        request = CommitRequest(rid, member_id, instance, generation, (entry,), COMMIT_VERSION, self.now)
        self.apply(commit_offsets(self.group, request, self.config))
        result = self.answers[rid]
        assert isinstance(result, CommitResult)
        return result

    def tick(self, advance_ms: int) -> None:
        self.now += advance_ms
        self.apply(expire(self.group, self.now, self.config))

    def result(self, rid: int) -> object:
        return self.answers.get(rid)


def _joined(driver: Driver, rid: int) -> JoinResult:
    result = driver.result(rid)
    assert isinstance(result, JoinResult), result
    return result


def form_two_member_group(driver: Driver) -> tuple[str, str]:
    first = _joined(driver, driver.join())
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    a = first.member_id
    join_a = driver.join(a)
    # A single member completes the rebalance at once (every known member rejoined).
    assert _joined(driver, join_a).generation_id == 1
    b = _joined(driver, driver.join()).member_id
    join_b = driver.join(b)
    assert driver.result(join_b) is None  # held: a rebalance waits for member a to rejoin
    assert driver.heartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    join_a2 = driver.join(a)
    result_a, result_b = _joined(driver, join_a2), _joined(driver, join_b)
    assert result_a.generation_id == result_b.generation_id == 2
    assert result_a.leader == a and {m.member_id for m in result_a.members} == {a, b} and result_b.members == ()
    sync_b = driver.sync(b, 2)
    assert driver.result(sync_b) is None  # held until the leader's assignment is stored
    sync_a = driver.sync(a, 2, ((a, b"pa"), (b, b"pb")))
    assert driver.result(sync_a) == SyncResult(ErrorCode.NONE, "consumer", "range", b"pa")
    assert driver.result(sync_b) == SyncResult(ErrorCode.NONE, "consumer", "range", b"pb")
    assert driver.group.state == GroupState.STABLE
    return a, b


def test_two_members_rebalance_and_each_gets_its_assignment() -> None:
    driver = Driver()
    a, b = form_two_member_group(driver)
    assert driver.heartbeat(a, 2) == ErrorCode.NONE
    assert driver.heartbeat(b, 1) == ErrorCode.ILLEGAL_GENERATION
    assert driver.heartbeat("stranger", 2) == ErrorCode.UNKNOWN_MEMBER_ID


def test_commits_are_visible_only_once_stored_and_fenced_by_generation() -> None:
    driver = Driver()
    a, b = form_two_member_group(driver)
    rid = next(driver.ids)
    request = CommitRequest(rid, a, None, 2, (CommitEntry("t", 0, 7, 3, "m"),), COMMIT_VERSION)
    step = commit_offsets(driver.group, request, CONFIG)
    driver.apply(step, complete_appends=False)
    assert driver.result(rid) is None and driver.group.offsets == {}
    driver.apply(GroupStep(driver.group), complete_appends=True)
    assert driver.result(rid) == CommitResult(ErrorCode.NONE, ((TopicPartitionKey("t", 0), ErrorCode.NONE),))
    assert driver.group.offsets[TopicPartitionKey("t", 0)].offset == 7
    assert driver.commit(a, 1, 9).error == ErrorCode.ILLEGAL_GENERATION
    assert driver.commit("zombie", 2, 9).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert driver.group.offsets[TopicPartitionKey("t", 0)].offset == 7


def test_a_failed_store_is_not_a_commit() -> None:
    driver = Driver()
    a, _ = form_two_member_group(driver)
    rid = next(driver.ids)
    request = CommitRequest(rid, a, None, 2, (CommitEntry("t", 0, 7, 3, ""),), COMMIT_VERSION)
    step = commit_offsets(driver.group, request, CONFIG)
    driver.apply(step, complete_appends=False)
    append = driver.appends.pop()
    driver.apply(append_done(driver.group, append.request_id, ErrorCode.NOT_LEADER_OR_FOLLOWER, CONFIG, 0))
    assert driver.result(rid) == CommitResult(ErrorCode.NONE, ((TopicPartitionKey("t", 0), ErrorCode.NOT_COORDINATOR),))
    assert driver.group.offsets == {}


def test_session_timeout_removes_the_silent_member_and_fences_its_commits() -> None:
    driver = Driver()
    a, b = form_two_member_group(driver)
    for _ in range(4):
        driver.tick(SESSION_MS // 4)
        assert driver.heartbeat(a, driver.group.generation) in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
    assert b not in driver.group.members
    assert driver.group.state == GroupState.PREPARING_REBALANCE
    rejoin = driver.join(a)
    assert _joined(driver, rejoin).generation_id == 3 and _joined(driver, rejoin).members[0].member_id == a
    assert driver.commit(b, 2, 100).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert driver.commit(a, 2, 100).error == ErrorCode.ILLEGAL_GENERATION


def test_a_rebalance_completes_without_members_that_do_not_rejoin_in_time() -> None:
    driver = Driver()
    a, b = form_two_member_group(driver)
    c = _joined(driver, driver.join()).member_id
    join_c = driver.join(c)
    join_a = driver.join(a)
    assert driver.result(join_c) is None
    driver.now += SESSION_MS  # the rebalance timeout; b kept heartbeating but never rejoined
    driver.apply(heartbeat(driver.group, next(driver.ids), MemberIdentity(b, None, 2), driver.now))
    driver.tick(0)
    assert _joined(driver, join_c).generation_id == 3 and _joined(driver, join_a).generation_id == 3
    assert set(driver.group.members) == {a, c}


def test_leave_triggers_a_rebalance_and_an_empty_group_keeps_offsets() -> None:
    driver = Driver()
    a, b = form_two_member_group(driver)
    driver.commit(a, 2, 5)
    rid = next(driver.ids)
    driver.apply(leave_group(driver.group, rid, (MemberIdentity(a, None), MemberIdentity(b, None)), CONFIG, 0))
    result = driver.result(rid)
    assert isinstance(result, LeaveResult) and all(m.error == ErrorCode.NONE for m in result.members)
    assert driver.group.state == GroupState.EMPTY and driver.group.generation == 3
    assert driver.commit("", -1, 6).error == ErrorCode.NONE  # assign()-style commit to an empty group
    assert driver.group.offsets[TopicPartitionKey("t", 0)].offset == 6


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    driver = Driver(GroupConfig(initial_rebalance_delay_ms=3000))
    a = _joined(driver, driver.join()).member_id
    join_a = driver.join(a)
    driver.tick(1000)
    b = _joined(driver, driver.join()).member_id
    join_b = driver.join(b)
    assert driver.result(join_a) is None and driver.result(join_b) is None
    driver.tick(2000)  # the delay passed, but a member came meanwhile: extended once more
    assert driver.result(join_a) is None
    driver.tick(3000)
    assert _joined(driver, join_a).generation_id == 1 and _joined(driver, join_b).generation_id == 1


def test_static_member_rejoining_gets_its_assignment_without_a_rebalance() -> None:
    driver = Driver()
    leader = _joined(driver, driver.join(instance="i-1")).member_id
    follower_join = driver.join(instance="i-2")  # static members get their id at once: no MEMBER_ID_REQUIRED
    join_leader = driver.join(leader, instance="i-1")
    follower = _joined(driver, follower_join).member_id
    generation = _joined(driver, join_leader).generation_id
    driver.sync(leader, generation, ((leader, b"x"), (follower, b"y")))
    restarted = _joined(driver, driver.join(instance="i-2"))
    assert restarted.error == ErrorCode.NONE and restarted.generation_id == generation
    assert restarted.member_id != follower and driver.group.state == GroupState.STABLE
    assert driver.result(driver.sync(restarted.member_id, generation)) == SyncResult(
        ErrorCode.NONE, "consumer", "range", b"y"
    )
    assert driver.heartbeat(follower, generation) == ErrorCode.UNKNOWN_MEMBER_ID
    rid = next(driver.ids)
    driver.apply(heartbeat(driver.group, rid, MemberIdentity(follower, "i-2", generation), driver.now))
    assert driver.result(rid) == HeartbeatResult(ErrorCode.FENCED_INSTANCE_ID)


def test_delete_needs_an_empty_group_and_writes_tombstones() -> None:
    driver = Driver()
    rid = next(driver.ids)
    driver.apply(delete_group(driver.group, rid))
    assert driver.result(rid).error == ErrorCode.GROUP_ID_NOT_FOUND  # type: ignore[union-attr]
    a, b = form_two_member_group(driver)
    driver.commit(a, 2, 5)
    rid = next(driver.ids)
    driver.apply(delete_group(driver.group, rid))
    assert driver.result(rid).error == ErrorCode.NON_EMPTY_GROUP  # type: ignore[union-attr]
    driver.apply(
        leave_group(driver.group, next(driver.ids), (MemberIdentity(a, None), MemberIdentity(b, None)), CONFIG, 0)
    )
    rid = next(driver.ids)
    driver.apply(delete_group(driver.group, rid))
    assert driver.result(rid).error == ErrorCode.NONE  # type: ignore[union-attr]
    assert load_groups(driver.stored, 0) == {}


def test_records_round_trip_and_loading_restores_members_and_offsets() -> None:
    driver = Driver()
    a, b = form_two_member_group(driver)
    driver.commit(a, 2, 5)
    driver.commit(b, 2, 8, partition=1)
    driver.commit(a, 2, 6)
    records = [decode(encode_key(r.key), encode_value(r.value)) for r in driver.stored]
    assert records == driver.stored
    loaded = load_groups(records, 50)["g"]
    assert loaded.state == GroupState.STABLE and loaded.generation == 2 and loaded.leader_id == a
    assert {m: loaded.members[m].assignment for m in loaded.members} == {a: b"pa", b: b"pb"}
    assert {k.partition: v.offset for k, v in loaded.offsets.items()} == {0: 6, 1: 8}


def form_static_group(driver: Driver) -> tuple[str, str, int]:
    """A stable group of two static members: the leader (instance i-1) and a follower (i-2), both synced."""
    leader = _joined(driver, driver.join(instance="i-1")).member_id
    follower_join = driver.join(instance="i-2")
    generation = _joined(driver, driver.join(leader, instance="i-1")).generation_id
    follower = _joined(driver, follower_join).member_id
    driver.sync(follower, generation)
    driver.sync(leader, generation, ((leader, b"x"), (follower, b"y")))
    assert driver.group.state == GroupState.STABLE
    return leader, follower, generation


def test_a_static_member_replaced_in_a_stable_group_is_answered_once_its_new_id_is_stored() -> None:
    driver = Driver()
    leader, follower, generation = form_static_group(driver)
    restart = driver.join(instance="i-2", complete_appends=False)
    new_id = f"m{restart}"
    assert driver.result(restart) is None  # held until the group's metadata record names the new member id
    [append] = driver.appends
    [record] = append.records
    assert isinstance(record.value, GroupMetadataValue) and record.value.generation == generation
    assert {m.member_id: m.assignment for m in record.value.members} == {leader: b"x", new_id: b"y"}
    driver.apply(GroupStep(driver.group))
    joined = _joined(driver, restart)
    assert (joined.error, joined.member_id, joined.generation_id) == (ErrorCode.NONE, new_id, generation)
    assert driver.group.state == GroupState.STABLE
    # A coordinator failover: the new coordinator knows the instance by its new member id.
    driver.group = load_groups(driver.stored, driver.now)["g"]
    assert driver.heartbeat(new_id, generation, instance="i-2") == ErrorCode.NONE
    assert driver.commit(new_id, generation, 5, instance="i-2").error == ErrorCode.NONE
    assert driver.heartbeat(follower, generation, instance="i-2") == ErrorCode.FENCED_INSTANCE_ID


def test_a_static_replacement_that_cannot_be_stored_is_undone() -> None:
    driver = Driver()
    leader, follower, generation = form_static_group(driver)
    restart = driver.join(instance="i-2", complete_appends=False)
    append = driver.appends.pop()
    driver.apply(append_done(driver.group, append.request_id, ErrorCode.NOT_LEADER_OR_FOLLOWER, CONFIG, driver.now))
    joined = _joined(driver, restart)
    assert (joined.error, joined.member_id) == (ErrorCode.NOT_COORDINATOR, "")
    assert set(driver.group.members) == {leader, follower} and driver.group.state == GroupState.STABLE
    assert driver.heartbeat(follower, generation, instance="i-2") == ErrorCode.NONE
    assert driver.group.members[follower].assignment == b"y"


def test_a_replaced_static_member_held_in_a_join_is_fenced() -> None:
    driver = Driver()
    leader, follower, generation = form_static_group(driver)
    held = driver.join(follower, instance="i-2", protocols=("range", "roundrobin"))  # new protocols: a rebalance
    assert driver.result(held) is None and driver.group.state == GroupState.PREPARING_REBALANCE
    restart = driver.join(instance="i-2")
    fenced = _joined(driver, held)
    assert (fenced.error, fenced.member_id) == (ErrorCode.FENCED_INSTANCE_ID, follower)
    assert driver.result(restart) is None  # joins the rebalance, which still waits for the leader
    driver.join(leader, instance="i-1")
    assert _joined(driver, restart).generation_id == generation + 1


def test_a_replaced_static_member_held_in_a_sync_is_fenced() -> None:
    driver = Driver()
    leader = _joined(driver, driver.join(instance="i-1")).member_id
    follower_join = driver.join(instance="i-2")
    generation = _joined(driver, driver.join(leader, instance="i-1")).generation_id
    follower = _joined(driver, follower_join).member_id
    held = driver.sync(follower, generation)
    assert driver.result(held) is None and driver.group.state == GroupState.COMPLETING_REBALANCE
    driver.join(instance="i-2")
    assert driver.result(held) == SyncResult(ErrorCode.FENCED_INSTANCE_ID)


def test_a_static_member_that_misses_a_rebalance_stays_in_the_group() -> None:
    driver = Driver()
    leader, follower, generation = form_static_group(driver)
    newcomer = _joined(driver, driver.join()).member_id
    join_newcomer = driver.join(newcomer)
    join_leader = driver.join(leader, instance="i-1")
    driver.now += SESSION_MS  # the rebalance timeout; the follower kept heartbeating but never rejoined
    assert driver.heartbeat(follower, generation, instance="i-2") == ErrorCode.REBALANCE_IN_PROGRESS
    driver.tick(0)
    result = _joined(driver, join_leader)
    assert result.generation_id == generation + 1 and _joined(driver, join_newcomer).generation_id == generation + 1
    assert set(driver.group.members) == {leader, follower, newcomer}
    assert {m.member_id for m in result.members} == {leader, follower, newcomer}  # the leader assigns it too


def test_a_rebalance_nobody_rejoined_waits_for_the_static_members() -> None:
    driver = Driver()
    leader, follower, generation = form_static_group(driver)
    newcomer = _joined(driver, driver.join()).member_id
    driver.join(newcomer)
    driver.apply(leave_group(driver.group, next(driver.ids), (MemberIdentity(newcomer, None),), CONFIG, driver.now))
    assert driver.group.state == GroupState.PREPARING_REBALANCE
    driver.now += SESSION_MS // 2
    driver.heartbeat(leader, generation, instance="i-1")
    driver.heartbeat(follower, generation, instance="i-2")
    driver.tick(SESSION_MS // 2)  # the rebalance timeout passed with no member rejoined: it waits once more
    assert driver.group.state == GroupState.PREPARING_REBALANCE and driver.group.generation == generation
    assert set(driver.group.members) == {leader, follower}
    join_leader = driver.join(leader, instance="i-1")
    join_follower = driver.join(follower, instance="i-2")
    assert _joined(driver, join_leader).generation_id == _joined(driver, join_follower).generation_id == generation + 1


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    driver = Driver()
    a = _joined(driver, driver.join()).member_id
    join_a = driver.join(a)
    assert _joined(driver, join_a).generation_id == 1
    b = _joined(driver, driver.join()).member_id
    join_b = driver.join(b)
    driver.join(a)
    assert _joined(driver, join_b).generation_id == 2
    driver.sync(a, 2, ((a, b"pa"), (b, b"pb")))  # the leader syncs; b heartbeats but never sends its SyncGroup
    assert driver.group.state == GroupState.STABLE
    driver.tick(SESSION_MS // 2)
    assert driver.heartbeat(a, 2) == driver.heartbeat(b, 2) == ErrorCode.NONE
    driver.tick(SESSION_MS // 2)  # the rebalance timeout since the generation started
    assert b not in driver.group.members and driver.group.state == GroupState.PREPARING_REBALANCE
    assert driver.heartbeat(a, 2) == ErrorCode.REBALANCE_IN_PROGRESS


def test_a_generation_nobody_syncs_does_not_stay_completing_forever() -> None:
    driver = Driver()
    a, b = (_joined(driver, driver.join()).member_id for _ in range(2))
    join_a, join_b = driver.join(a), driver.join(b)
    generation = _joined(driver, join_b).generation_id
    assert _joined(driver, join_a).generation_id == generation
    assert driver.group.state == GroupState.COMPLETING_REBALANCE
    driver.tick(SESSION_MS // 2)
    assert driver.heartbeat(a, generation) == driver.heartbeat(b, generation) == ErrorCode.NONE
    driver.tick(SESSION_MS // 2)
    assert driver.group.members == {} and driver.group.state == GroupState.EMPTY
    assert driver.group.generation == generation + 1


def test_a_commit_with_a_generation_to_a_group_that_does_not_exist() -> None:
    entry = (CommitEntry("t", 0, 5, -1, ""),)
    for version, error in ((8, ErrorCode.ILLEGAL_GENERATION), (9, ErrorCode.GROUP_ID_NOT_FOUND)):
        step = commit_offsets(Group("g"), CommitRequest(1, "m-1", None, 3, entry, version), CONFIG)
        assert step.effects == (Answer(1, CommitResult(error)),) and step.group.pending_writes == {}
    # Without a generation, the commit creates a group with no members (a consumer using assign(), an admin).
    step = commit_offsets(Group("g"), CommitRequest(1, "", None, -1, entry, 9), CONFIG)
    assert [type(e) for e in step.effects] == [Append]


def test_a_member_id_never_used_expires_without_a_rebalance() -> None:
    driver = Driver()
    a, b = form_two_member_group(driver)
    pending = _joined(driver, driver.join())
    assert pending.error == ErrorCode.MEMBER_ID_REQUIRED  # and the consumer never comes back with its id
    driver.tick(SESSION_MS // 2)
    assert driver.heartbeat(a, 2) == driver.heartbeat(b, 2) == ErrorCode.NONE
    driver.tick(SESSION_MS // 2)
    assert driver.group.pending_members == {}
    assert driver.group.state == GroupState.STABLE and driver.group.generation == 2


def test_a_static_leader_restarting_in_a_stable_group_keeps_leading_without_a_rebalance() -> None:
    driver = Driver()
    leader, follower, generation = form_static_group(driver)
    restart = driver.join(instance="i-1")
    new_id = f"m{restart}"
    joined = _joined(driver, restart)
    assert driver.group.state == GroupState.STABLE and driver.group.leader_id == new_id
    # JoinGroup v9+: it learns it leads, with the members, and that the assignment stands (KIP-814).
    assert (joined.leader, joined.skip_assignment, joined.generation_id) == (new_id, True, generation)
    assert {m.member_id for m in joined.members} == {new_id, follower}
    assert driver.result(driver.sync(new_id, generation)) == SyncResult(ErrorCode.NONE, "consumer", "range", b"x")
    assert driver.heartbeat(follower, generation) == ErrorCode.NONE


def test_before_join_group_v9_a_restarted_static_leader_is_told_the_old_leader() -> None:
    driver = Driver()
    leader, follower, generation = form_static_group(driver)
    restart = driver.join(instance="i-1", version=8)
    joined = _joined(driver, restart)
    # It cannot be told to keep the assignment, so it is not told it leads: it syncs as a follower.
    assert (joined.member_id, joined.leader) == (f"m{restart}", leader)
    assert joined.members == () and not joined.skip_assignment
    assert driver.group.state == GroupState.STABLE and driver.group.leader_id == f"m{restart}"


def test_a_static_member_restarting_with_new_subscription_bytes_keeps_the_selected_protocol() -> None:
    driver = Driver()
    leader, follower, generation = form_static_group(driver)
    restart = driver.join(instance="i-2", metadata=b"new subscription")
    assert _joined(driver, restart).generation_id == generation and driver.group.state == GroupState.STABLE
    assert driver.group.members[f"m{restart}"].metadata_for("range") == b"new subscription"


@dataclass(frozen=True)
class HeldSyncs:
    """Generation 2 of members a (the leader) and b, both held in SyncGroup while the assignment's write is open."""

    a: str
    b: str
    sync_a: int
    sync_b: int
    append: Append


def syncs_held_on_the_assignment_write(driver: Driver) -> HeldSyncs:
    a = _joined(driver, driver.join()).member_id
    driver.join(a)
    b = _joined(driver, driver.join()).member_id
    join_b = driver.join(b)
    driver.join(a)
    assert _joined(driver, join_b).generation_id == 2
    sync_b = driver.sync(b, 2)
    rid = next(driver.ids)
    request = SyncRequest(rid, a, None, 2, None, None, ((a, b"pa"), (b, b"pb")))
    driver.apply(sync_group(driver.group, request, driver.now), complete_appends=False)
    return HeldSyncs(a, b, rid, sync_b, driver.appends.pop())


def test_a_group_metadata_write_too_large_fails_the_held_syncs_with_unknown_server_error() -> None:
    driver = Driver()
    held = syncs_held_on_the_assignment_write(driver)
    driver.apply(append_done(driver.group, held.append.request_id, ErrorCode.MESSAGE_TOO_LARGE, CONFIG, driver.now))
    # Kafka's mapping for group metadata writes (a commit's is INVALID_COMMIT_OFFSET_SIZE).
    assert driver.result(held.sync_a) == driver.result(held.sync_b) == SyncResult(ErrorCode.UNKNOWN_SERVER_ERROR)
    assert driver.group.state == GroupState.PREPARING_REBALANCE


def test_a_replacement_undone_restores_a_member_holding_nothing() -> None:
    driver = Driver()
    leader, follower, generation = form_static_group(driver)
    first = driver.join(instance="i-2", complete_appends=False)
    second = driver.join(instance="i-2", complete_appends=False)
    assert _joined(driver, first).error == ErrorCode.FENCED_INSTANCE_ID
    first_write, second_write = driver.appends
    driver.appends.clear()
    driver.apply(append_done(driver.group, second_write.request_id, ErrorCode.REQUEST_TIMED_OUT, CONFIG, driver.now))
    assert _joined(driver, second).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    restored = driver.group.members[f"m{first}"]
    assert restored.join_request is None and restored.sync_request is None  # its join was answered already
    driver.apply(append_done(driver.group, first_write.request_id, ErrorCode.NONE, CONFIG, driver.now))
    assert _joined(driver, first).error == ErrorCode.FENCED_INSTANCE_ID  # answered once, not again


def test_a_sync_held_while_the_assignment_is_stored_starts_the_session_over_at_its_answer() -> None:
    """The leader's assignment took longer than a session timeout to store (a write waiting for its ISR to shrink).
    The members held in SyncGroup are answered then, and their clients count their sessions from that answer, as
    Kafka's coordinator restarts them when it propagates the assignment. Counted from the SyncGroup's arrival, the
    follower was removed 4.6 s after its answer while its client still read as the partition's owner."""
    driver = Driver()
    held = syncs_held_on_the_assignment_write(driver)
    driver.tick(SESSION_MS + 1000)  # held in their syncs: neither expires
    assert set(driver.group.members) == {held.a, held.b}
    driver.apply(append_done(driver.group, held.append.request_id, ErrorCode.NONE, CONFIG, driver.now))
    assert driver.result(held.sync_b) == SyncResult(ErrorCode.NONE, "consumer", "range", b"pb")
    driver.tick(SESSION_MS - 1)
    assert set(driver.group.members) == {held.a, held.b} and driver.group.state == GroupState.STABLE
    driver.tick(1)
    assert not driver.group.members  # neither heartbeated since its answer

"""Scripted fault stories on the simulated cluster: each one a sequence of steps (hold a request, crash, wipe, stop
cleanly, power loss) that leads one protocol guard to the case it exists for, run with the guard on and off.

The guard is switched through its real config key, or, where the protection is code rather than a setting, by
planting the bug it prevents (`planted_bugs.py`). With it on, the invariants hold; with it off the story ends in
lost acknowledged writes (or the other harm its check names), so the check is shown able to fail. `STORIES` holds
them all: those here, and the ports of the `scenario` library's in `isolation_stories.py`, `quorum_stories.py`,
`stray_partition_stories.py`, `transaction_stories.py` and `authorization_stories.py`.
"""

from __future__ import annotations

from typing import Any

from minikafka.deploy.scenario.library import (
    controller_disk_loss,
    in_flight_alter_partition,
    kip_903,
    last_replica_standing,
    unclean_election,
)
from minikafka.sim.authorization_stories import STOLEN_PRODUCER_ID
from minikafka.sim.cluster import BROKER_IDS, CONTROLLER_IDS
from minikafka.sim.controller_quorum import wipe_and_format
from minikafka.sim.isolation_stories import PARTITIONED_BROKER, ZOMBIE_LEADER
from minikafka.sim.quorum_stories import DISRUPTIVE_CONTROLLER
from minikafka.sim.story_steps import (
    STEP_TIMEOUT_S,
    Story,
    Switch,
    broker,
    crash,
    events,
    guard_switch,
    image,
    isr_is,
    leads,
    led_with,
    local_log_end,
    observe,
    partition,
    produce,
    raft_leader,
    reassign,
    registration,
    release_held_alter_partitions,
    release_stale_alter_partition,
    scenario_story,
    send_writes,
    start,
    stop,
    unfenced_anew,
    wait,
)
from minikafka.sim.stray_partition_stories import STRAY_PARTITIONS
from minikafka.sim.transaction_stories import DELAYED_END_TXN, HANGING_TRANSACTION
from minikafka.sim.world import TOPIC, TopicSpec, World
from minikafka.storage.meta_properties import read_meta_properties

# ---- KIP-903: a stale broker epoch in AlterPartition ----

A, B = 1, 2


async def _kip_903(w: World) -> None:
    """A leads alone; its AlterPartition adding B is held while B is wiped and registers again; then it arrives."""
    await wait(w, "B joins the ISR of A", lambda: isr_is(w, {A, B}))
    w.network.partition([B], [n for n in w.processes if n != B])
    await wait(w, "B cut off from every node: fenced, it leaves the ISR", lambda: isr_is(w, {A}))
    observe(w, "acknowledged_alone", await produce(w, 200, "a"))
    broker(w, A).manager.alter_partition.holding = True
    w.network.heal()
    await wait(
        w, "B catches up; A's AlterPartition adding B is held", lambda: bool(broker(w, A).manager.alter_partition.held)
    )
    old = registration(w, B)
    assert old is not None
    await crash(w, B, wipe_disk=True)
    w.network.partition([B], [A])  # B may not re-fetch: only A's stale proposal would put it in the ISR
    start(w, B)

    def registered_again() -> bool:
        now = registration(w, B)
        return now is not None and now.broker_epoch > old.broker_epoch and not now.fenced

    await wait(w, "B registers again with a new broker epoch, unfenced", registered_again)
    await release_stale_alter_partition(w, A, "A")
    registered = partition(w)
    assert registered is not None
    observe(w, "isr_after_stale_request", sorted(registered.isr))
    rejected = [e for e in events(w, "alter_partition_rejected") if e.get("broker_id") == A]
    observe(w, "rejected", [e["error"] for e in rejected])
    await crash(w, A)
    w.network.heal()
    await wait(w, "A fails; the controller fences it", lambda: bool((r := registration(w, A)) and r.fenced))
    await w.run_for(3.0)
    during = partition(w)
    assert during is not None
    observe(w, "while_a_down", {"leader": during.leader, "isr": sorted(during.isr), "elr": sorted(during.elr)})
    start(w, A)
    await wait(w, "A returns; the partition has a leader and A is in the ISR", lambda: led_with(w, A))
    await wait(w, "both replicas in the ISR", lambda: isr_is(w, {A, B}))


KIP_903 = Story(
    "kip-903",
    kip_903.TITLE,
    Switch(kip_903.GUARD.key, kip_903.GUARD.on, kip_903.GUARD.off),
    _kip_903,
    TopicSpec(1, ((A, B),), {"min.insync.replicas": "1"}),
    settings={k: v for k, v in kip_903.TOPOLOGY.settings.items() if k != "replica.fetch.max.bytes"},
    watched=("alter_partition_accepted", "alter_partition_rejected"),
)


# ---- KIP-966: the last replica standing ----

LEADER, LAST, FIRST = 1, 2, 3


async def _last_replica_standing(w: World) -> None:
    """The followers stop cleanly one after the other; the leader, alone in the ISR, loses power; all return."""
    await wait(w, "every replica joins the ISR", lambda: isr_is(w, {LEADER, LAST, FIRST}))
    acked = await produce(w, 50, "full")
    await stop(w, FIRST)
    await wait(w, "ISR [1, 2] once broker 3 stopped", lambda: isr_is(w, {LEADER, LAST}))
    acked += await produce(w, 50, "two")
    await stop(w, LAST)
    await wait(w, "the leader alone in the ISR", lambda: isr_is(w, {LEADER}) and _leader_isr_is(w, LEADER, {LEADER}))
    during = partition(w)
    assert during is not None
    observe(w, "elr_with_leader_alone", sorted(during.elr))
    observe(w, "acknowledged_alone", await produce(w, 5, "alone"))
    observe(w, "acknowledged_before", acked)
    elections_before = len(events(w, "leader_elected"))
    await crash(w, LEADER, power_loss=True)
    start(w, LEADER)
    await wait(w, "broker 1 registers again after its power loss", lambda: _registered_unfenced_or_new(w, LEADER))
    start(w, LAST)
    start(w, FIRST)
    await wait(w, "every replica back in the ISR", lambda: isr_is(w, {LEADER, LAST, FIRST}) and led_with(w, LEADER))
    after = partition(w)
    assert after is not None
    observe(w, "leader_after", after.leader)
    detected = [[e["broker_id"], e["clean"]] for e in events(w, "broker_shutdown_detected")]
    observe(w, "shutdowns_detected", [d for i, d in enumerate(detected) if d not in detected[:i]])
    elected = [[e["leader"], e["reason"]] for e in events(w, "leader_elected")[elections_before:]]
    observe(w, "elected_after_power_loss", [d for i, d in enumerate(elected) if d not in elected[:i]])


def _leader_isr_is(w: World, leader: int, isr: set[int]) -> bool:
    found = broker(w, leader)
    replica = None if found is None else found.manager.replicas.get(_tp())
    return replica is not None and replica.leader is not None and set(replica.leader.isr) == isr


def _registered_unfenced_or_new(w: World, broker_id: int) -> bool:
    found = broker(w, broker_id)
    return found is not None and found.lifecycle.broker_epoch >= 0


def _tp() -> Any:
    from minikafka.broker.log_manager import TopicPartition

    return TopicPartition(TOPIC, 0)


LAST_REPLICA_STANDING = Story(
    "last-replica-standing",
    last_replica_standing.TITLE,
    Switch(last_replica_standing.GUARD.key, last_replica_standing.GUARD.on, last_replica_standing.GUARD.off),
    _last_replica_standing,
    TopicSpec(1, ((LEADER, LAST, FIRST),), {"min.insync.replicas": "2"}),
    settings={
        **last_replica_standing.TOPOLOGY.settings,
        "log.simulate.page.cache": "false",  # the simulated disk keeps what was not fsynced until a power loss
    },
    watched=("broker_shutdown_detected", "leader_elected"),
)


# ---- KIP-966 needs one min.insync.replicas: the controller's and the brokers' ----


async def _min_isr_agreement(w: World) -> None:
    """The controller's static min ISR is 2, the brokers' 1, the topic sets none. The followers stop cleanly, the
    leader alone takes acks=all writes (if its min ISR lets it), loses power, and the ELR member is elected."""
    await wait(w, "every replica joins the ISR", lambda: isr_is(w, {LEADER, LAST, FIRST}))
    await stop(w, FIRST)
    await wait(w, "ISR [1, 2] once broker 3 stopped", lambda: isr_is(w, {LEADER, LAST}))
    await stop(w, LAST)
    await wait(w, "the leader alone in the ISR", lambda: isr_is(w, {LEADER}) and _leader_isr_is(w, LEADER, {LEADER}))
    during = partition(w)
    assert during is not None
    observe(w, "elr_with_leader_alone", sorted(during.elr))
    observe(w, "cluster_min_isr", image(w).broker_config("", "min.insync.replicas"))
    observe(w, "acknowledged_alone", await produce(w, 5, "alone"))
    await crash(w, LEADER, power_loss=True)
    await wait(w, "the leader's session times out", lambda: bool((r := registration(w, LEADER)) and r.fenced))
    start(w, LAST)
    await wait(w, "broker 2 is elected from the ELR", lambda: leads(w, LAST))
    observe(w, "leader_after", LAST)


MIN_ISR_AGREEMENT = Story(
    "min-isr-agreement",
    "a broker min.insync.replicas below the controller's loses nothing to an ELR election",
    Switch("controller-skips-cluster-min-isr", planted_bug=True),
    _min_isr_agreement,
    TopicSpec(1, ((LEADER, LAST, FIRST),), {}),
    settings={
        **last_replica_standing.TOPOLOGY.settings,
        "log.simulate.page.cache": "false",
        "min.insync.replicas": "2",
    },
    broker_settings={"min.insync.replicas": "1"},
)


# ---- a new leader caches the start of its epoch before it appends ----

OLD, NEW, FOLLOWER = 1, 2, 3  # the replica order: OLD leads first, NEW next; FOLLOWER last


async def _new_leader_epoch(w: World) -> None:
    """A new leader that has appended nothing answers a follower holding a newer epoch than any it wrote.

    Offsets 0-9 are acknowledged in epoch 0 (OLD leads); OLD fails and NEW leads epoch 1, appending offset 10,
    which FOLLOWER fetches and OLD (back, in the ISR) does not. NEW fails; OLD is elected in epoch 2 before
    appending anything, and FOLLOWER fetches from it with last fetched epoch 1. Then OLD fails before FOLLOWER
    could copy anything back, and FOLLOWER, still in the ISR, is elected.
    """
    await wait(w, "every replica joins the ISR", lambda: isr_is(w, {OLD, NEW, FOLLOWER}))
    observe(w, "acknowledged", await produce(w, 10, "e0-"))
    await crash(w, OLD)
    await wait(w, "NEW leads epoch 1", lambda: leads(w, NEW))
    start(w, OLD)
    await wait(w, "OLD back in the ISR", lambda: isr_is(w, {OLD, NEW, FOLLOWER}) and local_log_end(w, OLD) == 10)
    w.network.partition([NEW], [OLD], one_way=True)  # NEW's answers never reach OLD
    w._in_client(send_writes(w, 1, "e1-", 0, retries=False))  # never acknowledged: OLD, in the ISR, cannot fetch it
    await wait(w, "FOLLOWER fetches offset 10 of epoch 1", lambda: local_log_end(w, FOLLOWER) == 11)
    # The moment FOLLOWER truncates on OLD's answer it is cut off, so it copies nothing back before OLD fails.
    w.trace.hooks["log_truncated"] = lambda _event: w.network.partition([OLD], [FOLLOWER])
    await crash(w, NEW)  # the cut stays: an answer NEW had sent must not reach OLD late
    await wait(w, "OLD leads epoch 2 with nothing appended in it", lambda: leads(w, OLD))
    observe(w, "new_leader_log_end", local_log_end(w, OLD))
    await wait(w, "FOLLOWER has the diverging answer and has truncated", lambda: 0 <= local_log_end(w, FOLLOWER) <= 10)
    await crash(w, OLD)
    await wait(w, "FOLLOWER is elected", lambda: leads(w, FOLLOWER))
    observe(w, "follower_log_end", local_log_end(w, FOLLOWER))
    w.network.heal()
    start(w, OLD)
    start(w, NEW)


NEW_LEADER_EPOCH = Story(
    "new-leader-epoch",
    "a new leader caches the start of its epoch: a follower ahead in an epoch it never wrote keeps its records",
    Switch("new-leader-forgets-its-epoch", planted_bug=True),
    _new_leader_epoch,
    TopicSpec(1, ((OLD, NEW, FOLLOWER),), {"min.insync.replicas": "2"}),
    settings={**last_replica_standing.TOPOLOGY.settings, "replica.lag.time.max.ms": "10000"},
)


# ---- the leader's pending ISR changes: the HWM counts the most the ISR may be ----


async def _expansion_pending(w: World) -> None:
    """B drops out of A's ISR and catches up again; A's AlterPartition adding it is held, pending."""
    await wait(w, "B joins the ISR of A", lambda: isr_is(w, {A, B}))
    w.network.partition([B], [n for n in w.processes if n != B])
    await wait(w, "B cut off from every node: fenced, it leaves the ISR", lambda: isr_is(w, {A}))
    broker(w, A).manager.alter_partition.holding = True
    w.network.heal()
    await wait(w, "B catches up; A's expansion to [A, B] is pending", lambda: _holds_proposal(w))
    w.network.partition([B], [A])  # and B falls behind again: only A has what comes next


def _holds_proposal(w: World) -> bool:
    return bool(broker(w, A).manager.alter_partition.held)


async def _elect_b_after_a_fails(w: World) -> None:
    await crash(w, A)
    await wait(w, "A fails; B, in the ISR, is elected", lambda: leads(w, B))
    w.network.heal()
    start(w, A)
    await wait(w, "A returns to the ISR", lambda: isr_is(w, {A, B}) and led_with(w, A))


async def _pending_isr_expansion(w: World) -> None:
    """While the expansion is pending the HWM must wait for B: the controller may commit it, and B then lead."""
    await _expansion_pending(w)
    observe(w, "acknowledged_while_pending", await produce(w, 5, "p"))
    release_held_alter_partitions(w, A)  # B, behind, stays in the committed ISR
    await wait(w, "the controller commits ISR [A, B]", lambda: isr_is(w, {A, B}))
    await _elect_b_after_a_fails(w)


async def _pending_isr_shrink(w: World) -> None:
    """While A's shrink to itself is pending the HWM must still wait for B: the controller may refuse it, or A
    fail first, and B lead."""
    await wait(w, "B joins the ISR of A", lambda: isr_is(w, {A, B}))
    broker(w, A).manager.alter_partition.holding = True
    w.network.partition([B], [A])
    producing = w._in_client(send_writes(w, 5, "s", 0))
    await wait(w, "B lags behind a write: A's shrink to [A] is pending", lambda: _holds_proposal(w))
    await wait(w, "the writes answered", producing.done, STEP_TIMEOUT_S * 2)
    observe(w, "acknowledged_while_pending", w.acked)
    await _elect_b_after_a_fails(w)


async def _lost_alter_partition_answer(w: World) -> None:
    """The controller commits A's expansion but its answers never reach A: the outcome is unknown to A, which must
    keep counting B until it knows."""
    await _expansion_pending(w)
    manager = broker(w, A).manager.alter_partition
    answers: list[str] = []
    deliver = manager.on_answer

    def on_answer(target: Any, proposal: Any, result: Any) -> None:
        answers.append(result.error.name)
        deliver(target, proposal, result)

    manager.on_answer = on_answer
    w.network.lose_answers("Controller/AlterPartition", A)
    w.network.lose_answers("Raft/FetchStream", A)  # nor does the metadata tell A the outcome
    w.network.lose_answers("Raft/Fetch", A)
    release_held_alter_partitions(w, A)  # once answered, what A proposes next (the shrink) is held
    await wait(w, "the controller commits ISR [A, B]", lambda: isr_is(w, {A, B}))
    await wait(w, "A's AlterPartition gives up unanswered", lambda: bool(answers), 900)
    observe(w, "answer", answers[0])
    observe(w, "acknowledged_after_unknown_outcome", await produce(w, 5, "u"))
    await _elect_b_after_a_fails(w)


PENDING_STORY_SETTINGS = {k: v for k, v in kip_903.TOPOLOGY.settings.items() if k != "replica.fetch.max.bytes"}

PENDING_ISR_EXPANSION = Story(
    "pending-isr-expansion",
    "the HWM counts a joining replica while its ISR expansion is pending",
    Switch("isr-expansion-not-counted", planted_bug=True),
    _pending_isr_expansion,
    TopicSpec(1, ((A, B),), {"min.insync.replicas": "1"}),
    settings=PENDING_STORY_SETTINGS,
)
PENDING_ISR_SHRINK = Story(
    "pending-isr-shrink",
    "the HWM counts a leaving replica until its ISR shrink is committed",
    Switch("isr-shrink-assumed", planted_bug=True),
    _pending_isr_shrink,
    TopicSpec(1, ((A, B),), {"min.insync.replicas": "1"}),
    settings=PENDING_STORY_SETTINGS,
)
LOST_ALTER_PARTITION_ANSWER = Story(
    "lost-alter-partition-answer",
    "an ISR change whose answer is lost stays pending: the controller may have applied it",
    Switch("rollback-on-unknown-outcome", planted_bug=True),
    _lost_alter_partition_answer,
    TopicSpec(1, ((A, B),), {"min.insync.replicas": "1"}),
    settings=PENDING_STORY_SETTINGS,
)


# ---- Raft durability: a committed metadata entry survives its leader's power loss ----


async def _raft_power_loss(w: World) -> None:
    """Controller C is cut off while the leader L and F commit metadata (a broker's new registration); L loses
    power and, with F cut off in turn, C and L are the only majority. L must not vote for C: its fsynced log holds
    the entries C lacks (C votes for L instead). If L had counted them unfsynced, its log after the power loss is
    shorter than C's and C leads without them."""
    await _leader_loses_power(w, slow_disk_s=0.0)


async def _raft_slow_disk(w: World) -> None:
    """`raft-power-loss` with L's disk slow (each fsync 0.5-1.5 s) from C's cut to L's power loss. Guarded, F's fetches
    wait for L's fsyncs, so what L commits is on its disk; with the gate open L counts its own unfsynced entries,
    commits them with F alone, and the power loss takes them away: C and L elect a leader without them."""
    await _leader_loses_power(w, slow_disk_s=RAFT_SLOW_DISK_S)


async def _leader_loses_power(w: World, slow_disk_s: float) -> None:
    await wait(w, "a metadata quorum leader", lambda: raft_leader(w) is not None)
    leader = raft_leader(w)
    assert leader is not None
    lagging, follower = (c for c in CONTROLLER_IDS if c != leader)
    everyone = [*CONTROLLER_IDS, *BROKER_IDS]
    w.network.partition([lagging], [n for n in everyone if n != lagging])
    observe(w, "lagging_controller", lagging)
    slow = w.slow_disk(leader, slow_disk_s, "raft-slow-disk", RAFT_SLOW_FSYNC_S) if slow_disk_s else None
    offsets = {n.node: n.log_end_offset for n in w.raft_nodes()}
    await crash(w, BROKER_IDS[0])
    start(w, BROKER_IDS[0])
    await wait(w, "broker 1 registered again (metadata committed without C)", w.recovered)
    observe(w, "entries_c_lacks", max(n.high_watermark for n in w.raft_nodes()) - offsets[lagging])
    await crash(w, leader, power_loss=True)
    if slow is not None:
        w.heal_disk(leader, slow)
    w.network.heal()
    w.network.partition([follower], [n for n in everyone if n != follower])
    start(w, leader)
    await w.run_for(20.0)
    observe(w, "raft_leader_while_f_cut_off", raft_leader(w))
    w.network.heal()
    await w.run_for(5.0)


RAFT_SLOW_DISK_S = 60.0  # longer than the story takes to reach the power loss
# Each fsync shorter than controller.quorum.fetch.timeout.ms (2 s): the guarded leader's followers, whose fetches
# wait for its fsyncs, are heard from in time, so it keeps its leadership (longer ones make it resign).
RAFT_SLOW_FSYNC_S = (0.5, 1.5)
RAFT_POWER_LOSS = Story(
    "raft-power-loss",
    "a Raft entry counted committed was fsynced on a majority: the leader's power loss cannot take it away",
    Switch("raft-log-not-fsynced", planted_bug=True),
    _raft_power_loss,
    TopicSpec(),
)
RAFT_SLOW_DISK = Story(
    "raft-slow-disk",
    "a Raft leader counts its own entries only once fsynced: a slow disk's power loss cannot take a committed one",
    Switch("raft-counts-unflushed", planted_bug=True),
    _raft_slow_disk,
    TopicSpec(),
)


# ---- minikafka.raft.directory.id.check: a controller's lost disk, in a dynamic quorum ----

ELECTION_WAIT_S = 20.0  # several election timeouts: without the guard an election happens well within it


async def _controller_disk_loss(w: World) -> None:
    """Of the controllers L (the leader), W and G: G goes down, L and W commit a topic, L goes down, W's disk is
    lost and W comes back formatted to join (a new directory id), and G comes back without the topic. Guarded, W
    is an observer and refuses G's vote requests, which name its old directory: no leader until L is back. Off,
    W votes by its id with an empty log and elects G, which leads without the committed topic."""
    await wait(w, "a metadata quorum leader", lambda: raft_leader(w) is not None)
    leader = raft_leader(w)
    assert leader is not None
    wiped, lagging = sorted(c for c in CONTROLLER_IDS if c != leader)
    await crash(w, lagging)
    observe(w, "topic_committed", await w._in_client(w._create_topic(controller_disk_loss.TOPIC)))
    await wait(w, "the topic's metadata committed, as the invariants saw it", lambda: _commit_seen(w, leader))
    await crash(w, leader)
    meta = read_meta_properties(w.processes[wiped].data_dir)
    await crash(w, wiped)
    new = wipe_and_format(w.processes[wiped], dynamic=True)
    start(w, wiped)
    start(w, lagging)
    await w.run_for(ELECTION_WAIT_S)
    observe(w, "leader_while_l_down", raft_leader(w))
    start(w, leader)
    await wait(w, "a metadata quorum leader again", lambda: raft_leader(w) is not None)
    await w.run_for(5.0)
    observe(w, "topic_survived", controller_disk_loss.TOPIC in image(w).topics_by_name)
    old = meta.directory_id if meta is not None else ""
    refused = await w._in_client(w.quorum.replace_voter(wiped, old, new))
    observe(w, "voter_replaced", refused or "removed under its old directory, added under its new one")


def _commit_seen(w: World, node_id: int) -> bool:
    """The leader's whole log is committed, and the invariants (which look every step) have recorded it so."""
    seen = max(w.invariants.committed, default=-1)
    return any(n.node == node_id and n.high_watermark == n.log_end_offset == seen + 1 for n in w.raft_nodes())


CONTROLLER_DISK_LOSS = scenario_story(controller_disk_loss, _controller_disk_loss, TopicSpec(), dynamic_quorum=True)


# ---- unclean.leader.election.enable: an out-of-sync replica elected, at the price Kafka documents ----

IN_SYNC, OUT_OF_SYNC = 1, 2


async def _unclean_election(w: World) -> None:
    """OUT_OF_SYNC fails, IN_SYNC alone acknowledges acks=all writes (min.insync.replicas 1), then fails too, and
    OUT_OF_SYNC returns. Guarded, the partition waits leaderless for IN_SYNC (in the ELR); unguarded, the controller
    elects OUT_OF_SYNC from outside the ISR and the writes only IN_SYNC had are gone."""
    await wait(w, "both replicas join the ISR", lambda: isr_is(w, {IN_SYNC, OUT_OF_SYNC}))
    observe(w, "acknowledged_by_both", await produce(w, 100, "both"))
    await crash(w, OUT_OF_SYNC)
    await wait(w, "the leader shrinks the ISR to itself", lambda: isr_is(w, {IN_SYNC}))
    observe(w, "acknowledged_alone", await produce(w, 40, "alone"))
    await crash(w, IN_SYNC)
    await wait(w, "the last ISR member's session times out", lambda: bool((r := registration(w, IN_SYNC)) and r.fenced))
    elections_before = len(events(w, "leader_elected"))
    start(w, OUT_OF_SYNC)
    await wait(w, "the out-of-sync replica registers again, unfenced", lambda: unfenced_anew(w, OUT_OF_SYNC))
    await w.run_for(5.0)  # time for an unclean election, where the setting allows one
    during = partition(w)
    assert during is not None
    observe(w, "with_only_out_of_sync", {"leader": during.leader, "isr": sorted(during.isr), "elr": sorted(during.elr)})
    elected = [[e["leader"], e["reason"]] for e in events(w, "leader_elected")[elections_before:]]
    observe(w, "elected", [d for i, d in enumerate(elected) if d not in elected[:i]])
    start(w, IN_SYNC)
    await wait(w, "both replicas back in the ISR", lambda: isr_is(w, {IN_SYNC, OUT_OF_SYNC}) and led_with(w, IN_SYNC))
    after = partition(w)
    assert after is not None
    observe(w, "leader_after", after.leader)


UNCLEAN_ELECTION = Story(
    unclean_election.NAME,
    "an out-of-sync replica elected leader: the writes it lacks are lost, the price Kafka documents for the setting",
    guard_switch(unclean_election.GUARD),
    _unclean_election,
    TopicSpec(1, ((IN_SYNC, OUT_OF_SYNC),), {"min.insync.replicas": "1"}),
    settings=unclean_election.TOPOLOGY.settings,
    watched=("leader_elected",),
)


# ---- a late AlterPartition computed at an older partition epoch ----

LATE = 3  # with A (the leader) and B: replicas [A, B, LATE], reordered to [A, LATE, B]


async def _in_flight_alter_partition(w: World) -> None:
    """A's AlterPartition adding LATE back is held; LATE falls behind again and the replicas are reordered (a new
    partition epoch, the same leader and ISR); A and B acknowledge writes; then the stale request arrives. Accepted,
    its ISR names LATE, which is elected, first in replica order, when A stops."""
    await wait(w, "every replica joins the ISR", lambda: isr_is(w, {A, B, LATE}))
    observe(w, "acknowledged_by_all", await produce(w, 50, "all"))
    w.network.partition([LATE], [A, B])  # LATE keeps its session with the controllers: it stays unfenced
    w._in_client(send_writes(w, 20, "lag", 0))  # traffic LATE misses: an idle follower at the log end stays in sync
    await wait(w, "LATE falls behind; A shrinks the ISR to [A, B]", lambda: isr_is(w, {A, B}))
    broker(w, A).manager.alter_partition.holding = True
    w.network.heal()
    await wait(w, "LATE catches up; A's AlterPartition adding it is held", lambda: _holds_proposal(w))
    w.network.partition([LATE], [A, B])
    stale = partition(w)
    assert stale is not None
    await reassign(w, (A, LATE, B))
    observe(w, "partition_epochs", [stale.partition_epoch, _partition_epoch(w)])
    observe(w, "acknowledged_without_late", await produce(w, 200, "new"))
    await release_stale_alter_partition(w, A, "A")
    registered = partition(w)
    assert registered is not None
    observe(w, "isr_after_stale_request", sorted(registered.isr))
    observe(w, "rejected", [e["error"] for e in events(w, "alter_partition_rejected") if e.get("broker_id") == A])
    await stop(w, A)
    await wait(w, "A stops; the controller elects another ISR member", lambda: leads(w, B) or leads(w, LATE))
    observe(w, "leader_after_a_stops", B if leads(w, B) else LATE)
    w.network.heal()
    start(w, A)
    await wait(w, "every replica back in the ISR", lambda: isr_is(w, {A, B, LATE}) and led_with(w, A))


def _partition_epoch(w: World) -> int:
    registered = partition(w)
    return -1 if registered is None else registered.partition_epoch


IN_FLIGHT_ALTER_PARTITION = scenario_story(
    in_flight_alter_partition,
    _in_flight_alter_partition,
    TopicSpec(1, ((A, B, LATE),), {"min.insync.replicas": "2"}),
    watched=("alter_partition_accepted", "alter_partition_rejected"),
)


STORIES: dict[str, Story] = {
    story.name: story
    for story in (
        KIP_903,
        LAST_REPLICA_STANDING,
        MIN_ISR_AGREEMENT,
        NEW_LEADER_EPOCH,
        PENDING_ISR_EXPANSION,
        PENDING_ISR_SHRINK,
        LOST_ALTER_PARTITION_ANSWER,
        RAFT_POWER_LOSS,
        RAFT_SLOW_DISK,
        UNCLEAN_ELECTION,
        IN_FLIGHT_ALTER_PARTITION,
        CONTROLLER_DISK_LOSS,
        ZOMBIE_LEADER,
        PARTITIONED_BROKER,
        DISRUPTIVE_CONTROLLER,
        STRAY_PARTITIONS,
        HANGING_TRANSACTION,
        DELAYED_END_TXN,
        STOLEN_PRODUCER_ID,
    )
}

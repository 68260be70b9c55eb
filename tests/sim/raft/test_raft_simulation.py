"""Hundreds of seeded schedules of the KRaft core: faults, then healing; invariants after every event."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import pytest
from raft_sim import InvariantViolation, RaftSimulation

from minikafka.kraft_controller.raft.core import RaftNode
from minikafka.kraft_controller.raft.messages import FetchRequest, VoteRequest

# Soak: MINIKAFKA_RAFT_SEEDS=5000 runs that many seeds (read here only, never by the code under test).
SEEDS = int(os.environ.get("MINIKAFKA_RAFT_SEEDS", "300"))
# `make raft-reconfiguration-soak` runs 1,000 (418 s on two shared cores); `make test` runs 60.
RECONFIGURATION_SEEDS = int(os.environ.get("MINIKAFKA_RAFT_RECONFIGURATION_SEEDS", "60"))
CHAOS_MS = 3000
HEAL_MS = 4000


def run_schedule(
    seed: int,
    pre_vote: bool = True,
    disk_loss: bool = False,
    directory_check: bool = True,
    reconfigure: bool = False,
    endpoint_changes: bool = False,
    upgrade: bool = False,
) -> RaftSimulation:
    extra = 2 if reconfigure else 0
    sim = RaftSimulation(
        seed,
        pre_vote=pre_vote,
        directory_check=directory_check,
        extra_controllers=extra,
        endpoint_changes=endpoint_changes,
    )
    rng = sim.rng
    crashed: set[int] = set()
    wipe_at = rng.randint(200, CHAOS_MS - 500) if disk_loss and not reconfigure else 1 << 62
    # Faults while proposals keep coming.
    t = 0
    while t < CHAOS_MS:
        t += rng.randint(20, 120)
        sim.run_until(t)
        roll = rng.random()
        if roll < 0.45:
            sim.propose(rng.randint(1, 4))
        elif roll < 0.55 and len(crashed) < 1:
            victim = rng.choice(sim.controller_ids + [100])
            sim.crash(victim)
            crashed.add(victim)
        elif roll < 0.70 and crashed:
            node = crashed.pop()
            sim.restart(node)
        elif roll < 0.78:
            a, b = rng.sample(sim.node_ids, 2)
            sim.cut.add(frozenset((a, b)))
        elif roll < 0.88 and sim.cut:
            sim.cut.discard(rng.choice(sorted(sim.cut, key=sorted)))
        elif roll < 0.92:
            sim.snapshot(rng.choice(sim.node_ids))
        elif roll < 0.95:
            sim.resign()
        if upgrade and rng.random() < 0.05:
            sim.upgrade()
        if reconfigure and rng.random() < 0.2:
            sim.reconfigure()
        if reconfigure and disk_loss and rng.random() < 0.03 and sim.wipe_allowed():
            victim = rng.choice(sim.controller_ids)
            sim.wipe(victim)
            crashed.discard(victim)
        if endpoint_changes and rng.random() < 0.05 and sim.move_allowed():
            # One controller at a time restarts on a new address, once every node has learned the last move.
            victim = rng.choice([c for c in sim.controller_ids if c not in crashed])
            sim.move(victim)
        if t >= wipe_at:
            # One voter's disk is lost, once: with the directory check, it comes back an observer for good.
            victim = rng.choice(sim.voter_ids)
            sim.wipe(victim)
            crashed.discard(victim)
            wipe_at = 1 << 62
        if rng.random() < 0.1:
            sim.check_log_matching()
    # Heal: every node up, every link up, no drops; a leader must emerge and new entries commit everywhere.
    for node in crashed:
        sim.restart(node)
    sim.cut.clear()
    sim.drop_rate = 0.0
    sim.duplicate_rate = 0.0
    sim.run_until(t + HEAL_MS // 2)
    assert any(n.raft.is_leader for n in sim.nodes.values()), f"seed {seed}: no leader after healing"
    before = len(sim.committed_history)
    assert sim.propose(3), f"seed {seed}: the leader refused a proposal"
    sim.run_until(t + HEAL_MS)
    sim.check_log_matching()
    if endpoint_changes:
        # UpdateRaftVoter: every live node reaches every voter where it listens now, as the voter set says.
        settled = sim.run_until_true(sim.endpoints_settled, sim.now + HEAL_MS)
        assert settled, f"seed {seed}: voter endpoints not settled after healing ({sim.endpoints})"
    assert len(sim.committed_history) >= before + 3, f"seed {seed}: new proposals did not commit"
    final = max(sim.committed_history) + 1
    for node in sim.nodes.values():
        assert node.commit_offset == final, f"seed {seed}: node {node.node_id} committed {node.commit_offset}/{final}"
    return sim


@pytest.mark.parametrize("seed", range(SEEDS))
def test_raft_schedule(seed: int) -> None:
    """With pre-vote (the default, as in Kafka 4.0+)."""
    run_schedule(seed)


@pytest.mark.parametrize("seed", range(SEEDS // 3))
def test_raft_schedule_without_pre_vote(seed: int) -> None:
    """The classic Raft election (minikafka.raft.pre.vote.enable=false) keeps the same invariants."""
    run_schedule(seed, pre_vote=False)


@pytest.mark.parametrize("seed", range(SEEDS // 3))
def test_raft_schedule_with_disk_loss(seed: int) -> None:
    """A voter's disk is lost mid-schedule: named by directory (KIP-853), it returns as an observer."""
    sim = run_schedule(seed, disk_loss=True)
    assert sim.wipes == 1


@pytest.mark.parametrize("seed", range(RECONFIGURATION_SEEDS))
def test_raft_schedule_with_reconfiguration_and_disk_loss(seed: int) -> None:
    """KIP-853: voters added and removed (the leader too) by AddRaftVoter and RemoveRaftVoter, one change at a
    time, while disks are lost and the wiped voters are removed and added again under their new directories."""
    run_schedule(seed, disk_loss=True, reconfigure=True)


@pytest.mark.parametrize("seed", range(RECONFIGURATION_SEEDS // 2))
def test_raft_schedule_with_reconfiguration_and_endpoint_changes(seed: int) -> None:
    """KIP-853's endpoints: controllers restart on new addresses (UpdateRaftVoter), the controllers to be added
    and the observer know only bootstrap servers, and voters are added at the endpoints they registered while
    others are removed; every message is routed by address."""
    run_schedule(seed, reconfigure=True, endpoint_changes=True)


@pytest.mark.parametrize("seed", range(RECONFIGURATION_SEEDS // 3))
def test_raft_schedule_upgrading_a_static_quorum_then_reconfiguring_it(seed: int) -> None:
    """kraft.version 0 -> 1 mid-schedule (the leader names the voters by the directories they fetch with), then
    voters added and removed; a truncation below the upgrade makes a replica static again."""
    run_schedule(seed, directory_check=False, reconfigure=True, upgrade=True)


def test_upgrade_schedules_upgrade_and_then_change_the_voter_set() -> None:
    outcomes: dict[str, int] = {}
    for seed in range(10):
        sim = run_schedule(seed, directory_check=False, reconfigure=True, upgrade=True)
        for name, count in sim.voter_changes.items():
            outcomes[name] = outcomes.get(name, 0) + count
    assert outcomes.get("upgrade NONE", 0) >= 5 and outcomes.get("NONE", 0) >= 10, outcomes
    assert outcomes.get("UNSUPPORTED_VERSION", 0) >= 1, outcomes  # changes asked before the upgrade


def test_endpoint_schedules_move_controllers_and_add_voters() -> None:
    """The moves are real: across seeds controllers restart on new addresses and voters are added."""
    moves = added = 0
    for seed in range(10):
        sim = run_schedule(seed, reconfigure=True, endpoint_changes=True)
        moves += sim.moves
        added += sim.voter_changes.get("NONE", 0)
    assert moves >= 5 and added >= 10, (moves, added)


def test_reconfiguration_schedules_change_the_voter_set() -> None:
    """The changes are real: across seeds many are appended and some are refused as Kafka refuses them."""
    outcomes: dict[str, int] = {}
    for seed in range(20):
        sim = run_schedule(seed, disk_loss=True, reconfigure=True)
        for name, count in sim.voter_changes.items():
            outcomes[name] = outcomes.get(name, 0) + count
    assert outcomes.get("NONE", 0) >= 40, outcomes
    assert outcomes.get("REQUEST_TIMED_OUT", 0) >= 1, outcomes


def test_without_the_directory_check_disk_loss_loses_committed_entries() -> None:
    """Named by id only, a wiped voter votes as if it remembered: some schedule loses committed entries."""
    for seed in range(300):
        try:
            run_schedule(seed, disk_loss=True, directory_check=False)
        except (InvariantViolation, AssertionError) as violation:
            if "lacks committed offset" in str(violation) or "committed as" in str(violation):
                return
    raise AssertionError("no seed lost a committed entry")


def test_simulation_exercises_elections_and_truncations() -> None:
    """The faults are real: across seeds there are several epochs, crashes and commits."""
    epochs = commits = 0
    for seed in range(10):
        sim = run_schedule(seed)
        epochs += len(sim.leaders_by_epoch)
        commits += len(sim.committed_history)
    assert epochs >= 20
    assert commits >= 300


def forget_votes(original: Callable[..., Any]) -> Callable[..., Any]:
    """A broken vote rule: the node forgets whom it voted for in the epoch (and the epoch's leader)."""

    def handle_vote(self: RaftNode, request: VoteRequest, now_ms: int) -> Any:
        if request.candidate_epoch == self.epoch:
            self.voted_for = None
            self.leader_id = None
        return original(self, request, now_ms)

    return handle_vote


def leak_uncommitted(original: Callable[..., Any]) -> Callable[..., Any]:
    """A broken leader: observers are answered as if they were voters (entries above the HWM)."""

    def handle_fetch(self: RaftNode, request: FetchRequest, now_ms: int) -> Any:
        voters, directories = self.voters, self.voter_directories
        self.voters = voters | {request.replica_id}
        self.voter_directories = {**directories, request.replica_id: request.replica_directory_id}
        try:
            return original(self, request, now_ms)
        finally:
            self.voters, self.voter_directories = voters, directories

    return handle_fetch


@pytest.mark.parametrize(
    ("method", "mutation", "expected"),
    [
        ("_handle_vote", forget_votes, "two leaders in epoch"),
        ("_handle_fetch", leak_uncommitted, "received uncommitted entry"),
    ],
)
def test_the_invariants_catch_a_broken_core(
    monkeypatch: pytest.MonkeyPatch, method: str, mutation: Callable[..., Any], expected: str
) -> None:
    """The checks can fail: with a deliberately broken rule some seed violates an invariant."""
    monkeypatch.setattr(RaftNode, method, mutation(getattr(RaftNode, method)))
    failures = []
    for seed in range(60):
        try:
            run_schedule(seed)
        except InvariantViolation as violation:
            failures.append(str(violation))
            if expected in str(violation):
                return
    raise AssertionError(f"no seed showed {expected!r}; failures: {failures[:3]}")


def test_the_one_change_in_flight_invariant_catches_a_core_that_allows_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the pending-change check broken, a schedule appends a second voter set change before the first commits."""
    original = RaftNode._leader_view

    def no_pending_check(self: RaftNode) -> Any:
        return dataclasses.replace(original(self), change_in_flight=False)

    monkeypatch.setattr(RaftNode, "_leader_view", no_pending_check)
    for seed in range(100):
        sim = RaftSimulation(seed, extra_controllers=2)
        try:
            sim.run_until(500)
            for _ in range(20):
                sim.reconfigure()
                sim.reconfigure()
                sim.run_until(sim.now + 50)
        except InvariantViolation as violation:
            assert "while" in str(violation) and "is not committed" in str(violation)
            return
    raise AssertionError("no seed appended two uncommitted voter set changes")


def test_without_update_raft_voter_moved_controllers_stay_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The endpoint check is not vacuous: a core whose voters never send UpdateRaftVoter fails it."""
    monkeypatch.setattr(RaftNode, "_maybe_update_voter", lambda self, leader, now_ms: [])
    monkeypatch.setattr(RaftNode, "_maybe_update_own_endpoint", lambda self, now_ms: [])
    with pytest.raises(AssertionError):
        for seed in range(10):
            run_schedule(seed, reconfigure=True, endpoint_changes=True)

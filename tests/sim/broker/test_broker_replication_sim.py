"""The broker replication simulation: random seeds with crashes, unflushed loss, drops, held AlterPartitions; and
KIP-903's scenario step by step, with and without the controller's broker-epoch check."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from broker_sim import BrokerSim, InvariantViolation, SimConfig
from structlog.testing import capture_logs

from minikafka.broker.replica import partition as partition_core
from minikafka.broker.replica.divergence import FollowerTruncation
from minikafka.broker.replica.partition import (
    AssignEpochStartOffset,
    Committed,
    Follower,
    Leader,
    PendingExpandIsr,
    PendingShrinkIsr,
)
from minikafka.common.errors import ErrorCode

SEEDS = int(os.environ.get("MINIKAFKA_BROKER_SIM_SEEDS", "200"))
# One seed only, to replay a failure: MINIKAFKA_BROKER_SIM_SEED=N (the failure message prints the command).
ONLY_SEED = os.environ.get("MINIKAFKA_BROKER_SIM_SEED")
REPLAY = "MINIKAFKA_BROKER_SIM_SEED={seed} .venv/bin/python -m pytest tests/sim/broker -k random_seeds"


def seeds() -> range:
    return range(int(ONLY_SEED), int(ONLY_SEED) + 1) if ONLY_SEED is not None else range(SEEDS)


STEPS = 1000


def test_random_seeds_keep_every_invariant() -> None:
    """Every invariant after every step, over many seeds; the faults must actually happen (not a vacuous run)."""
    totals: dict[str, int] = {}
    for seed in seeds():
        with capture_logs():
            sim = BrokerSim(seed, SimConfig(crash_probability=0.008, hold_probability=0.008))
            try:
                for _ in range(STEPS):
                    sim.step()
            except InvariantViolation as error:
                pytest.fail(f"seed {seed}: {error}\nreplay: {REPLAY.format(seed=seed)}")
        assert sim.lost_acked_writes() == [], f"seed {seed}; replay: {REPLAY.format(seed=seed)}"
        for key, value in sim.stats.items():
            totals[key] = totals.get(key, 0) + value
    if ONLY_SEED is None:  # the faults must actually happen over the seeds (not a vacuous run)
        assert totals["acked"] > 50 * SEEDS
        assert totals["crashes"] > SEEDS
        assert totals["expansions"] > SEEDS and totals["shrinks"] > SEEDS // 2
        assert totals["truncations"] > 0


def test_without_the_broker_epoch_check_random_runs_break_the_invariants() -> None:
    """The invariants can fail: with the controller's KIP-903 check off, the same fault mix finds violations."""
    failing = []
    for seed in range(60):
        with capture_logs():
            config = SimConfig(broker_epoch_check=False, crash_probability=0.01, hold_probability=0.01)
            sim = BrokerSim(seed, config)
            try:
                for _ in range(1500):
                    sim.step()
            except InvariantViolation as error:
                failing.append((seed, str(error)))
    assert failing
    assert any("StaleBrokerEpochCommitted" in message for _seed, message in failing)


def _kip903_scenario(broker_epoch_check: bool) -> tuple[BrokerSim, list[str], list[dict]]:
    """Seed 000's steps on replicas A=0, B=1; returns the sim, the violations seen, and the log events."""
    a, b = 0, 1
    # Kafka-like proportions: the lag limit (30 s by default) is longer than the session timeout (9 s).
    config = SimConfig(
        brokers=2,
        min_insync_replicas=1,
        replica_lag_time_max_ms=10_000,
        drop_probability=0.0,
        broker_epoch_check=broker_epoch_check,
    )
    seen: list[str] = []

    def run_until(condition, deadline_ms: int = 5000) -> None:  # noqa: ANN001
        end = sim.now_ms + deadline_ms
        while not condition():
            assert sim.now_ms < end, "condition not reached in time"
            sim.step(faults=False, check=False)
            seen.extend(v for v in sim.violations() if v not in seen)

    with capture_logs() as events:
        sim = BrokerSim(7, config, isr=[a])  # A leads, alone in the ISR
        sim.brokers[a].hold_alter_partition = True  # the AlterPartition that will arrive late
        run_until(lambda: isinstance(sim.brokers[a].role, Leader))
        while len(sim.acked) < 10:
            sim.produce()
            sim.step(faults=False)
        sim.flush(a)  # A's writes are durable: whatever is lost later is lost through the ISR, not A's disk

        # 1. B catches up; A proposes the ISR [A, B] with B's current broker epoch.
        run_until(lambda: bool(sim.brokers[a].held_alter))
        proposal = sim.brokers[a].held_alter[0]
        old_epoch_b = sim.brokers[b].broker_epoch
        assert (b, old_epoch_b) in [(s.broker_id, s.broker_epoch) for s in proposal.new_isr_with_epochs]
        # 2. B fails hard before the request reaches the controller; 4. its disk is replaced.
        sim.crash(b, wipe_disk=True)
        sim.cut.add((b, a))  # keep B from catching up again, so the window stays open
        # 3. The controller fences B; B is not in the ISR, so nothing else changes.
        run_until(lambda: sim.controller.brokers[b].fenced)
        assert sim.controller.isr == [a]
        # 5. B restarts and registers: a new broker epoch; it is unfenced once caught up with the metadata.
        sim.restart(b)
        assert sim.brokers[b].broker_epoch > old_epoch_b
        run_until(lambda: not sim.controller.brokers[b].fenced)
        # 6. Finally A's AlterPartition arrives.
        sim.release_alter_partition(a)
        run_until(lambda: sim.brokers[a].alter_in_flight is None)
        run_until(
            lambda: isinstance(sim.brokers[a].role, Leader) and isinstance(sim.brokers[a].role.isr_state, Committed)
        )

        # Then A fails (its log is flushed: it loses nothing) and later comes back.
        sim.crash(a)
        run_until(lambda: sim.controller.brokers[a].fenced)
        sim.restart(a)
        sim.cut.discard((b, a))
        run_until(lambda: sim.controller.leader >= 0 and not sim.controller.brokers[a].fenced)
        leader = sim.brokers[sim.controller.leader]
        follower = sim.brokers[b if leader.broker_id == a else a]
        run_until(lambda: follower.log.end == leader.log.end and follower.role is not None)
    return sim, seen, events


def test_kip903_scenario_with_the_broker_epoch_check_loses_nothing() -> None:
    sim, seen, events = _kip903_scenario(broker_epoch_check=True)
    assert seen == []
    assert sim.lost_acked_writes() == []
    assert sim.controller.leader == 0  # A was the last replica standing and leads again
    rolled_back = [e for e in events if e["event"] == "isr_rolled_back"]
    assert rolled_back and rolled_back[0]["error"] == "INELIGIBLE_REPLICA"
    assert rolled_back[0]["proposed"] == [0, 1] and rolled_back[0]["committed"] == [0]


def test_kip903_scenario_without_the_check_loses_acknowledged_writes() -> None:
    sim, seen, _events = _kip903_scenario(broker_epoch_check=False)
    assert any(v.startswith("StaleBrokerEpochCommitted") for v in seen)
    assert any(v.startswith("LeaderCandidateCompleteness") for v in seen)
    assert sim.controller.leader == 1  # B, with its empty disk, was elected from the ISR
    # and A truncated its log to B's: every acknowledged write is gone
    assert len(sim.acked) >= 10 and sorted(sim.lost_acked_writes()) == sorted(sim.acked)


def _rollback_on_any_error(self: Leader, proposal, result, now_ms):  # noqa: ANN001, ANN202
    """A broken leader that rolls back even when the controller may have applied the change (e.g. a timeout)."""
    state = self.isr_state
    if result.error != ErrorCode.NONE and not isinstance(state, Committed) and state.proposal == proposal:
        return replace(self, isr_state=Committed(state.isr)), ()
    return ORIGINAL_RESPONSE(self, proposal, result, now_ms)


ORIGINAL_RESPONSE = Leader.on_alter_partition_response


@pytest.mark.parametrize(
    ("target", "attribute", "broken"),
    [
        (PendingExpandIsr, "maximal_isr", property(lambda self: self.isr)),  # the HWM ignores the joining member
        (PendingShrinkIsr, "maximal_isr", property(lambda self: self.isr - self.removing)),  # shrink assumed done
        (Leader, "on_alter_partition_response", _rollback_on_any_error),
    ],
    ids=["expand-not-counted", "shrink-assumed", "rollback-on-unknown-outcome"],
)
def test_the_invariants_catch_a_broken_core(monkeypatch: pytest.MonkeyPatch, target, attribute, broken) -> None:  # noqa: ANN001
    monkeypatch.setattr(target, attribute, broken)
    for seed in range(SEEDS):
        with capture_logs():
            sim = BrokerSim(seed, SimConfig(crash_probability=0.008, hold_probability=0.008))
            try:
                for _ in range(STEPS):
                    sim.step()
            except InvariantViolation:
                return
    pytest.fail("no seed caught the broken core")


def _new_leader_without_cached_epoch_scenario() -> BrokerSim:
    """A new leader that has appended nothing answers a follower holding a newer epoch than any it wrote.

    Replicas X=0, L=1, F=2 (RF 3, min ISR 2). Offsets 0-9 are acknowledged in epoch 0 (L leads), X leads epoch 1
    and appends offset 10, which F fetches and L does not. X fails; L is elected in epoch 2 before appending
    anything, and F fetches from it with last fetched epoch 1. Then L fails before F could copy anything back,
    and F, still in the ISR, is elected.
    """
    x, leader_l, f = 0, 1, 2
    config = SimConfig(min_insync_replicas=2, replica_lag_time_max_ms=10_000, drop_probability=0.0)
    sim = BrokerSim(11, config, isr=[leader_l, x, f])

    def run_until(condition, deadline_ms: int = 5000) -> None:  # noqa: ANN001
        assert sim.run_until(condition, deadline_ms, check=False), "condition not reached in time"

    with capture_logs():
        run_until(lambda: isinstance(sim.brokers[leader_l].role, Leader))
        for _ in range(10):
            sim.produce()
        run_until(lambda: len(sim.acked) == 10)
        for broker in sim.brokers.values():
            sim.flush(broker.broker_id)
        sim.crash(leader_l)  # flushed: it loses nothing, and X (first in the replica order) is elected in epoch 1
        run_until(lambda: sim.controller.leader == x)
        sim.restart(leader_l)
        run_until(lambda: sim.controller.isr == [x, leader_l, f] and sim.brokers[leader_l].log.end == 10)

        sim.cut.add((x, leader_l))  # X's answers never reach L
        sim.produce()
        run_until(lambda: sim.brokers[f].log.end == 11)
        assert sim.brokers[f].log.epochs.latest_epoch == sim.controller.leader_epoch == 1
        sim.crash(x)
        sim.cut.clear()
        run_until(lambda: sim.controller.leader == leader_l)
        assert sim.brokers[leader_l].log.end == 10  # elected in epoch 2 with nothing appended in it

        run_until(lambda: sim.brokers[f].log.end <= 10)  # F has its diverging answer and has truncated
        sim.crash(leader_l)
        run_until(lambda: sim.controller.leader == f and isinstance(sim.brokers[f].role, Leader))
    return sim


def test_a_new_leader_caches_its_epoch_and_the_follower_keeps_its_committed_records() -> None:
    sim = _new_leader_without_cached_epoch_scenario()
    assert sim.brokers[2].log.end == 10  # only X's unacknowledged offset 10 was cut
    assert sim.lost_acked_writes() == []


def _old_follower_truncation(self, diverging, local, log_end_offset):  # noqa: ANN001, ANN202
    """The rule before the fix: an undefined answer cut the follower's log to its start."""
    if diverging.end_offset < 0 or local.end_offset < 0:
        return FollowerTruncation(0, True, "undefined")
    offset = min(local.end_offset, diverging.end_offset) if local.epoch == diverging.epoch else local.end_offset
    return FollowerTruncation(offset, True, "diverging")


def _leader_without_epoch_start(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    transition = ORIGINAL_MAKE_LEADER(*args, **kwargs)
    kept = tuple(e for e in transition.effects if not isinstance(e, AssignEpochStartOffset))
    return replace(transition, effects=kept)


ORIGINAL_MAKE_LEADER = partition_core.make_leader


def test_without_the_cached_epoch_the_follower_wipes_its_log_and_acknowledged_writes_are_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same steps with the fix reverted (the new leader caches nothing, the follower cuts to its log start on
    an undefined answer), as the code was: every acknowledged write is lost."""
    monkeypatch.setattr(partition_core, "make_leader", _leader_without_epoch_start)
    monkeypatch.setattr(Follower, "truncation", _old_follower_truncation)
    sim = _new_leader_without_cached_epoch_scenario()
    assert sim.brokers[2].log.end == 0
    assert sorted(sim.lost_acked_writes()) == list(range(10))

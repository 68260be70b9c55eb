"""A story of the controller quorum: a voter cut off and healed again and again (the steps of `scenario
disruptive-controller`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from minikafka.deploy.scenario.kraft import QuorumElections, quorum_elections
from minikafka.deploy.scenario.library import disruptive_controller
from minikafka.sim.cluster import BROKER_IDS, CONTROLLER_IDS
from minikafka.sim.invariants import Violation
from minikafka.sim.story_steps import now, observe, scenario_story, wait
from minikafka.sim.world import TopicSpec, World

TIMEOUTS = ("raft_prevote_started", "raft_election_started")
ELECTIONS = ("raft_leader_elected", "raft_resigned")


@dataclass
class RaftEvents:
    """The controllers' timeouts and elections as they are logged, each stamped with the simulated time as the
    `ts` a real node's log line carries (what `quorum_elections` reads)."""

    since: float = 0.0
    seen: list[dict[str, Any]] = field(default_factory=list)

    def observe(self, event: Mapping[str, Any]) -> None:
        if event.get("event") in (*TIMEOUTS, *ELECTIONS):
            stamp = datetime.fromtimestamp(now(), UTC).isoformat()
            self.seen.append({**event, "ts": stamp, "at": now()})

    def named(self, names: tuple[str, ...], node: int | None = None, since: float = 0.0) -> list[dict[str, Any]]:
        return [
            e
            for e in self.seen
            if e["event"] in names and e["at"] >= since and (node is None or e.get("raft_node") == node)
        ]

    def elections(self, since: float) -> QuorumElections:
        return quorum_elections(self.named(ELECTIONS[:1], since=since), self.named(ELECTIONS[1:], since=since))


def settled(w: World) -> tuple[int, int] | None:
    """The quorum's leader and epoch once every voter has all of its log (DescribeQuorum's lag 0), else None."""
    nodes = w.raft_nodes()
    leaders = [n for n in nodes if n.leads]
    if not leaders:
        return None
    leader = max(leaders, key=lambda n: n.epoch)
    caught_up = len(nodes) == len(CONTROLLER_IDS) and all(
        n.log_end_offset == leader.log_end_offset and n.epoch == leader.epoch for n in nodes
    )
    return (leader.node, leader.epoch) if caught_up else None


async def _flap(w: World, victim: int, number: int, raft: RaftEvents) -> None:
    """Cut `victim` off from every node until it has timed out twice, heal, and wait until it is caught up."""
    w.network.partition([victim], [n for n in (*CONTROLLER_IDS, *BROKER_IDS) if n != victim])
    cut_at = now()
    created = w._in_client(w._create_topic(f"flap-{number}"))
    await wait(w, f"flap {number}: the two others commit topic flap-{number} without controller {victim}", created.done)
    enough = disruptive_controller.TIMEOUTS_PER_CUT
    await wait(
        w,
        f"flap {number}: controller {victim} times out {enough} times",
        lambda: len(raft.named(TIMEOUTS, victim, cut_at)) >= enough,
    )
    w.network.heal()
    await wait(w, f"flap {number}: the cut heals; controller {victim} is caught up", lambda: settled(w) is not None)


async def _disruptive_controller(w: World) -> None:
    """A voter that is not the leader is cut off and healed, three times. With pre-vote its timeouts ask at its
    own epoch and it follows the same leader again; without, each timeout raises its epoch, and once healed its
    Vote requests make the healthy leader resign: an election the quorum did not need, leaderless meanwhile."""
    raft = RaftEvents()
    w.trace.observers.append(raft.observe)
    await wait(w, "the quorum has a leader and every voter is caught up", lambda: settled(w) is not None)
    before = settled(w)
    assert before is not None
    victim = min(c for c in CONTROLLER_IDS if c != before[0])
    first_cut = now()
    for number in range(1, disruptive_controller.FLAPS + 1):
        await _flap(w, victim, number, raft)
    after = settled(w)
    elections = raft.elections(first_cut)
    observe(w, "leader_and_epoch", {"before": list(before), "after": list(after or ())})
    observe(w, "victim_timeouts", sorted({e["event"] for e in raft.named(TIMEOUTS, victim, first_cut)}))
    observe(w, "elections", {"count": elections.count, "epochs": list(elections.epochs)})
    observe(w, "leaderless_ms", elections.leaderless_ms)
    if after != before or elections.count:
        detail = f"a voter's return displaced a healthy leader: {elections.text()}, leader {before} -> {after}"
        w.violated(Violation("NoDisruptiveElection", detail))


DISRUPTIVE_CONTROLLER = scenario_story(disruptive_controller, _disruptive_controller, TopicSpec())

"""A controller that is not the active one is cut off from every node and healed, three times. Cut off, it hears
from no leader: its fetch timeout passes. With pre-vote (KIP-996) it asks the others, at its own epoch, whether they
would vote for it; nobody answers, its epoch stays, and once healed it follows the same leader again (a pre-vote
that reaches the others then is refused: they have fetched from the leader). Without it, it starts an election at
every timeout, raising its epoch each time; when the cut heals, its first Vote carries that epoch, the healthy
leader steps down to it, and the quorum holds an election it did not need, leaderless meanwhile."""

import time
from typing import NamedTuple

from minikafka.deploy.scenario import Expect, Guard, Steps, Topology
from minikafka.deploy.scenario.kraft import quorum_elections

NAME = "disruptive-controller"
TITLE = "a controller cut off and healed, again and again: KRaft pre-vote keeps the healthy leader"
GUARD = Guard(
    "minikafka.raft.pre.vote.enable", on="true", off="false",
    protects="the cut-off controller's pre-votes go unanswered or refused, its epoch stays, and the active "
    "controller and its epoch stay put through every flap",
    without="every heal forces a KRaft election: the cut-off controller's raised epoch makes the healthy leader "
    "step down",
)  # fmt: skip
TOPOLOGY = Topology(controllers=3, brokers=1, settings={"auto.leader.rebalance.enable": "false"})
FLAPS = 3
TIMEOUTS_PER_CUT = 2  # the cut lasts until the controller has timed out this many times


def active(s: Steps, since_ms: int = -1) -> tuple[int, int]:
    """The active controller and its epoch, as DescribeQuorum reports them once every follower is caught up, and
    caught up at or after `since_ms` (a heal): a fetch that slipped through as the cut began must not count."""
    quorum = s.admin.describe_quorum()
    followers = [v for v in quorum["voters"] if v["id"] != quorum["leader_id"]]
    caught_up = quorum["leader_id"] >= 0 and all(
        v["lag"] == 0 and v["last_caught_up_timestamp"] >= since_ms for v in followers
    )
    return (quorum["leader_id"], quorum["leader_epoch"]) if caught_up else (-1, -1)


def settled(s: Steps, action: str, expect: str | Expect, since_ms: int = -1) -> tuple[int, int]:
    leader = s.wait_for(
        action,
        lambda: found if (found := active(s, since_ms))[0] >= 0 else None,
        expect,
        deadline_s=30,
        observed=lambda found: f"active controller {found[0]}, epoch {found[1]}, every voter caught up",
    )
    return leader[0], leader[1]


class Flap(NamedTuple):
    victim: int
    cut_at: str


def flap(s: Steps, number: int) -> Flap:
    """Cut a controller that is not the active one off until it has timed out, heal, wait until it is caught up.
    Chosen each time: unguarded, a cut may bite a moment after the next record reached the victim, whose complete log
    and raised epoch then win it the election the heal forces; cutting the active controller is another story."""
    victim = min(c.node_id for c in s.cluster.controllers if c.node_id != s.admin.describe_quorum()["leader_id"])
    label = f"controller-{victim}"
    s.isolate(victim, f"flap {number}: {label} hears from no node; the other two still make a quorum")
    cut_at = s.last_fault_ts
    s.create_topic(f"flap-{number}", [[1]], "the two others commit the new topic without it")
    timeouts = ("raft_prevote_started", "raft_election_started")
    s.wait_for(
        f"wait until {label} has timed out {TIMEOUTS_PER_CUT} times",
        lambda: found if len(found := s.events(timeouts, label, cut_at)) >= TIMEOUTS_PER_CUT else None,
        Expect(
            guarded="it asks for pre-votes at its own epoch, which nobody answers: its epoch stays",
            unguarded="it starts an election at each timeout, raising its epoch each time",
        ),
        deadline_s=30,
        observed=lambda found: "; ".join(f"{e['event']} epoch {e['epoch']}" for e in found),
    )
    s.heal(f"flap {number}: the cut heals")
    # DescribeQuorum's times are epoch milliseconds by the controllers' clock, which is this machine's.
    healed_ms = int(time.time() * 1000)
    settled(
        s,
        f"wait until {label} is caught up again",
        Expect(
            guarded="it follows the same leader again, at the same epoch",
            unguarded="its higher epoch displaces the leader: an election, then it catches up",
        ),
        since_ms=healed_ms,
    )
    s.quote_events(("raft_prevote_rejected", "raft_resigned", "raft_leader_elected"), "controller", limit=2)
    return Flap(victim, cut_at)


def run(s: Steps) -> None:
    leader, epoch = settled(s, "wait until the controller quorum has an active controller", "one is elected")
    flaps = [flap(s, number) for number in range(1, FLAPS + 1)]
    first_cut, victim = flaps[0].cut_at, flaps[0].victim
    victims = " and ".join(f"controller-{v}" for v in sorted({f.victim for f in flaps}))
    after = active(s)
    elections = quorum_elections(
        s.events("raft_leader_elected", "controller", first_cut), s.events("raft_resigned", "controller", first_cut)
    )
    s.promise(
        f"compare the active controller and epoch after {FLAPS} flaps of {victims} with before",
        after == (leader, epoch) and elections.count == 0,
        Expect(
            guarded="the same active controller in the same epoch: no election",
            unguarded="a new epoch after every heal: elections and leaderless time",
        ),
        f"before: controller {leader}, epoch {epoch}; after: controller {after[0]}, epoch {after[1]}; "
        f"{elections.text()}",
    )
    # The refused pre-votes (or, unguarded, the displaced leader and the forced elections) decided the run.
    if s.guarded:
        s.quote_events("raft_prevote_rejected", "controller", since=first_cut, limit=2)
        s.quote_events("raft_prevote_started", f"controller-{victim}", since=first_cut, limit=1)
    else:
        s.quote_events("raft_resigned", "controller", since=first_cut, limit=2)
        s.quote_events("raft_leader_elected", "controller", since=first_cut, limit=2)

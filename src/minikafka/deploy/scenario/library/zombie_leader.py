"""A zombie leader: a partition's leader is cut from every other node, while producers still reach it. The others
elect a new leader; the zombie, not yet knowing, answers the writes sent to it. With acks=all it can acknowledge
none (its ISR cannot follow), so nothing acknowledged is lost; with acks=1 it acknowledges them and they are
truncated when the cut heals."""

from minikafka.deploy.scenario import FAST_FAILOVER, Expect, Guard, Steps, Topology

NAME = "zombie-leader"
TITLE = "a leader cut off from the cluster keeps answering producers: acks=1 against acks=all"
GUARD = Guard(
    "acks",
    on="all",
    off="1",
    cluster_config=False,
    protects="acks=all is acknowledged only once the ISR has a write, so the zombie acknowledges nothing that is lost",
    without="acks=1 writes the zombie acknowledged during the cut are truncated after the heal: lost",
)
TOPOLOGY = Topology(settings=FAST_FAILOVER)
ZOMBIE, TOPIC = 1, "zombie"


def run(s: Steps) -> None:
    acks = -1 if s.guard_value == "all" else 1
    s.create_topic(TOPIC, [[ZOMBIE, 2, 3]], "zombie-0 is created, led by broker 1", {"min.insync.replicas": "2"})
    s.wait_isr(TOPIC, [1, 2, 3], "every replica joins the ISR")
    s.produce_to(ZOMBIE, TOPIC, 5, "broker 1 acknowledges acks=all writes with the full ISR", acks=-1, prefix="before")
    s.isolate(ZOMBIE, "broker 1 is cut from the controllers and the other brokers; clients still reach it")
    moved = s.wait_leader_change(TOPIC, ZOMBIE, "its session times out; the controller fences it and elects another")
    acknowledged = s.produce_to(
        ZOMBIE,
        TOPIC,
        10,
        Expect(
            guarded="the zombie cannot grow its ISR's high watermark: it acknowledges none",
            unguarded="the zombie still believes it leads and acknowledges every acks=1 write",
        ),
        acks=acks,
        prefix="zombie",
    )
    s.check(
        "writes the zombie acknowledged",
        (acknowledged == 0) == s.guarded,
        Expect(guarded="none", unguarded="some"),
        f"{acknowledged}",
    )
    s.produce_to(
        int(moved["leader"]), TOPIC, 5, "the new leader acknowledges acks=all writes", acks=-1, prefix="new-leader"
    )
    s.heal("the cut heals")
    s.wait_for(
        "wait until broker 1 is back in the ISR",
        lambda: s.partition_if(TOPIC, lambda p: p.leader >= 0 and ZOMBIE in p.isr),
        "broker 1 learns the new leader epoch, truncates what it alone had, catches up and rejoins",
        deadline_s=60,
        observed=lambda p: f"leader {p.leader}, ISR {p.isr}",
    )
    s.final_read(
        TOPIC,
        Expect(
            guarded="every acknowledged write is there", unguarded="the zombie's acknowledged acks=1 writes are gone"
        ),
    )

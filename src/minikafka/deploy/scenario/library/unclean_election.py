"""What unclean.leader.election.enable costs. RF 2, min.insync.replicas 1: broker 2 is killed, so broker 1 alone
acknowledges acks=all writes; then broker 1 is killed too and broker 2 returns. With unclean election off the
partition waits, leaderless, for broker 1 (the last ISR member, in the ELR), which returns with every write. With it
on, the controller elects broker 2 from outside the ISR and the writes only broker 1 had are lost."""

from minikafka.deploy.scenario import Expect, Guard, Steps, Topology

NAME = "unclean-election"
TITLE = "an out-of-sync replica elected leader: what unclean.leader.election.enable costs"
GUARD = Guard(
    "unclean.leader.election.enable",
    on="false",
    off="true",
    protects="only an ISR (or ELR) member leads, so the partition waits for one and no acknowledged write is lost",
    without="the controller elects the out-of-sync replica at once and the writes it lacked are lost",
)
TOPOLOGY = Topology(
    brokers=2,
    settings={
        "broker.session.timeout.ms": "2000",
        "broker.heartbeat.interval.ms": "300",
        "replica.lag.time.max.ms": "2000",
        "auto.leader.rebalance.enable": "false",
    },
)
TOPIC = "orders"


def run(s: Steps) -> None:
    s.create_topic(TOPIC, [[1, 2]], "orders-0 is created, led by broker 1", {"min.insync.replicas": "1"})
    s.wait_isr(TOPIC, [1, 2], "both replicas join the ISR")
    s.produce(TOPIC, 100, "both replicas have these acknowledged writes")
    s.kill(2, "broker 2 dies")
    s.wait_isr(TOPIC, [1], "broker 1 shrinks the ISR to itself")
    s.produce(TOPIC, 40, "broker 1 alone acknowledges these (min.insync.replicas=1)")
    s.kill(1, "broker 1 dies: no ISR member is left running")
    s.wait_for(
        "wait until the controller fences broker 1",
        lambda: s.fenced(1),
        "broker 1's session times out: orders-0 has no leader; broker 1, the last ISR member, is in the ELR",
        observed=lambda _: "broker 1 fenced",
    )
    s.start(2, "broker 2 returns, without the last 40 writes")
    s.wait_event("broker_unfenced", "the controller unfences broker 2", node="controller", broker_id=2)
    if s.guarded:
        leaderless = s.wait_for(
            "wait until the brokers' metadata shows orders-0 without a leader",
            lambda: s.partition_if(TOPIC, lambda p: p.leader == -1),
            "no leader: broker 2 is not in the ISR and may not lead",
            deadline_s=10,
            observed=lambda p: f"leader {p.leader}, ISR {p.isr}, ELR {p.elr}",
        )
        s.check(
            "who may lead orders-0 with only broker 2 running",
            (leaderless.isr, leaderless.elr) == ([], [1]),
            "nobody now: broker 1 waits in the ELR",
            f"ISR {leaderless.isr}, ELR {leaderless.elr}",
        )
    else:
        s.wait_for(
            "wait until broker 2 leads orders-0",
            lambda: s.partition(TOPIC).leader == 2,
            "the controller elects broker 2 from outside the ISR (UNCLEAN); the partition is RECOVERING",
            observed=lambda _: "broker 2 leads",
        )
        s.quote_events("leader_elected", node="controller", limit=1, topic=TOPIC, unclean=True)
    s.start(1, Expect(guarded="broker 1 returns with every write", unguarded="broker 1 returns"))
    s.wait_isr_size(
        TOPIC,
        2,
        Expect(
            guarded="broker 1 leads again (from the ELR) and broker 2 catches up",
            unguarded="broker 1 truncates its log to broker 2's and follows",
        ),
    )
    s.final_read(
        TOPIC,
        Expect(guarded="all 140 acknowledged writes are there", unguarded="the 40 writes only broker 1 had are gone"),
    )

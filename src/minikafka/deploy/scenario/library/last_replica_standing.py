"""The Last Replica Standing problem and KIP-966 closing it. RF 3, min.insync.replicas 2, a simulated page cache
(nothing reaches the disk before a clean stop), an acks=all producer running. The followers stop cleanly one after
the other, so the ISR shrinks to the leader alone and acks=all is refused with NOT_ENOUGH_REPLICAS; the leader then
loses power (reboot losing its unflushed data) and the others return. With Eligible Leader Replicas the follower that
stopped last is in the ELR and leads; without them (version 0, Kafka 3.x) the leader never left the ISR, leads again
with the log it has left, and acknowledged writes are lost."""

from minikafka.deploy.scenario import Expect, Guard, Steps, Topology

NAME = "last-replica-standing"
TITLE = "the last ISR member loses power: KIP-966's Eligible Leader Replicas keep its acknowledged writes"
GUARD = Guard(
    "eligible.leader.replicas.version",
    on="1",
    off="0",
    protects="a replica that left the ISR below min.insync.replicas stays eligible (ELR) and an uncleanly restarted "
    "leader leaves it, so no acknowledged acks=all write is lost",
    without="the leader, alone in the ISR, comes back with a shorter log after a power loss, leads, and the "
    "followers truncate to it: acknowledged writes are lost",
)
TOPOLOGY = Topology(
    settings={
        "broker.session.timeout.ms": "2000",
        "broker.heartbeat.interval.ms": "300",
        "replica.lag.time.max.ms": "2000",
        "auto.leader.rebalance.enable": "false",
        "log.simulate.page.cache": "true",
        "log.flush.interval.ms": "3600000",  # nothing reaches the disk unless a broker stops cleanly
    }
)
LEADER, LAST_FOLLOWER, FIRST_FOLLOWER, TOPIC = 1, 2, 3, "lrs"


def run(s: Steps) -> None:
    s.create_topic(
        TOPIC,
        [[LEADER, LAST_FOLLOWER, FIRST_FOLLOWER]],
        "lrs-0 is created, led by broker 1",
        {"min.insync.replicas": "2"},
    )
    s.wait_isr(TOPIC, [1, 2, 3], "every replica joins the ISR")
    producer = s.start_producer(TOPIC, "acks=all writes are acknowledged once the whole ISR has them")
    s.wait_for(
        "wait for 200 acknowledged writes",
        lambda: len(producer.acked) >= 200,
        "the full ISR acknowledges",
        observed=lambda _: f"{len(producer.acked)} acknowledged",
    )
    s.stop(FIRST_FOLLOWER, "broker 3 shuts down cleanly: the controller removes it from the ISR")
    s.wait_isr(TOPIC, [LEADER, LAST_FOLLOWER], "ISR [1, 2]: still min.insync.replicas, writes go on")
    acked = len(producer.acked)
    s.wait_for(
        "wait for 200 more acknowledged writes",
        lambda: len(producer.acked) >= acked + 200,
        "ISR [1, 2] acknowledges acks=all",
        observed=lambda _: f"{len(producer.acked)} acknowledged",
    )
    s.stop(
        LAST_FOLLOWER,
        Expect(
            guarded="broker 2 shuts down cleanly; leaving an ISR below min.insync.replicas it enters the ELR",
            unguarded="broker 2 shuts down cleanly; the ISR shrinks to the leader alone",
        ),
    )
    during = s.wait_isr(TOPIC, [LEADER], "the leader is alone in the ISR")
    s.wait_event(
        "produce_rejected_not_enough_replicas",
        "acks=all is refused with NOT_ENOUGH_REPLICAS: nothing is acknowledged that only the leader holds",
        node=f"broker-{LEADER}",
    )
    s.check(
        "the ELR of lrs-0 with the leader alone in the ISR",
        during.elr == ([LAST_FOLLOWER] if s.guarded else []),
        Expect(guarded="ELR [2]", unguarded="no ELR (version 0)"),
        f"ISR {during.isr}, ELR {during.elr}",
    )
    s.stop_producer("the producer stops")
    power_loss(s)


def power_loss(s: Steps) -> None:
    """The leader, alone in the ISR, loses power; the followers return."""
    s.reboot(LEADER, "broker 1 loses power: its unflushed log tail is gone", lose_unflushed=True)
    s.wait_for(
        "wait until broker 1's new incarnation registers",
        lambda: len({e["incarnation_id"] for e in s.events("broker_registered", "controller", broker_id=LEADER)}) >= 2,
        Expect(
            guarded="the controller registers the restarted broker; an unclean shutdown takes it out of the ELR",
            unguarded="the controller registers the restarted broker, still the ISR's only member",
        ),
        observed=lambda _: "registered again",
    )
    s.start(LAST_FOLLOWER, "broker 2 returns")
    s.start(FIRST_FOLLOWER, "broker 3 returns")
    after = s.wait_isr_size(
        TOPIC,
        3,
        Expect(
            guarded="broker 2 is elected from the ELR when it is unfenced; the others catch up to it",
            unguarded="broker 1, never out of the ISR, leads with its shorter log; the others truncate to it",
        ),
    )
    s.check(
        "who leads after the power loss",
        after.leader == (LAST_FOLLOWER if s.guarded else LEADER),
        Expect(guarded="broker 2", unguarded="broker 1"),
        f"broker {after.leader}",
    )
    s.quote_events("leader_elected", node="controller", since=during_ts(s), limit=2, topic=TOPIC)
    s.final_read(
        TOPIC,
        Expect(
            guarded="every acknowledged write is there",
            unguarded="the acknowledged writes broker 1 had not flushed are gone",
        ),
    )


def during_ts(s: Steps) -> str:
    """Since the power loss: the elections that chose the next leader."""
    reboots = [e for e in s.events("fault_injected", "faults") if e.get("fault") == "reboot"]
    return str(reboots[-1]["ts"]) if reboots else ""

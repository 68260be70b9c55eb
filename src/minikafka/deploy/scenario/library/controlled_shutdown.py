"""Controlled shutdown: a broker asked to stop (SIGTERM) first asks the controller to move its leaderships, and
exits only once it has; a broker killed outright keeps leading on paper until its session times out. With an acks=all
producer running and min.insync.replicas 2, neither loses an acknowledged write; the controlled shutdown's promise is
that leadership moves before the broker exits, in one leader change."""

from minikafka.deploy.scenario import FAST_FAILOVER, Expect, Guard, Steps, Topology

NAME = "controlled-shutdown"
TITLE = "leadership moves before a stopping broker exits"
GUARD = Guard(
    "shutdown",
    on="controlled",
    off="kill",
    cluster_config=False,
    protects="the controller moves the broker's leaderships away (reason controlled_shutdown) before it exits",
    without="the leader is SIGKILLed: its leaderships move only when its session times out (fence:session_timeout)",
)
TOPOLOGY = Topology(settings=FAST_FAILOVER)
LEADER, TOPIC = 1, "orders"


def run(s: Steps) -> None:
    s.create_topic(TOPIC, [[LEADER, 2, 3]], "orders-0 is created, led by broker 1", {"min.insync.replicas": "2"})
    s.wait_isr(TOPIC, [1, 2, 3], "every replica joins the ISR")
    producer = s.start_producer(TOPIC, "acks=all writes are acknowledged")
    s.wait_for(
        "wait for 200 acknowledged writes",
        lambda: len(producer.acked) >= 200,
        "the full ISR acknowledges",
        observed=lambda _: f"{len(producer.acked)} acknowledged",
    )
    if s.guarded:
        s.stop(LEADER, "broker 1 asks to shut down; the controller moves its leadership, then lets it go")
    else:
        s.kill(LEADER, "broker 1 dies at once")
    moved = s.wait_leader_change(
        TOPIC,
        LEADER,
        Expect(
            guarded="one leader change, reason controlled_shutdown, before broker 1 exits",
            unguarded="the leader moves once broker 1's session times out (fence:session_timeout)",
        ),
    )
    s.promise(
        "leadership moved by the controlled shutdown",
        moved.get("reason") == "controlled_shutdown",
        "the leader_elected decision's reason is controlled_shutdown",
        f"reason {moved.get('reason')}",
    )
    s.quote_events("controlled_shutdown_granted", node=f"broker-{LEADER}", limit=1)  # the broker exits after this
    changes = [e for e in s.events("leader_elected", "controller", s.last_fault_ts, topic=TOPIC)]
    s.promise(
        "leader changes of orders-0 after the fault",
        len(changes) == 1,
        "exactly one: straight to a live replica",
        f"{len(changes)}: " + ", ".join(f"{e.get('leader')} ({e.get('reason')})" for e in changes),
    )
    acked = len(producer.acked)
    s.wait_for(
        "wait for 200 more acknowledged writes",
        lambda: len(producer.acked) >= acked + 200,
        "the new leader with ISR of two acknowledges",
        deadline_s=60,
        observed=lambda _: f"{len(producer.acked)} acknowledged",
    )
    s.stop_producer("the producer stops")
    s.start(LEADER, "broker 1 returns")
    s.wait_isr(TOPIC, [1, 2, 3], "broker 1 catches up and rejoins the ISR", deadline_s=60)
    s.final_read(TOPIC, "every acknowledged write is there")

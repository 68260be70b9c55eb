"""KIP-903, in six steps: leader A holds its AlterPartition that adds B; B is killed and its disk wiped; B registers
again with a new broker epoch; A's held request, naming B's old epoch, reaches the controller; then A fails. With
the broker-epoch check the controller answers INELIGIBLE_REPLICA and B never leads with its empty log; without it
the stale request puts B in the ISR, B leads, and acknowledged writes are lost."""

from minikafka.deploy.scenario import Expect, Guard, Steps, Topology

NAME = "kip-903"
TITLE = "a stale broker epoch in AlterPartition re-admits a wiped replica to the ISR"
GUARD = Guard(
    "alter.partition.broker.epoch.check",
    on="true",
    off="false",
    protects="the controller refuses an ISR member whose broker epoch is not its current registration's, and no "
    "acknowledged acks=all write is lost",
    without="the wiped broker joins the ISR on its old epoch, leads with a short log, and acknowledged writes are lost",
)
TOPOLOGY = Topology(
    brokers=2,
    settings={
        "broker.session.timeout.ms": "2000",
        "broker.heartbeat.interval.ms": "300",
        "replica.lag.time.max.ms": "1500",
        "replica.fetch.max.bytes": "1",  # one batch per fetch: a wiped follower needs seconds to catch up
    },
)
A, B, TOPIC, RECORDS = 1, 2, "kip903", 3000


def run(s: Steps) -> None:
    s.create_topic(TOPIC, [[A, B]], "the controller creates kip903-0 led by A", {"min.insync.replicas": "1"})
    s.wait_isr(TOPIC, [A, B], "B fetches up to A's log end and joins the ISR")
    s.pause(B, "B stops fetching")
    s.wait_isr(TOPIC, [A], "A shrinks the ISR to itself once B lags for replica.lag.time.max.ms")
    s.produce(TOPIC, RECORDS, "A alone acknowledges acks=all writes (min.insync.replicas=1)", one_batch_per_record=True)
    s.hold_alter_partition(A, "step 1: A's next AlterPartition is held, as if delayed in the network")
    s.resume(B, "B fetches again and catches up")
    s.wait_event(
        "alter_partition_held",
        "A proposes ISR [A, B] with B's current broker epoch; the request is held",
        node=f"broker-{A}",
        deadline_s=60,
    )
    old_epoch = s.broker_epoch(B)
    s.reboot(B, "steps 2-4: B fails and loses its disk; it comes back empty", wipe_disk=True)
    s.wait_for(
        "wait until B is registered again with a new broker epoch and unfenced",
        lambda: (epoch := s.broker_epoch(B)) > old_epoch and not s.fenced(B) and epoch,
        "step 5: B registers with a new broker epoch; the controller unfences it",
        observed=lambda epoch: f"broker epoch {old_epoch} -> {epoch}",
    )
    s.quote_events("broker_registered", node="controller", limit=1, broker_id=B)
    s.release_alter_partition(
        A, "step 6: A's stale request, naming B's old broker epoch, reaches the controller", keep_holding=True
    )
    s.wait_event(
        ("alter_partition_accepted", "alter_partition_rejected"),
        Expect(
            guarded="the controller answers INELIGIBLE_REPLICA: B's requested broker epoch is not its registration's",
            unguarded="the controller accepts the stale ISR [A, B]: nothing compares B's broker epochs",
        ),
        node="controller",
        topic=TOPIC,
    )
    s.kill(A, "A fails before B has re-replicated the log")
    s.wait_for(
        "wait until the controller fences A",
        lambda: s.fenced(A),
        "A's session times out; it is fenced",
        observed=lambda _: "A fenced",
    )
    during = s.partition(TOPIC)
    s.check(
        "who leads kip903-0 while A is down",
        (during.leader, during.elr) == ((-1, [A]) if s.guarded else (B, during.elr)),
        Expect(
            guarded="no leader: A is the last replica standing (in the ELR); B, not in the ISR, may not lead",
            unguarded="B leads: it is in the ISR, with the log it re-fetched since its disk was wiped",
        ),
        f"leader {during.leader}, ISR {during.isr}, ELR {during.elr}",
    )
    s.quote_events("leader_elected", node="controller", topic=TOPIC, limit=1)
    s.start(A, "A restarts")
    s.wait_for(
        "wait until kip903-0 has a leader and A is back in the ISR",
        lambda: s.partition_if(TOPIC, lambda p: p.leader >= 0 and A in p.isr),
        Expect(
            guarded="A is elected again from the ELR and keeps every acknowledged write",
            unguarded="A truncates to B's log and rejoins the ISR",
        ),
        deadline_s=60,
        observed=lambda p: f"leader {p.leader}, ISR {p.isr}",
    )
    s.final_read(
        TOPIC, Expect(guarded="every acknowledged write is there", unguarded="the writes B never re-fetched are gone")
    )

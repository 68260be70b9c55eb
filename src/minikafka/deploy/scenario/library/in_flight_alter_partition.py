"""A late AlterPartition against newer metadata. Leader 1 proposes adding broker 3 back to the ISR, at partition
epoch N; the request is held in flight. Meanwhile broker 3 stops fetching again (paused; its session is long, so it
stays unfenced), and the controller reorders the replicas to [1, 3, 2]: partition epoch N+1, same leader and ISR
[1, 2]. Brokers 1 and 2 acknowledge acks=all writes broker 3 never gets. Then the held request arrives. With the
partition-epoch check the controller answers INVALID_UPDATE_VERSION; without it the stale ISR [1, 2, 3] is
committed, and when broker 1 shuts down the controller elects broker 3 (running again, cut off from the other
brokers), first in replica order, which lacks the writes: they are lost."""

import time

from minikafka.common.errors import ErrorCode
from minikafka.deploy.scenario import FAST_FAILOVER, Expect, Guard, Steps, Topology
from minikafka.deploy.scenario.clients import produce_raw

NAME = "in-flight-alter-partition"
TITLE = "a late AlterPartition, computed at an older partition epoch, would restore a stale ISR"
GUARD = Guard(
    "minikafka.alter.partition.partition.epoch.check",
    on="true",
    off="false",
    protects="the controller refuses an AlterPartition whose partition epoch is older than the partition's "
    "(INVALID_UPDATE_VERSION), so only in-sync replicas are in the ISR and no acknowledged write is lost",
    without="the stale ISR puts an out-of-sync replica back in the ISR; elected, it loses acknowledged writes",
)
# A session longer than the story, even on a loaded machine: broker 3, paused while out of sync, must stay registered
# and unfenced, which is what lets the stale ISR name it (a fenced broker is refused as INELIGIBLE_REPLICA).
TOPOLOGY = Topology(controllers=1, brokers=3, settings={**FAST_FAILOVER, "broker.session.timeout.ms": "90000"})
LEADER, SECOND, LATE, TOPIC = 1, 2, 3, "orders"


def run(s: Steps) -> None:
    s.create_topic(
        TOPIC, [[LEADER, SECOND, LATE]], "orders-0 is created, led by broker 1", {"min.insync.replicas": "2"}
    )
    s.wait_isr(TOPIC, [1, 2, 3], "every replica joins the ISR")
    s.produce(TOPIC, 50, "all three replicas hold these")
    s.pause(LATE, "broker 3 stops fetching (SIGSTOP; its session outlasts the story, so it stays unfenced)")
    s.wait_for(
        "send acks=1 records to leader 1 until the ISR is [1, 2]",
        lambda: write_one(s) and s.partition(TOPIC).isr == [1, 2],
        "broker 3 falls behind (an idle follower at the log end would stay in sync); leader 1 shrinks the ISR to "
        "[1, 2] once broker 3 lags for replica.lag.time.max.ms",
        observed=lambda _: "ISR [1, 2]",
    )
    s.hold_alter_partition(LEADER, "broker 1's next AlterPartition is held, as if slow in the network")
    s.resume(LATE, "broker 3 fetches again and catches up")
    s.wait_event(
        "alter_partition_held",
        "leader 1 proposes ISR [1, 2, 3] at the current partition epoch; the request is in flight",
        node=f"broker-{LEADER}",
    )
    epoch = s.partition(TOPIC).partition_epoch
    s.pause(LATE, "broker 3 stops fetching again, before the request arrives")
    s.reassign(
        TOPIC, [LEADER, LATE, SECOND], f"the controller reorders the replicas: partition epoch {epoch} -> "
        f"{epoch + 1}, same leader epoch, ISR still [1, 2]; leader 1's pending proposal is superseded",
    )  # fmt: skip
    s.produce(TOPIC, 200, "brokers 1 and 2 acknowledge these acks=all writes; broker 3 never gets them")
    s.release_alter_partition(
        LEADER, f"the held request, computed at partition epoch {epoch}, reaches the controller", keep_holding=True
    )
    s.wait_event(
        ("alter_partition_accepted", "alter_partition_rejected"),
        Expect(
            guarded=f"INVALID_UPDATE_VERSION: requested partition epoch {epoch}, current {epoch + 1}",
            unguarded=f"accepted: ISR [1, 2, 3] over partition epoch {epoch + 1}, with broker 3 missing 200 writes",
        ),
        node="controller",
        topic=TOPIC,
    )
    isr = [1, 2] if s.guarded else [1, 2, 3]
    s.wait_isr(TOPIC, isr, Expect(guarded="unchanged: [1, 2]", unguarded="broker 3 is back in the ISR, out of sync"))
    # Cut while broker 3 is stopped: its first look at the link after SIGCONT finds the cut, so it fetches nothing.
    s.cut({LATE}, {LEADER, SECOND}, "broker 3 is cut off from the other brokers (not from the controller)")
    s.resume(LATE, "broker 3 runs again, heartbeating, still without the last 200 writes")
    s.stop(LEADER, "leader 1 shuts down; the controller moves its leadership first")
    elected = s.wait_leader_change(
        TOPIC,
        LEADER,
        Expect(
            guarded="broker 2, the only other ISR member, leads with every acknowledged write",
            unguarded="broker 3, first in replica order among the ISR, leads without the last 200 writes",
        ),
    )
    s.check(
        "who leads orders-0 after broker 1 stops",
        elected.get("leader") == (SECOND if s.guarded else LATE),
        Expect(guarded="broker 2", unguarded="broker 3"),
        f"broker {elected.get('leader')}",
    )
    s.heal("every cut heals")
    s.start(LEADER, "broker 1 restarts")
    s.wait_isr_size(
        TOPIC,
        3,
        Expect(
            guarded="brokers 3 and 1 catch up from broker 2",
            unguarded="brokers 2 and 1 truncate their logs to broker 3's and follow",
        ),
    )
    s.final_read(
        TOPIC,
        Expect(guarded="all 250 acknowledged writes are there", unguarded="the 200 writes broker 3 lacked are gone"),
    )


def write_one(s: Steps) -> bool:
    """One acks=1 record straight to leader 1 (traffic that leaves a cut-off follower behind, not counted)."""
    value = f"traffic-{time.monotonic_ns()}".encode()  # distinct values: analyze reports repeated ones
    error, _offset = produce_raw(s.cluster.node(LEADER).address, value, 1, TOPIC, timeout_s=1.0)
    return error is ErrorCode.NONE

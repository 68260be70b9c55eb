"""Stray partitions: while broker 3 is offline, a reassignment moves moved-0 off it and topic recreated is deleted
and created again under a new topic id; nobody can tell broker 3. When it comes back, its start-up stray check
compares its logs with the caught-up metadata and deletes the two it no longer hosts, then creates recreated-0 afresh
and joins its ISR. Without the check the stale logs stay on its disk for good: moved-0's is never deleted, and the
old recreated-0 directory (the old topic id in its partition.metadata) stops broker 3 from hosting the new topic's
replica (INCONSISTENT_TOPIC_ID), so recreated-0 stays under-replicated."""

from pathlib import Path

from minikafka.deploy.scenario import FAST_FAILOVER, Expect, Guard, Steps, Topology
from minikafka.storage.checkpoint import CheckpointError
from minikafka.storage.partition_log import PARTITION_METADATA_FILE, PartitionMetadataFile

NAME = "stray-partitions"
TITLE = "a broker offline while its replica is moved away and its topic deleted keeps stale logs unless checked"
GUARD = Guard(
    "minikafka.stray.partition.check.enable",
    on="true",
    off="false",
    protects="at start-up a broker deletes every log the caught-up metadata does not assign to it, and then hosts "
    "the re-created topic's replica",
    without="the stale logs stay on the returning broker's disk, and the re-created topic's replica cannot open "
    "there (INCONSISTENT_TOPIC_ID): under-replicated for good",
)
TOPOLOGY = Topology(controllers=1, brokers=3, settings=FAST_FAILOVER)
OFFLINE, MOVED, RECREATED = 3, "moved", "recreated"


def run(s: Steps) -> None:
    s.create_topic(MOVED, [[1, OFFLINE]], "moved-0 is created on brokers 1 and 3")
    s.create_topic(RECREATED, [[2, OFFLINE]], "recreated-0 is created on brokers 2 and 3")
    s.wait_isr(MOVED, [1, OFFLINE], "broker 3 joins moved-0's ISR")
    s.wait_isr(RECREATED, [2, OFFLINE], "broker 3 joins recreated-0's ISR")
    s.produce(MOVED, 50, "both replicas of moved-0 hold these")
    s.produce(RECREATED, 50, "both replicas of the first recreated-0 hold these")
    s.stop(OFFLINE, "broker 3 shuts down; its logs stay on its disk")
    s.wait_for(
        "wait until the controller fences broker 3",
        lambda: s.fenced(OFFLINE),
        "broker 3 is fenced and leaves both ISRs",
        observed=lambda _: "broker 3 fenced",
    )
    s.reassign(MOVED, [1, 2], "the controller moves moved-0 to [1, 2]; broker 3, offline, is not told to drop it")
    old_id = s.delete_topic(RECREATED, "the controller removes recreated; broker 3, offline, is not told")
    s.create_topic(RECREATED, [[2, OFFLINE]], "recreated is created again, under a new topic id, on brokers 2 and 3")
    s.produce(RECREATED, 20, "broker 2, the only replica in the ISR, acknowledges the new topic's first writes")
    s.start(OFFLINE, "broker 3 returns with moved-0's and the old recreated-0's logs on its disk")
    s.wait_event(
        "broker_unfenced", "broker 3 catches up with the metadata and is unfenced", node="controller", broker_id=OFFLINE
    )
    s.wait_for(
        "wait for broker 3's start-up stray check on both logs",
        lambda: len(s.events(("stray_partition_deleted", "stray_partition_kept"), f"broker-{OFFLINE}")) >= 2,
        Expect(
            guarded="it deletes both: moved-0 is not its replica any more, recreated-0's topic id is gone",
            unguarded="it only reports both (stray_partition_kept) and leaves them on disk",
        ),
        observed=lambda _: "checked",
    )
    s.quote_events(("stray_partition_deleted", "stray_partition_kept"), node=f"broker-{OFFLINE}")
    if s.guarded:
        s.wait_isr(RECREATED, [2, OFFLINE], "broker 3 creates the new recreated-0 log, catches up and joins the ISR")
    else:
        s.wait_event(
            "partition_topic_id_mismatch",
            "broker 3 cannot open the new recreated-0: its directory holds the old topic id",
            node=f"broker-{OFFLINE}",
        )
    now = s.partition(RECREATED)
    s.check(
        "is broker 3 in the re-created topic's ISR",
        (OFFLINE in now.isr) == s.guarded,
        Expect(guarded="yes", unguarded="no: recreated-0 stays under-replicated while broker 3 runs"),
        f"replicas {now.replicas}, ISR {now.isr}",
    )
    stale = stray_logs(s, Path(s.cluster.node(OFFLINE).data_dir), {MOVED: [1, 2], RECREATED: now.replicas}, old_id)
    s.promise(
        "broker 3 holds no log the metadata does not assign to it",
        not stale,
        "none: the metadata is the only record of which replicas a broker hosts",
        "; ".join(stale) or "none",
    )
    s.final_read(MOVED, "moved-0 keeps its 50 acknowledged writes on brokers 1 and 2")
    s.final_read(RECREATED, "the new recreated-0 holds only its own 20 acknowledged writes")


def stray_logs(s: Steps, data_dir: Path, replicas: dict[str, list[int]], old_id: str) -> list[str]:
    """Broker 3's partition directories the metadata does not assign to it, each with why."""
    ids = {t.name: t.topic_id for t in s.admin.describe_topics(list(replicas))}
    found = []
    for directory in sorted(p for p in data_dir.iterdir() if p.is_dir() and p.name.rpartition("-")[0] in replicas):
        topic = directory.name.rpartition("-")[0]
        try:
            stored = PartitionMetadataFile(directory / PARTITION_METADATA_FILE).read()
        except CheckpointError:
            stored = None
        if stored != ids.get(topic):
            old = " (the deleted topic's)" if stored == old_id else ""
            found.append(f"{directory.name}: topic id {stored}{old}, the metadata's is {ids.get(topic)}")
        elif OFFLINE not in replicas[topic]:
            found.append(f"{directory.name}: not a replica (replicas {replicas[topic]})")
    return found

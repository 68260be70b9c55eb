"""KIP-848's consumer group protocol through the Kafka listener, with confluent-kafka (`group.protocol=consumer`)
against real processes: members split a topic without overlap, a joining member takes partitions only once their
owner gave them up, every record is read, commits are fenced by member epoch, a classic member cannot join, and a
SIGKILLed coordinator's successor goes on with the group's epochs and assignments."""

from __future__ import annotations

import asyncio
import datetime
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster
from group_topics import PARTITIONS, QUICK_GROUP_TIMINGS, create_topic, offset_commit, poll_checked, produce

from minikafka.client.consumer_groups_command import find_coordinator
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.errors import ErrorCode
from minikafka.deploy import cluster_commands
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")

OVERRIDES = {
    **QUICK_GROUP_TIMINGS,
    # A killed broker is fenced, and its leaderships (the coordinator's among them) move, within seconds.
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("consumer-protocol"), 1, 3, **OVERRIDES) as started:
        yield started


class ConsumerProtocolMember:
    """A confluent-kafka consumer of the KIP-848 protocol: the broker assigns, the client only reconciles."""

    def __init__(self, bootstrap: str, group: str, topic: str, instance: str | None = None) -> None:
        """`topic` starting with ^ is a regular expression; `instance`: a static member's group.instance.id."""
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
        if instance is not None:
            config["group.instance.id"] = instance
        self.consumer = confluent_kafka.Consumer(config)
        self.consumer.subscribe([topic])
        self.seen: list[str] = []
        self.acknowledged: list[tuple[int, int]] = []  # (partition, offset) of each commit the coordinator accepted

    def poll(self) -> None:
        message = self.consumer.poll(0.05)
        if message is not None and message.error() is None:
            self.seen.append(message.value().decode())

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def commit(self) -> bool:
        try:
            committed = self.consumer.commit(asynchronous=False)
        except confluent_kafka.KafkaException as error:
            return error.args[0].code() == confluent_kafka.KafkaError._NO_OFFSET
        self.acknowledged.extend((tp.partition, tp.offset) for tp in committed or ())
        return True

    def close(self) -> None:
        self.consumer.close()


def test_members_split_the_partitions_without_overlap_and_read_every_record(cluster: Cluster) -> None:
    topic, group = "kip848-orders", "kip848-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    members = [ConsumerProtocolMember(bootstrap, group, topic) for _ in range(2)]
    try:

        def split(sizes: list[int]) -> bool:
            held = poll_checked(members)
            return sorted(len(h) for h in held) == sizes and set().union(*held) == set(range(PARTITIONS))

        eventually(lambda: split([2, 2]), 60, "two members with two partitions each", interval_s=0)
        first = [f"first-{i}" for i in range(200)]
        produce(bootstrap, topic, first)

        def read(values: list[str]) -> bool:
            poll_checked(members)
            return set().union(*(m.seen for m in members)) >= set(values)

        eventually(lambda: read(first), 60, "every record read by the two members", interval_s=0)
        eventually(lambda: all(m.commit() for m in members), 30, "both members committed", interval_s=0.2)
        members.append(ConsumerProtocolMember(bootstrap, group, topic))
        eventually(lambda: split([1, 1, 2]), 60, "the third member given a partition", interval_s=0)
        later = [f"later-{i}" for i in range(120)]
        produce(bootstrap, topic, later)
        eventually(lambda: read(later), 60, "every later record read by the three members", interval_s=0)
        assert members[2].seen, "the third member read its partition"
        described = eventually(lambda: stable_description(cluster, group), 30, "the tool shows a Stable group")
        assert (described["protocol_type"], described["protocol"]) == ("consumer", "uniform")
        assigned = [(a["topic"], a["partition"]) for m in described["members"] for a in m["assignment"]]
        assert sorted(assigned) == [(topic, p) for p in range(PARTITIONS)]
        assert {m["member_epoch"] for m in described["members"]} == {described["assignment_epoch"]}
        assert group in {g["group"] for g in json.loads(tool(cluster, "--list", "--json").stdout)}
        refused = tool(cluster, "--delete", "--group", group)
        assert refused.returncode != 0 and "NON_EMPTY_GROUP" in refused.stderr
        # A classic member may join a consumer group (a mixed group), but not without a consumer subscription.
        assert asyncio.run(classic_join(bootstrap, group)) == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert asyncio.run(member_commit(bootstrap, group, topic, "gone", 3)) == ErrorCode.UNKNOWN_MEMBER_ID
        member = described["members"][0]
        stale = asyncio.run(member_commit(bootstrap, group, topic, member["member_id"], member["member_epoch"] + 5))
        assert stale == ErrorCode.STALE_MEMBER_EPOCH
    finally:
        for member in members:
            member.close()


def test_a_sigkilled_coordinators_successor_keeps_the_epochs_and_assignments_and_no_commit_is_lost(
    cluster: Cluster,
) -> None:
    """The group's records are replayed by the broker that takes over __consumer_offsets: the members go on at
    their epochs (a coordinator without them would answer UNKNOWN_MEMBER_ID and the group would start over at
    epoch 1), no partition is held by two members at any moment, every acknowledged record is read and the
    commits accepted by either coordinator never go back."""
    topic, group = "kip848-failover", "kip848-failover-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    members = [ConsumerProtocolMember(bootstrap, group, topic) for _ in range(3)]
    victim = None
    try:

        def holding(sizes: list[int]) -> bool:
            held = poll_checked(members)
            return sorted(len(h) for h in held) == sizes and set().union(*held) == set(range(PARTITIONS))

        eventually(lambda: holding([1, 1, 2]), 60, "three members holding the partitions", interval_s=0)
        members.pop().close()  # a leave: the group epoch moves past what two fresh joins would give
        eventually(lambda: holding([2, 2]), 60, "two members with two partitions each", interval_s=0)
        first = [f"first-{i}" for i in range(200)]
        produce(bootstrap, topic, first)
        eventually(lambda: read_all(members, first), 60, "every record read by the two members", interval_s=0)
        eventually(lambda: all(m.commit() for m in members), 30, "both members committed", interval_s=0.2)
        before = eventually(lambda: settled(cluster, group, 2), 30, "a Stable group of two")
        victim = before["coordinator"]
        Faults(cluster).kill(victim)
        later = [f"later-{i}" for i in range(200)]
        produce(bootstrap, topic, later)
        eventually(lambda: read_all(members, later), 90, "every later record read", interval_s=0)

        def committed_at_successor() -> dict | None:
            poll_checked(members)
            if not all(m.commit() for m in members):
                return None
            described = settled(cluster, group, 2)
            return described if described is not None and described["coordinator"] != victim else None

        after = eventually(committed_at_successor, 90, "commits accepted by the new coordinator", interval_s=0.2)
        assert after["group_epoch"] == before["group_epoch"] >= 4
        epochs = {m["member_id"]: m["member_epoch"] for m in after["members"]}
        assert epochs == {m["member_id"]: m["member_epoch"] for m in before["members"]}
        committed = {p["partition"]: p["current_offset"] for p in after["partitions"]}
        assert committed == {p: 100 for p in range(PARTITIONS)}, committed
        for partition in range(PARTITIONS):
            acked = [offset for m in members for p, offset in m.acknowledged if p == partition]
            assert acked and max(acked) == 100, (partition, acked)
        for member in members:
            for partition in range(PARTITIONS):
                own = [offset for p, offset in member.acknowledged if p == partition]
                assert own == sorted(own), f"partition {partition}: acknowledged commits went back: {own}"
    finally:
        for member in members:
            member.close()
        if victim is not None:
            Faults(cluster).start(victim)
            with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
                eventually(
                    lambda: all(victim in p.isr for p in admin.describe_topics(["__consumer_offsets"])[0].partitions),
                    60,
                    f"broker {victim} back in every __consumer_offsets ISR",
                )


def test_a_regex_subscription_takes_new_matching_topics_and_a_static_member_comes_back_to_its_partitions(
    cluster: Cluster,
) -> None:
    """librdkafka sends the regex to the coordinator, which resolves it (a topic created later joins the
    subscription); a static member that closes keeps its place, and its next instance gets the same partitions
    without the other member's partitions moving."""
    group = "kip848-regex-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, "kip848-regex-a")
    create_topic(cluster, "kip848-unmatched")
    members = [ConsumerProtocolMember(bootstrap, group, "^kip848-regex-.*", instance=i) for i in ("s1", "s2")]
    try:

        def topics_held(expected: set[str]) -> list[set[tuple[str, int]]] | None:
            held = []
            for member in members:
                member.poll()
                held.append({(tp.topic, tp.partition) for tp in member.consumer.assignment()})
            owned = [tp for h in held for tp in h]
            assert len(owned) == len(set(owned)), f"a partition held by two members at once: {held}"
            whole = {(t, p) for t in expected for p in range(PARTITIONS)}
            return held if set(owned) == whole and all(held) else None

        eventually(lambda: topics_held({"kip848-regex-a"}), 60, "the regex's topic split", interval_s=0)
        create_topic(cluster, "kip848-regex-b")
        both = {"kip848-regex-a", "kip848-regex-b"}
        before = eventually(lambda: topics_held(both), 60, "the new matching topic assigned", interval_s=0)
        described = eventually(lambda: settled(cluster, group, 2), 30, "a Stable group of two")
        assert {m["group_instance_id"] for m in described["members"]} == {"s1", "s2"}
        members[1].close()  # a static member's close is a leave with epoch -2: it keeps its place

        def released() -> dict | None:
            result = tool(cluster, "--describe", group, "--json")
            epochs = {m["group_instance_id"]: m["member_epoch"] for m in json.loads(result.stdout)["members"]}
            return epochs if epochs.get("s2") == -2 else None

        eventually(released, 30, "s2 released at epoch -2, still a member")
        members[0].poll()
        assert {(tp.topic, tp.partition) for tp in members[0].consumer.assignment()} == before[0]
        members[1] = ConsumerProtocolMember(bootstrap, group, "^kip848-regex-.*", instance="s2")
        after = eventually(lambda: topics_held(both), 60, "the static member back", interval_s=0)
        assert after == before, "a static member's return moved partitions"
    finally:
        for member in members:
            member.close()


def test_minikafka_consume_with_the_consumer_protocol_splits_the_work_and_resumes(cluster: Cluster) -> None:
    """`minikafka consume --group G --group-protocol consumer`: two members read every record between them, commit
    at their member epochs, and a later member resumes where the group stopped."""
    topic, group = "kip848-own-orders", "kip848-own-readers"
    create_topic(cluster, topic)
    first = [f"first-{i}" for i in range(200)]
    produce(cluster.kafka_bootstrap_servers, topic, first)

    def member() -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "minikafka.launcher", "consume", topic, "--dir", str(cluster.run_dir)]
        command += ["--group", group, "--group-protocol", "consumer", "--from-beginning", "--json"]
        command += ["--timeout-ms", "3000"]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    outputs = [process.communicate(timeout=120) for process in [member(), member()]]
    records = [json.loads(line) for out, _ in outputs for line in out.splitlines()]
    records = [r for r in records if r.get("type") is None]
    assert set(first) <= {r["value"] for r in records}, [err for _, err in outputs]
    assert all(r["group"] == group for r in records)
    assert all("epoch" in err for _, err in outputs), [err for _, err in outputs]
    later = [f"later-{i}" for i in range(40)]
    produce(cluster.kafka_bootstrap_servers, topic, later)
    out, err = member().communicate(timeout=120)
    resumed = [json.loads(line)["value"] for line in out.splitlines() if json.loads(line).get("type") is None]
    assert sorted(resumed) == sorted(later), err


def read_all(members: list[ConsumerProtocolMember], values: list[str]) -> bool:
    poll_checked(members)
    return set().union(*(m.seen for m in members)) >= set(values)


def settled(cluster: Cluster, group: str, size: int) -> dict | None:
    """The group's description once Stable with `size` members."""
    result = tool(cluster, "--describe", group, "--json")
    if result.returncode != 0:
        return None  # the coordinator is moving
    described = json.loads(result.stdout)
    return described if described["state"] == "Stable" and len(described["members"]) == size else None


def tool(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return minikafka("consumer-groups", "--bootstrap-server", cluster.kafka_bootstrap_servers, *args)


def stable_description(cluster: Cluster, group: str) -> dict | None:
    result = tool(cluster, "--describe", group, "--json")
    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    return described if described["state"] == "Stable" and len(described["members"]) == 3 else None


async def classic_join(bootstrap: str, group: str) -> ErrorCode:
    """A classic JoinGroup for the id a consumer-protocol group holds, with no subscription in its metadata."""
    client = KafkaWireClient(bootstrap.split(","))
    try:
        _, address = await find_coordinator(client, group, 15)
        cls = request_class(11, 5)
        protocol = nested(cls, "JoinGroupRequestProtocol")(name="range", metadata=b"")
        body = cls(
            group_id=group,
            session_timeout=datetime.timedelta(seconds=6),
            rebalance_timeout=datetime.timedelta(seconds=6),
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(protocol,),
        )
        response = await client.connection(address).send(body)
        return ErrorCode.of(response.error_code)
    finally:
        await client.close()


async def member_commit(bootstrap: str, group: str, topic: str, member_id: str, epoch: int) -> ErrorCode:
    """An OffsetCommit v9 as a consumer-protocol member at `epoch`."""
    return await offset_commit(bootstrap, group, topic, member_id, epoch, version=9)

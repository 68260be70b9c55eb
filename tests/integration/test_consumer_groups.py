"""Consumer groups through the Kafka listener, with unmodified clients against a 3+3 cluster of real processes:
members split a topic's partitions, commit, and a later member resumes at the committed offsets."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Protocol, TypeVar

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster
from group_topics import PARTITIONS, create_topic, offset_commit, produce

from minikafka.common.errors import ErrorCode
from minikafka.deploy import cluster_commands
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
T = TypeVar("T")

GROUP_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
    # A killed broker is fenced, and its leaderships move, within seconds.
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("consumer-groups"), 3, 3, **GROUP_OVERRIDES) as started:
        yield started


class Member(Protocol):
    """One group member of some client library, driven from this thread."""

    def poll(self) -> list[str]: ...
    def assigned(self) -> int: ...
    def commit(self) -> bool: ...
    def close(self) -> None: ...


class ConfluentMember:
    def __init__(self, bootstrap: str, group: str, topic: str, instance: str | None = None) -> None:
        """`instance`: a static member's group.instance.id."""
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "heartbeat.interval.ms": 300,
            "session.timeout.ms": 6000,
        }
        if instance is not None:
            config["group.instance.id"] = instance
        self.consumer = confluent_kafka.Consumer(config)
        self.consumer.subscribe([topic])
        self.acknowledged: list[dict[int, int]] = []  # each successful commit: partition -> offset

    def poll(self) -> list[str]:
        message = self.consumer.poll(0.1)
        return [message.value().decode()] if message is not None and message.error() is None else []

    def assigned(self) -> int:
        return len(self.consumer.assignment())

    def commit(self) -> bool:
        """A commit during a rebalance is refused (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION): retried."""
        try:
            committed = self.consumer.commit(asynchronous=False)
        except confluent_kafka.KafkaException as error:
            return error.args[0].code() == confluent_kafka.KafkaError._NO_OFFSET
        # Partitions without a position (offset -1001) are not sent in the commit.
        self.acknowledged.append(
            {tp.partition: tp.offset for tp in committed or () if tp.error is None and tp.offset >= 0}
        )
        return True

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonMember:
    """A kafka-python consumer polled without pause by a thread of its own, as an application runs one.

    kafka-python 3.0 drops a JoinGroup/SyncGroup round that completes while no poll() is waiting on it and starts
    a new one. Two members polled in turn from one thread each wait half the time, so the leader rejoined after
    nearly every SyncGroup and the group never settled (seen under load, 149 generations).
    """

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        import kafka

        self.consumer = kafka.KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap.split(","),
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            heartbeat_interval_ms=300,
            session_timeout_ms=6000,
        )
        self.polled = threading.Condition()  # guards records and assignment; notified after every poll
        self.records: list[str] = []
        self.assignment = 0
        self.commits: queue.Queue[queue.Queue[bool]] = queue.Queue()  # each request carries its answer's queue
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"kafka-python-{group}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import kafka.errors

        while not self.stopping.is_set():
            batches = self.consumer.poll(timeout_ms=100)
            with self.polled:
                self.records.extend(record.value.decode() for records in batches.values() for record in records)
                self.assignment = len(self.consumer.assignment())
                self.polled.notify_all()
            while not self.commits.empty():
                answer = self.commits.get()
                try:
                    self.consumer.commit()
                except kafka.errors.KafkaError:
                    answer.put(False)
                else:
                    answer.put(True)
        self.consumer.close()

    def poll(self) -> list[str]:
        with self.polled:
            self.polled.wait_for(lambda: self.records, timeout=0.1)
            read, self.records = self.records, []
        return read

    def assigned(self) -> int:
        with self.polled:
            return self.assignment

    def commit(self) -> bool:
        answer: queue.Queue[bool] = queue.Queue()
        self.commits.put(answer)
        return answer.get(timeout=60)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=60)


class AiokafkaMember:
    """An aiokafka consumer on an event loop of its own thread, so it heartbeats whatever the test is doing (a
    producer's flush, another member's poll), as an application's consumer does."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        import aiokafka

        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=f"aiokafka-{group}", daemon=True)
        self._thread.start()

        async def start() -> aiokafka.AIOKafkaConsumer:
            consumer = aiokafka.AIOKafkaConsumer(
                topic,
                bootstrap_servers=bootstrap,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                heartbeat_interval_ms=300,
                session_timeout_ms=6000,
            )
            await consumer.start()
            return consumer

        self.consumer = self._run(start())

    def _run(self, call: Coroutine[object, object, T]) -> T:
        return asyncio.run_coroutine_threadsafe(call, self.loop).result(timeout=60)

    def poll(self) -> list[str]:
        batches = self._run(self.consumer.getmany(timeout_ms=100))
        return [record.value.decode() for records in batches.values() for record in records]

    def assigned(self) -> int:
        return self._run(self._assigned())

    async def _assigned(self) -> int:
        return len(self.consumer.assignment())

    def commit(self) -> bool:
        import aiokafka.errors

        try:
            self._run(self.consumer.commit())
        except aiokafka.errors.KafkaError:
            return False
        return True

    def close(self) -> None:
        try:
            self._run(self.consumer.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=30)
            self.loop.close()


def split_then_resume(cluster: Cluster, name: str, member: Callable[[str, str, str], Member]) -> None:
    """Two members split a 4-partition topic and together read every record, commit and close; a third member
    then reads only what was produced after the commits."""
    topic, group = f"{name}-orders", f"{name}-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    members = [member(bootstrap, group, topic) for _ in range(2)]
    seen: list[list[str]] = [[], []]

    def poll_all() -> None:
        for one, values in zip(members, seen, strict=True):
            values.extend(one.poll())

    try:

        def split() -> bool:
            poll_all()
            return all(one.assigned() == PARTITIONS // 2 for one in members)

        eventually(split, 60, "two members with two partitions each", interval_s=0)
        first = [f"first-{i}" for i in range(200)]
        produce(bootstrap, topic, first)

        def all_read() -> bool:
            poll_all()
            return set(seen[0]) | set(seen[1]) >= set(first)

        eventually(all_read, 60, "every record read by the group", interval_s=0)
        assert seen[0] and seen[1] and not set(seen[0]) & set(seen[1])  # each partition read by one member
        eventually(lambda: all(one.commit() for one in members), 30, "both members committed", interval_s=0.2)
    finally:
        for one in members:
            one.close()
    later = [f"later-{i}" for i in range(40)]
    produce(bootstrap, topic, later)
    third = member(bootstrap, group, topic)
    resumed: list[str] = []
    try:

        def read_later() -> bool:
            resumed.extend(third.poll())
            return len(resumed) >= len(later)

        eventually(read_later, 60, "the third member read the later records", interval_s=0)
        deadline = time.monotonic() + 1  # anything from before the commit would arrive with or before these
        while time.monotonic() < deadline:
            resumed.extend(third.poll())
        assert sorted(resumed) == sorted(later)
    finally:
        third.close()


def test_confluent_kafka_members_split_partitions_and_a_third_resumes_at_committed_offsets(cluster: Cluster) -> None:
    split_then_resume(cluster, "confluent", ConfluentMember)


def test_kafka_python_members_split_partitions_and_a_third_resumes(cluster: Cluster) -> None:
    pytest.importorskip("kafka", reason="kafka-python is in the dev extra")
    split_then_resume(cluster, "kafka-python", KafkaPythonMember)


def test_aiokafka_members_split_partitions_and_a_third_resumes(cluster: Cluster) -> None:
    pytest.importorskip("aiokafka", reason="aiokafka is in the dev extra")
    split_then_resume(cluster, "aiokafka", AiokafkaMember)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (Debian/Ubuntu: apt-get install kcat)")
def test_kcat_balanced_consumers_read_everything_and_resume(cluster: Cluster) -> None:
    topic, group = "kcat-orders", "kcat-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    first = [f"first-{i}" for i in range(100)]
    produce(bootstrap, topic, first)

    def kcat_group() -> subprocess.Popen[str]:
        # -e: exit once every assigned partition reached its end; the offsets are committed on the way out.
        command = [
            "kcat",
            "-b",
            bootstrap,
            "-G",
            group,
            "-e",
            "-q",
            "-X",
            "heartbeat.interval.ms=300",
            "-X",
            "auto.offset.reset=earliest",  # not -o: kcat's -o overrides the committed offsets
        ]
        return subprocess.Popen([*command, topic], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    readers = [kcat_group(), kcat_group()]
    outputs = [reader.communicate(timeout=90) for reader in readers]
    assert all(reader.returncode == 0 for reader in readers), [err for _, err in outputs]
    assert set(first) <= {line for out, _ in outputs for line in out.splitlines()}
    later = [f"later-{i}" for i in range(20)]
    produce(bootstrap, topic, later)
    out, err = kcat_group().communicate(timeout=90)
    assert sorted(out.splitlines()) == sorted(later), err


def describe(cluster: Cluster, group: str) -> dict:
    result = minikafka(
        "consumer-groups", "--bootstrap-server", cluster.kafka_bootstrap_servers, "--describe", group, "--json"
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_consumer_groups_tool_lists_describes_lag_to_zero_and_deletes(cluster: Cluster) -> None:
    topic, group = "lagging-orders", "lagging-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    produce(bootstrap, topic, [f"v-{i}" for i in range(80)])
    member = ConfluentMember(bootstrap, group, topic)
    read: list[str] = []
    try:
        eventually(lambda: read.extend(member.poll()) or len(read) >= 10, 60, "some records read", interval_s=0)
        eventually(member.commit, 30, "a commit", interval_s=0.2)
        partial = describe(cluster, group)
        assert partial["state"] == "Stable" and len(partial["members"]) == 1
        assert partial["members"][0]["host"].startswith("/127.")  # Kafka's form of the member's address
        assert sum(len(m["assignment"]) for m in partial["members"]) == PARTITIONS
        assert sum(p["log_end_offset"] for p in partial["partitions"]) == 80
        assert sum(p["current_offset"] or 0 for p in partial["partitions"]) == len(read) < 80
        eventually(lambda: read.extend(member.poll()) or len(set(read)) >= 80, 60, "every record", interval_s=0)
        eventually(member.commit, 30, "a commit", interval_s=0.2)
        caught_up = describe(cluster, group)
        assert [(p["partition"], p["current_offset"], p["lag"]) for p in caught_up["partitions"]] == [
            (p, 20, 0) for p in range(PARTITIONS)
        ]
        listed = minikafka("consumer-groups", "--bootstrap-server", bootstrap, "--list")
        assert group in listed.stdout.split(), listed.stderr
        refused = minikafka("consumer-groups", "--bootstrap-server", bootstrap, "--delete", "--group", group)
        assert refused.returncode != 0 and "NON_EMPTY_GROUP" in refused.stderr
    finally:
        member.close()
    assert describe(cluster, group)["state"] == "Empty"
    deleted = minikafka("consumer-groups", "--bootstrap-server", bootstrap, "--delete", "--group", group)
    assert deleted.returncode == 0, deleted.stderr
    gone = minikafka("consumer-groups", "--bootstrap-server", bootstrap, "--describe", group)
    assert gone.returncode != 0 and "GROUP_ID_NOT_FOUND" in gone.stderr


SILENT_MEMBER = """
import sys, confluent_kafka
consumer = confluent_kafka.Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
    "session.timeout.ms": 2000, "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest"})
consumer.subscribe([sys.argv[3]])
while True:
    consumer.poll(0.2)
"""


async def zombie_commit(bootstrap: str, group: str, topic: str, member_id: str, generation: int) -> ErrorCode:
    """An OffsetCommit as a member that is gone or a generation behind would send it."""
    return await offset_commit(bootstrap, group, topic, member_id, generation, version=8)


def test_a_silent_member_is_removed_after_its_session_timeout_and_its_commits_are_refused(cluster: Cluster) -> None:
    topic, group = "silent-orders", "silent-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    live = ConfluentMember(bootstrap, group, topic)
    silent = subprocess.Popen([sys.executable, "-c", SILENT_MEMBER, bootstrap, group, topic])
    try:

        def split() -> dict | None:
            live.poll()
            described = describe(cluster, group)
            two = described["state"] == "Stable" and len(described["members"]) == 2
            return described if two and live.assigned() == PARTITIONS // 2 else None

        before = eventually(split, 60, "two members with two partitions each", interval_s=0)
        silent_id = next(m["member_id"] for m in before["members"] if m["member_id"] != live.consumer.memberid())
        os.kill(silent.pid, signal.SIGSTOP)  # no more heartbeats from it

        def reassigned() -> bool:
            live.poll()
            return live.assigned() == PARTITIONS

        eventually(reassigned, 60, "the live member owns every partition", interval_s=0)
        after = describe(cluster, group)
        assert [m["member_id"] for m in after["members"]] != [silent_id] and len(after["members"]) == 1
        assert asyncio.run(zombie_commit(bootstrap, group, topic, silent_id, 1)) == ErrorCode.UNKNOWN_MEMBER_ID
        live_id = after["members"][0]["member_id"]
        assert asyncio.run(zombie_commit(bootstrap, group, topic, live_id, 1)) == ErrorCode.ILLEGAL_GENERATION
        assert all(p["current_offset"] != 999 for p in describe(cluster, group)["partitions"])
    finally:
        silent.kill()
        silent.wait()
        live.close()


def test_coordinator_sigkill_moves_the_group_and_no_commit_is_lost_or_goes_back(cluster: Cluster) -> None:
    topic, group = "failover-orders", "failover-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    produce(bootstrap, topic, [f"first-{i}" for i in range(200)])
    member = ConfluentMember(bootstrap, group, topic)
    read: set[str] = set()

    def read_and_commit(count: int) -> bool:
        for _ in range(10):
            read.update(member.poll())
        member.commit()
        return len(read) >= count

    victim = None
    try:
        eventually(lambda: read_and_commit(100), 60, "half the records read and committed", interval_s=0)
        victim = describe(cluster, group)["coordinator"]
        Faults(cluster).kill(victim)
        produce(bootstrap, topic, [f"later-{i}" for i in range(200)])
        eventually(lambda: read_and_commit(400), 90, "every record read after the coordinator moved", interval_s=0)

        def all_committed() -> dict | None:
            member.commit()
            described = describe(cluster, group)
            done = [p["current_offset"] for p in described["partitions"]] == [100] * PARTITIONS
            return described if done else None

        final = eventually(all_committed, 60, "every offset committed to the new coordinator", interval_s=0.2)
        assert final["coordinator"] != victim
        for partition in range(PARTITIONS):
            acked = [c[partition] for c in member.acknowledged if partition in c]
            assert acked == sorted(acked), f"partition {partition}: acknowledged commits went back: {acked}"
            assert acked and acked[-1] <= 100
    finally:
        member.close()
        if victim is not None:
            Faults(cluster).start(victim)
            with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
                eventually(
                    lambda: all(victim in p.isr for p in admin.describe_topics(["__consumer_offsets"])[0].partitions),
                    60,
                    f"broker {victim} back in every __consumer_offsets ISR",
                )


def test_a_restarted_static_member_keeps_its_partitions_and_survives_a_coordinator_failover(cluster: Cluster) -> None:
    topic, group = "static-orders", "static-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    produce(bootstrap, topic, [f"first-{i}" for i in range(200)])
    steady = ConfluentMember(bootstrap, group, topic, instance="steady")
    restarted = ConfluentMember(bootstrap, group, topic, instance="restarted")
    members = [steady, restarted]
    victim = None
    try:

        def split() -> bool:
            for one in members:
                one.poll()
            return all(one.assigned() == PARTITIONS // 2 for one in members)

        eventually(split, 60, "two static members with two partitions each", interval_s=0)
        old_id = restarted.consumer.memberid()
        restarted.close()  # a static member sends no LeaveGroup: it stays in the group under its old id
        restarted = members[1] = ConfluentMember(bootstrap, group, topic, instance="restarted")

        def rejoined() -> dict | None:
            for one in members:
                one.poll()
            described = describe(cluster, group)
            ids = {m["member_id"] for m in described["members"]}
            replaced = restarted.assigned() == PARTITIONS // 2 and old_id not in ids and len(ids) == 2
            return described if replaced and described["state"] == "Stable" else None

        victim = eventually(rejoined, 60, "the restarted instance in its old place", interval_s=0.2)["coordinator"]
        new_id = restarted.consumer.memberid()
        Faults(cluster).kill(victim)

        def committed_at_new_coordinator() -> dict | None:
            for one in members:
                one.poll()
            if not all(one.commit() for one in members):
                return None
            described = describe(cluster, group)
            ids = {m["member_id"] for m in described["members"]}
            return described if described["coordinator"] != victim and new_id in ids else None

        # Had the new member id not been stored before the answer, the new coordinator would fence the
        # instance (FENCED_INSTANCE_ID, fatal to the consumer) on its first heartbeat or commit.
        moved = eventually(committed_at_new_coordinator, 90, "commits accepted by the new coordinator", interval_s=0.2)
        assert {m["member_id"] for m in moved["members"]} == {steady.consumer.memberid(), new_id}
        assert restarted.assigned() == PARTITIONS // 2 and restarted.consumer.memberid() == new_id
    finally:
        for one in members:
            one.close()
        if victim is not None:
            Faults(cluster).start(victim)
            with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
                eventually(
                    lambda: all(victim in p.isr for p in admin.describe_topics(["__consumer_offsets"])[0].partitions),
                    60,
                    f"broker {victim} back in every __consumer_offsets ISR",
                )


def test_minikafka_consume_group_members_split_the_work_and_resume(cluster: Cluster) -> None:
    topic, group = "own-orders", "own-readers"
    create_topic(cluster, topic)
    first = [f"first-{i}" for i in range(200)]
    produce(cluster.kafka_bootstrap_servers, topic, first)

    def member() -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "minikafka.launcher", "consume", topic, "--dir", str(cluster.run_dir)]
        command += ["--group", group, "--from-beginning", "--json", "--timeout-ms", "3000"]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    outputs = [process.communicate(timeout=120) for process in [member(), member()]]
    lines = [json.loads(line) for out, _ in outputs for line in out.splitlines()]
    records = [line for line in lines if line.get("type") is None]
    assert set(first) <= {r["value"] for r in records}, [err for _, err in outputs]
    assert all(r["group"] == group and r["ts"] for r in records)
    assert [p["lag"] for p in describe(cluster, group)["partitions"]] == [0] * PARTITIONS
    later = [f"later-{i}" for i in range(40)]
    produce(cluster.kafka_bootstrap_servers, topic, later)
    out, err = member().communicate(timeout=120)
    resumed = [json.loads(line)["value"] for line in out.splitlines() if json.loads(line).get("type") is None]
    assert sorted(resumed) == sorted(later), err


def test_offset_delete_through_kafka_python_and_the_tool_survives_a_coordinator_restart(cluster: Cluster) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is in the dev extra")
    from kafka.structs import OffsetAndMetadata, TopicPartition

    topic, group = "forgotten-orders", "forgetful-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=15000)
    down = None  # a broker this test stopped and has not started again
    try:
        committed = {TopicPartition(topic, p): OffsetAndMetadata(10 + p, "", -1) for p in range(PARTITIONS)}
        eventually(lambda: admin.alter_group_offsets(group, committed), 60, "offsets committed", interval_s=0.2)
        assert [p["current_offset"] for p in describe(cluster, group)["partitions"]] == [10, 11, 12, 13]
        first_two = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        answers = eventually(lambda: admin.delete_group_offsets(group, first_two), 60, "OffsetDelete", interval_s=0.2)
        assert {tp: error.errno for tp, error in answers.items()} == dict.fromkeys(first_two, 0)
        tool = minikafka(
            "consumer-groups",
            "--bootstrap-server",
            bootstrap,
            "--delete-offsets",
            "--group",
            group,
            "--topic",
            f"{topic}:2",
        )
        assert tool.returncode == 0 and "Successful" in tool.stdout, tool.stderr
        expected = [(3, 13)]  # the others have no committed offset any more

        def offsets() -> list[tuple[int, int | None]]:
            return [(p["partition"], p["current_offset"]) for p in describe(cluster, group)["partitions"]]

        assert offsets() == expected
        victim = describe(cluster, group)["coordinator"]
        Faults(cluster).kill(victim)
        down = victim
        moved = eventually(
            lambda: (d := describe(cluster, group))["coordinator"] != victim and d, 90, "a new coordinator"
        )
        assert [(p["partition"], p["current_offset"]) for p in moved["partitions"]] == expected
        Faults(cluster).start(victim)
        down = None
        with cluster_commands.admin_for(cluster, timeout_s=10) as metadata:
            eventually(
                lambda: all(victim in p.isr for p in metadata.describe_topics(["__consumer_offsets"])[0].partitions),
                60,
                f"broker {victim} back in every __consumer_offsets ISR",
            )
        assert offsets() == expected
        with pytest.raises(kafka.errors.GroupIdNotFoundError):
            admin.delete_group_offsets("no-such-readers", first_two)
    finally:
        admin.close()
        if down is not None:
            Faults(cluster).start(down)


def test_offset_delete_keeps_the_offsets_of_a_topic_a_live_member_subscribes_to(cluster: Cluster) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is in the dev extra")
    from kafka.structs import OffsetAndMetadata, TopicPartition

    topic, other, group = "watched-orders", "unwatched-orders", "watching-readers"
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, topic)
    create_topic(cluster, other)
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=15000)
    # An offset of a topic nobody subscribes to, committed while the group is empty (as kafka-consumer-groups
    # --reset-offsets would); then a member subscribes to the other topic and commits for it.
    stray = {TopicPartition(other, 0): OffsetAndMetadata(5, "", -1)}
    eventually(
        lambda: all(e.errno == 0 for e in admin.alter_group_offsets(group, stray).values()), 60, "a stray offset"
    )
    member = ConfluentMember(bootstrap, group, topic)
    try:
        eventually(lambda: member.poll() is not None and member.assigned() == PARTITIONS, 60, "the member's partitions")
        eventually(member.commit, 30, "a commit", interval_s=0.2)
        assert any(p["topic"] == other for p in describe(cluster, group)["partitions"])
        asked = [TopicPartition(topic, 0), TopicPartition(other, 0)]
        answers = admin.delete_group_offsets(group, asked)
        assert {tp.topic: error.errno for tp, error in answers.items()} == {topic: 86, other: 0}
        assert {p["topic"] for p in describe(cluster, group)["partitions"]} == {topic}
        tool = minikafka(
            "consumer-groups", "--bootstrap-server", bootstrap, "--delete-offsets", "--group", group, "--topic", topic
        )
        assert tool.returncode == 1 and tool.stdout.count("GROUP_SUBSCRIBED_TO_TOPIC (86)") == PARTITIONS, tool.stdout
    finally:
        member.close()
        admin.close()

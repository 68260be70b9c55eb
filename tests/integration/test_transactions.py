"""Transactions through the Kafka listener with an unmodified client (confluent-kafka) against a 3+3 cluster of real
processes: a transactional producer commits and aborts, a consume-transform-produce sends its offsets to the
transaction, and a read_committed consumer sees the committed records only, while read_uncommitted sees all."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster
from group_topics import PARTITIONS, create_topic

from minikafka.client.kafka_wire_client import KafkaWireClient, request_class
from minikafka.common.errors import ErrorCode
from minikafka.deploy import cluster_commands
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster
from minikafka.deploy.scenario.transactions import WireTransactionalProducer

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")

OVERRIDES = {
    "group.initial.rebalance.delay.ms": "200",
    "group.min.session.timeout.ms": "1000",
    "transaction.state.log.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    # A killed broker is fenced, and its leaderships move, within seconds.
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("transactions"), 3, 3, **OVERRIDES) as started:
        yield started


def transactional_producer(bootstrap: str, transactional_id: str) -> object:
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "transaction.timeout.ms": 60000}
    )
    producer.init_transactions(60)
    return producer


def read_all(bootstrap: str, topic: str, isolation: str, expected: int, group: str | None = None) -> list[str]:
    """Every record a fresh consumer with `isolation` reads from the start, once it has `expected` of them and
    nothing more comes."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group or f"reader-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.subscribe([topic])
    seen: list[str] = []
    try:

        def enough() -> bool | None:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.append(message.value().decode())
            return True if len(seen) >= expected else None

        eventually(enough, 60, f"{expected} records read {isolation}")
        # Nothing beyond: a few more polls bring no further record.
        for _ in range(10):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.append(message.value().decode())
    finally:
        consumer.close()
    return seen


def test_committed_records_are_read_committed_and_aborted_ones_are_not(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, "txn-orders")
    producer = transactional_producer(bootstrap, "orders-writer")
    producer.begin_transaction()
    for i in range(8):
        producer.produce("txn-orders", value=f"committed-{i}".encode(), partition=i % PARTITIONS)
    producer.commit_transaction(60)
    producer.begin_transaction()
    for i in range(8):
        producer.produce("txn-orders", value=f"aborted-{i}".encode(), partition=i % PARTITIONS)
    producer.flush(30)
    producer.abort_transaction(60)
    producer.begin_transaction()
    for i in range(4):
        producer.produce("txn-orders", value=f"late-{i}".encode(), partition=i % PARTITIONS)
    producer.commit_transaction(60)

    committed = read_all(bootstrap, "txn-orders", "read_committed", 12)
    assert sorted(committed) == sorted([f"committed-{i}" for i in range(8)] + [f"late-{i}" for i in range(4)])
    everything = read_all(bootstrap, "txn-orders", "read_uncommitted", 20)
    assert len(everything) == 20 and sum(v.startswith("aborted-") for v in everything) == 8
    # minikafka's own consumer, over gRPC, reads the same: the aborted records and the markers left out.
    for isolation, count in (("read_committed", 12), ("read_uncommitted", 20)):
        consumed = minikafka(
            "consume", "txn-orders", "--from-beginning", "--timeout-ms", "3000", "--json",
            "--isolation-level", isolation, "--dir", str(cluster.run_dir),
        )  # fmt: skip
        assert consumed.returncode == 0, consumed.stderr
        values = [json.loads(line)["value"] for line in consumed.stdout.splitlines() if '"value"' in line]
        assert len(values) == count, (isolation, values)
        assert isolation == "read_uncommitted" or not any(v.startswith("aborted-") for v in values)


def test_an_open_transaction_holds_back_read_committed_until_it_commits(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, "txn-open")
    producer = transactional_producer(bootstrap, "open-writer")
    producer.begin_transaction()
    for i in range(4):
        producer.produce("txn-open", value=f"pending-{i}".encode(), partition=i % PARTITIONS)
    producer.flush(30)
    # Written and replicated, but not committed: read_uncommitted sees it, read_committed does not.
    assert len(read_all(bootstrap, "txn-open", "read_uncommitted", 4)) == 4
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe(["txn-open"])
    try:
        early = [m for m in (consumer.poll(0.3) for _ in range(10)) if m is not None and m.error() is None]
        assert early == []
        producer.commit_transaction(60)
        seen: list[str] = []

        def all_four() -> bool | None:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.append(message.value().decode())
            return True if len(seen) >= 4 else None

        eventually(all_four, 60, "the committed records after the commit")
    finally:
        consumer.close()


# A consumer of either group protocol: with KIP-848's, the transaction's offsets carry the member epoch.
@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_consume_transform_produce_commits_offsets_with_the_transaction(cluster: Cluster, group_protocol: str) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    source, sink = f"ctp-in-{group_protocol}", f"ctp-out-{group_protocol}"
    create_topic(cluster, source)
    create_topic(cluster, sink)
    plain = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(8):
        plain.produce(source, value=f"in-{i}".encode(), partition=i % PARTITIONS)
    assert plain.flush(30) == 0

    group = f"ctp-group-{group_protocol}"
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "group.protocol": group_protocol,
        }
    )
    consumer.subscribe([source])
    producer = transactional_producer(bootstrap, f"ctp-writer-{group_protocol}")
    taken: list[object] = []

    def all_in() -> bool | None:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            taken.append(message)
        return True if len(taken) >= 8 else None

    try:
        eventually(all_in, 60, "the input records")
        # First an aborted attempt: neither its output nor its offsets may be seen.
        producer.begin_transaction()
        for message in taken:
            producer.produce(sink, value=b"attempt-1-" + message.value(), partition=message.partition())
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 60
        )
        producer.abort_transaction(60)
        assert _committed(bootstrap, group, source) == {}
        # Then the committed one.
        producer.begin_transaction()
        for message in taken:
            producer.produce(sink, value=b"attempt-2-" + message.value(), partition=message.partition())
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 60
        )
        producer.commit_transaction(60)
    finally:
        consumer.close()
    assert _committed(bootstrap, group, source) == {p: 2 for p in range(PARTITIONS)}
    out = read_all(bootstrap, sink, "read_committed", 8)
    assert sorted(out) == sorted(f"attempt-2-in-{i}" for i in range(8))


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        partitions = [confluent_kafka.TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: tp.offset for tp in consumer.committed(partitions, timeout=30) if tp.offset >= 0}
    finally:
        consumer.close()


def test_a_new_producer_of_the_id_fences_the_old_one(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, "txn-fence")
    old = transactional_producer(bootstrap, "fenced-writer")
    old.begin_transaction()
    old.produce("txn-fence", value=b"zombie", partition=0)
    old.flush(30)
    new = transactional_producer(bootstrap, "fenced-writer")  # aborts the old one's transaction, bumps the epoch
    new.begin_transaction()
    new.produce("txn-fence", value=b"fresh", partition=0)
    new.commit_transaction(60)
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        old.commit_transaction(30)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower()
    assert read_all(bootstrap, "txn-fence", "read_committed", 1) == ["fresh"]


async def _on_coordinator(bootstrap: str, transactional_id: str, body: Any) -> tuple[int, Any]:
    """(coordinator id, its answer to `body`): FindCoordinator with key type 1 first."""
    client = KafkaWireClient(bootstrap.split(","))
    try:
        found = await client.any_broker(request_class(10, 3)(key=transactional_id, key_type=1))
        assert ErrorCode.of(found.error_code) == ErrorCode.NONE, found
        return found.node_id, await client.connection(f"{found.host}:{found.port}").send(body)
    finally:
        await client.close()


def describe(bootstrap: str, transactional_id: str) -> tuple[int, Any]:
    body = request_class(65, 0)(transactional_ids=(transactional_id,))
    node_id, response = asyncio.run(_on_coordinator(bootstrap, transactional_id, body))
    return node_id, response.transaction_states[0]


def test_describe_and_list_show_a_transaction_under_way(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, "txn-described")
    producer = transactional_producer(bootstrap, "described-writer")
    producer.begin_transaction()
    producer.produce("txn-described", value=b"x", partition=1)
    producer.flush(30)
    _, state = describe(bootstrap, "described-writer")
    assert (ErrorCode.of(state.error_code), state.transaction_state) == (ErrorCode.NONE, "Ongoing")
    assert [(t.topic, list(t.partitions)) for t in state.topics] == [("txn-described", [1])]

    async def listed() -> list[tuple[str, str]]:
        client = KafkaWireClient(bootstrap.split(","))
        try:
            found = []
            for address in bootstrap.split(","):
                response = await client.connection(address).send(
                    request_class(66, 0)(state_filters=("Ongoing",), producer_id_filters=())
                )
                found += [(t.transactional_id, t.transaction_state) for t in response.transaction_states]
            return found
        finally:
            await client.close()

    assert ("described-writer", "Ongoing") in asyncio.run(listed())
    # The same through `minikafka transactions`, as kafka-transactions shows them.
    tool = minikafka("transactions", "--describe", "described-writer", "--json", "--dir", str(cluster.run_dir))
    assert tool.returncode == 0, tool.stderr
    described = json.loads(tool.stdout)
    assert (described["state"], described["partitions"]) == ("Ongoing", [{"topic": "txn-described", "partition": 1}])
    tool = minikafka("transactions", "--list", "--json", "--dir", str(cluster.run_dir))
    assert {"transactional_id": "described-writer", "producer_id": described["producer_id"], "state": "Ongoing"} in (
        json.loads(tool.stdout)
    )
    tool = minikafka("transactions", "--find-hanging", "--json", "--dir", str(cluster.run_dir))
    assert tool.returncode == 0 and json.loads(tool.stdout) == [], tool.stdout + tool.stderr
    producer.commit_transaction(60)
    # The commit is answered once PrepareCommit is written; the markers, then CompleteCommit, follow.
    state = eventually(
        lambda: (found := describe(bootstrap, "described-writer")[1]).transaction_state == "CompleteCommit" and found,
        30,
        "the transaction complete",
    )
    assert state.topics == ()
    _, unknown = describe(bootstrap, "never-used")
    assert ErrorCode.of(unknown.error_code) == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


def test_a_transaction_left_open_past_its_timeout_is_aborted(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, "txn-timeout")
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "slow-writer", "transaction.timeout.ms": 2000}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce("txn-timeout", value=b"never-committed", partition=0)
    producer.flush(30)
    eventually(
        lambda: describe(bootstrap, "slow-writer")[1].transaction_state == "CompleteAbort" or None,
        30,
        "the coordinator aborting the timed-out transaction",
    )
    _, state = describe(bootstrap, "slow-writer")
    assert state.producer_epoch == 1  # bumped: the producer that left it open is fenced
    with pytest.raises(confluent_kafka.KafkaException):
        producer.commit_transaction(30)
    plain = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    plain.produce("txn-timeout", value=b"after", partition=0)
    assert plain.flush(30) == 0
    # The aborted record is never read committed, and nothing holds the partition back.
    assert read_all(bootstrap, "txn-timeout", "read_committed", 1) == ["after"]


def test_a_transaction_survives_its_coordinators_broker_being_killed(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    create_topic(cluster, "txn-failover")
    producer = transactional_producer(bootstrap, "failover-writer")
    producer.begin_transaction()
    for i in range(8):
        producer.produce("txn-failover", value=f"survivor-{i}".encode(), partition=i % PARTITIONS)
    producer.flush(30)
    victim, _ = describe(bootstrap, "failover-writer")
    Faults(cluster).kill(victim)
    try:
        # The new coordinator loads the Ongoing state from __transaction_state and ends the transaction.
        producer.commit_transaction(90)
        survivors = [b.kafka_address for b in cluster.brokers if b.node_id != victim and b.kafka_address]
        new_coordinator, _ = describe(",".join(survivors), "failover-writer")
        assert new_coordinator != victim
        eventually(
            lambda: describe(",".join(survivors), "failover-writer")[1].transaction_state == "CompleteCommit" or None,
            30,
            "the transaction complete at the new coordinator",
        )
        committed = read_all(",".join(survivors), "txn-failover", "read_committed", 8)
        assert sorted(committed) == sorted(f"survivor-{i}" for i in range(8))
    finally:
        Faults(cluster).start(victim)
        with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
            eventually(
                lambda: all(victim in p.isr for p in admin.describe_topics(["__transaction_state"])[0].partitions),
                60,
                f"broker {victim} back in every __transaction_state ISR",
            )


TV = "transaction.version"


def test_transaction_version_changes_at_run_time_and_a_transaction_under_way_keeps_its_protocol(
    cluster: Cluster,
) -> None:
    """`minikafka features downgrade|upgrade --feature transaction.version=N` (Kafka's kafka-features) on the Kafka
    and gRPC paths: a transaction begun at level 2 ends as one (EndTxn v5 bumps the epoch) after the downgrade, the
    next one is of version 1 (AddPartitionsToTxn, EndTxn v3, the epoch kept), and a level the nodes do not support
    is refused. Last in the module: it puts the level back to 2."""
    create_topic(cluster, "txn-feature")
    with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
        leader = admin.describe_topics(["txn-feature"])[0].partitions[0].leader
    address = next(b.kafka_address for b in cluster.brokers if b.node_id == leader and b.kafka_address)
    run = ("--dir", str(cluster.run_dir))
    loop = asyncio.new_event_loop()
    client = KafkaWireClient([address])
    producer = WireTransactionalProducer(client, "feature-writer", "txn-feature")
    try:
        assert loop.run_until_complete(producer.transaction_version()) == 2
        loop.run_until_complete(producer.init())
        assert loop.run_until_complete(producer.produce(producer.batch(b"begun-at-2"))) == ErrorCode.NONE
        downgraded = minikafka("features", "downgrade", "--feature", "transaction.version=1", *run)
        assert downgraded.returncode == 0, downgraded.stderr
        assert downgraded.stdout.strip() == "transaction.version was downgraded to 1."
        refused = minikafka("features", "upgrade", "--feature", "transaction.version=3", "--protocol", "grpc", *run)
        assert refused.returncode == 1 and "INVALID_UPDATE_VERSION" in refused.stdout, refused

        epoch = producer.epoch
        assert loop.run_until_complete(producer.end(commit=True)) == ErrorCode.NONE  # v5: the level it began at
        assert producer.epoch == epoch + 1
        eventually(lambda: loop.run_until_complete(producer.transaction_version()) == 1, 30, "level 1 advertised")
        added = eventually(
            lambda: [code for code in [loop.run_until_complete(producer.add_partition())]
                     if code != ErrorCode.CONCURRENT_TRANSACTIONS],
            30,
            "AddPartitionsToTxn once the markers of the last transaction are written",
        )  # fmt: skip
        assert added == [ErrorCode.NONE]
        assert loop.run_until_complete(producer.produce(producer.batch(b"begun-at-1"))) == ErrorCode.NONE
        assert loop.run_until_complete(producer.end(commit=True)) == ErrorCode.NONE
        assert producer.epoch == epoch + 1  # EndTxn v3 keeps it
    finally:
        upgraded = minikafka("features", "upgrade", "--feature", "transaction.version=2", "--protocol", "grpc", *run)
        loop.run_until_complete(client.close())
        loop.close()
    assert upgraded.returncode == 0 and upgraded.stdout.strip() == "transaction.version was upgraded to 2.", upgraded

    def finalized() -> int:
        described = minikafka("features", "describe", "--json", *run)
        return int({f["feature"]: f["finalized_version_level"] for f in json.loads(described.stdout)}[TV])

    eventually(lambda: finalized() == 2, 30, "transaction.version finalized at 2 again")
    assert sorted(read_all(cluster.kafka_bootstrap_servers, "txn-feature", "read_committed", 2)) == [
        "begun-at-1",
        "begun-at-2",
    ]

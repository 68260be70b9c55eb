"""`minikafka transactions --abort` against real processes: the hanging-transaction scenario's unguarded state (a
transactional produce arriving after its transaction was aborted, with transaction.partition.verification.enable
off, opens a transaction no coordinator will end), found by --find-hanging and ended by --abort, which releases the
partition's last stable offset."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster

from minikafka.client.kafka_wire_client import KafkaWireClient
from minikafka.common.errors import ErrorCode
from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster
from minikafka.deploy.scenario.transactions import WireTransactionalProducer

pytestmark = pytest.mark.integration

OVERRIDES = {
    "transaction.partition.verification.enable": "false",  # the scenario's guard off: the late batch is taken
    "transaction.state.log.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}
TOPIC = "payments"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("txn-abort"), 1, 1, **OVERRIDES) as started:
        with cluster_commands.admin_for(started, timeout_s=10) as admin:
            admin.create_topic(TOPIC, partitions=1, replication_factor=1)
        yield started


async def _hang(bootstrap: str) -> tuple[int, int]:
    """The scenario's story: begin, produce, abort, then the held produce lands. (producer id, late offset)."""
    client = KafkaWireClient(bootstrap.split(","))
    producer = WireTransactionalProducer(client, "payments-writer", TOPIC)
    try:
        await producer.init()
        assert await producer.add_partition() == ErrorCode.NONE
        assert await producer.produce(producer.batch(b"payment-1")) == ErrorCode.NONE
        held = producer.batch(b"payment-2")
        assert await producer.end(commit=False) == ErrorCode.NONE
        deadline = asyncio.get_running_loop().time() + 30
        while await producer.state() != "CompleteAbort":
            assert asyncio.get_running_loop().time() < deadline, "the abort never completed"
            await asyncio.sleep(0.05)
        hwm_before, _ = await producer.offsets()
        assert await producer.produce(held) == ErrorCode.NONE  # unguarded: the late batch is appended
        return producer.producer_id, hwm_before
    finally:
        await client.close()


async def _offsets(bootstrap: str) -> tuple[int, int]:
    client = KafkaWireClient(bootstrap.split(","))
    try:
        return await WireTransactionalProducer(client, "reader", TOPIC).offsets()
    finally:
        await client.close()


def _tool(cluster: Cluster, *args: str) -> tuple[int, str, str]:
    done = minikafka("transactions", *args, "--bootstrap-server", cluster.kafka_bootstrap_servers, timeout_s=60)
    return done.returncode, done.stdout, done.stderr


def test_find_hanging_then_abort_releases_the_last_stable_offset(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    producer_id, late_offset = asyncio.run(_hang(bootstrap))
    hwm, lso = asyncio.run(_offsets(bootstrap))
    assert (hwm, lso) == (late_offset + 1, late_offset)  # the LSO stuck at the late batch

    code, out, err = _tool(cluster, "--find-hanging", "--json")
    assert code == 0, err
    hanging = json.loads(out)
    assert [(h["topic"], h["partition"], h["producer_id"], h["current_txn_start_offset"]) for h in hanging] == [
        (TOPIC, 0, producer_id, late_offset)
    ]

    # An offset where no transaction starts is refused, and nothing is written.
    code, out, err = _tool(cluster, "--abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "0")
    assert code == 1 and "Could not find any open transactions starting at offset 0" in err and "Traceback" not in err
    assert asyncio.run(_offsets(bootstrap)) == (hwm, lso)

    code, out, err = _tool(
        cluster, "--abort", "--topic", TOPIC, "--partition", "0", "--start-offset", str(late_offset), "--json"
    )
    assert code == 0, err
    assert json.loads(out)["producer_id"] == producer_id
    # The ABORT marker takes one offset; once the ISR has it the LSO is the high watermark again.
    eventually(lambda: asyncio.run(_offsets(bootstrap)) == (hwm + 1, hwm + 1) or None, 30, "the LSO released")
    code, out, err = _tool(cluster, "--find-hanging", "--json")
    assert (code, json.loads(out)) == (0, []), err

    # The same transaction again: no longer open anywhere.
    code, out, err = _tool(cluster, "--abort", "--topic", TOPIC, "--partition", "0", "--start-offset", str(late_offset))
    assert code == 1 and "Could not find any open transactions" in err


def test_produce_with_a_transactional_id_commits_and_aborts_whole_transactions(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
        admin.create_topic("ledger", partitions=1, replication_factor=1)
    done = minikafka(
        "produce", "ledger", "--transactional-id", "ledger-writer", "--num-records", "10", "--transaction-size", "3",
        "--abort-every", "2", "--value-prefix", "l", "--record-size", "0", "--bootstrap-server", bootstrap,
        timeout_s=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Transactions of 3, 3, 3 and 1 records; the 2nd and 4th aborted.
    assert "committed 6 records in 2 transactions, aborted 4 in 2" in done.stderr
    read = minikafka(
        "consume", "ledger", "--isolation-level", "read_committed", "--from-beginning", "--max-messages", "6",
        "--dir", str(cluster.run_dir), timeout_s=60,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert read.stdout.split() == [f"l-{i:09d}" for i in (0, 1, 2, 6, 7, 8)]
    client = KafkaWireClient(bootstrap.split(","))

    async def offsets() -> tuple[int, int]:
        try:
            return await WireTransactionalProducer(client, "reader", "ledger").offsets()
        finally:
            await client.close()

    hwm, lso = asyncio.run(offsets())
    assert hwm == lso == 14  # 10 records and 4 markers, nothing undecided


def test_produce_with_a_transactional_id_to_an_unknown_topic_is_a_clear_error(cluster: Cluster) -> None:
    done = minikafka(
        "produce", "no-such-topic", "--transactional-id", "lost-writer", "--num-records", "1",
        "--bootstrap-server", cluster.kafka_bootstrap_servers, timeout_s=60,
    )  # fmt: skip
    assert done.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION (3)" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

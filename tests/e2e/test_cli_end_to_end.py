"""The user's path through the CLI only (subprocesses), with the documented JSON shapes and one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def cli(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka.launcher", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ok(*args: str, stdin: str | None = None) -> str:
    result = cli(*args, stdin=stdin)
    assert result.returncode == 0, f"{args}: {result.stderr}"
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if "error" in line]
    assert len(lines) == 1, result.stderr
    return lines[0]


def wait_until_unfenced(run: Path, broker_id: int, timeout_s: float = 60) -> None:
    """`fault start` returns once the process runs; the later tests need the broker registered and unfenced."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = json.loads(ok("cluster", "status", "--json", "--dir", str(run)))
        if any(b["id"] == broker_id and b["alive"] and not b["fenced"] for b in status["brokers"]):
            return
    raise AssertionError(f"broker {broker_id} not unfenced within {timeout_s}s")


def wait_for_isr(run: Path, topic: str, isr: list[int], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        described = json.loads(ok("topics", "describe", topic, "--json", "--dir", str(run)))
        [partition] = described["topics"][0]["partitions"]
        if partition["isr"] == isr and partition["leader"] == isr[0]:
            return
    raise AssertionError(f"{topic}: ISR not {isr} within {timeout_s}s")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    run_dir = tmp_path_factory.mktemp("cli") / "run"
    settings = [
        "--set",
        "broker.session.timeout.ms=2000",
        "--set",
        "broker.heartbeat.interval.ms=300",
        "--set",
        "replica.lag.time.max.ms=3000",
    ]
    try:
        ok("cluster", "up", "--dir", str(run_dir), *settings)
        yield run_dir
    finally:
        cli("cluster", "down", "--dir", str(run_dir))
        cluster = run_dir / "cluster.json"
        if cluster.exists():
            for node in (lambda d: d["controllers"] + d["brokers"])(json.loads(cluster.read_text())):
                if node.get("pid"):
                    try:
                        os.kill(node["pid"], signal.SIGKILL)
                    except ProcessLookupError:
                        pass


def test_status_topics_produce_consume_faults(run: Path) -> None:
    d = ["--dir", str(run)]
    status = json.loads(ok("cluster", "status", "--json", *d))
    assert {"controllers", "brokers"} <= set(status)
    assert all({"id", "address", "pid", "alive", "leader"} <= set(c) for c in status["controllers"])
    assert all({"id", "address", "pid", "alive", "fenced", "broker_epoch"} <= set(b) for b in status["brokers"])
    assert sum(c["leader"] for c in status["controllers"]) == 1
    security = status["security"]  # node-to-node links are mutual TLS by default; client listeners plaintext
    assert security["inter_node"] == "SSL" and Path(security["admin_tls"]["certificate"]).is_file()
    assert all("inter_broker_address" in b for b in status["brokers"])
    assert all(b["alive"] and b["fenced"] is False for b in status["brokers"])

    quorum = json.loads(ok("quorum", "describe", "--json", *d))
    assert {"leader_id", "leader_epoch", "high_watermark", "voters", "observers"} <= set(quorum)
    assert all({"id", "log_end_offset", "lag"} <= set(v) for v in quorum["voters"])

    ok(
        "topics",
        "create",
        "events",
        "--partitions",
        "2",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
        *d,
    )
    topics = json.loads(ok("topics", "describe", "events", "--json", *d))
    [topic] = topics["topics"]
    assert {"name", "topic_id", "partitions"} <= set(topic)
    assert all(
        {"partition", "leader", "leader_epoch", "partition_epoch", "replicas", "isr"} <= set(p)
        for p in topic["partitions"]
    )

    history = run / "history" / "produce-cli.jsonl"
    for acks in ("0", "1", "all"):
        ok(
            "produce",
            "events",
            "--acks",
            acks,
            "--partition",
            "0",
            "--num-records",
            "50",
            "--history",
            str(history),
            *d,
        )
    ok("produce", "events", "--acks", "all", "--partition", "1", *d, stdin="hello\nworld\n")
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    assert len(lines) == 150
    assert all(
        set(line) >= {"ts", "topic", "partition", "offset", "value", "acks", "error", "latency_ms"} for line in lines
    )
    assert all(line["offset"] is None for line in lines if line["acks"] == "0")
    assert all(line["offset"] is not None for line in lines if line["acks"] in ("1", "all"))

    output = [
        json.loads(line)
        for line in ok("consume", "events", "--from-beginning", "--json", "--timeout-ms", "1500", *d).splitlines()
    ]
    consumed = [r for r in output if "type" not in r]
    assert all(set(r) == {"topic", "partition", "offset", "key", "value", "leader_epoch", "topic_id"} for r in consumed)
    assert {r["topic_id"] for r in consumed} == {topic["topic_id"]}  # the incarnation each record was read from
    ends = output[len(consumed) :]  # after the records, one read_end line per partition: where the read stopped
    assert [(e["type"], e["reached"], e["error"]) for e in ends] == [("read_end", True, None)] * len(ends)
    assert len(ends) == len(topic["partitions"])
    assert {r["value"] for r in consumed if r["partition"] == 1} == {"hello", "world"}
    acked = {(line["partition"], line["offset"]): line["value"] for line in lines if line["offset"] is not None}
    read = {(r["partition"], r["offset"]): r["value"] for r in consumed}
    assert all(read.get(key) == value for key, value in acked.items())

    leader = topic["partitions"][0]["leader"]
    ok("fault", "kill", str(leader), *d)
    ok("fault", "reboot", str(leader), "--wipe-disk", *d)
    faults = [json.loads(line) for line in (run / "logs" / "faults.jsonl").read_text().splitlines()]
    assert [f["fault"] for f in faults][-2:] == ["kill", "reboot"]
    assert all(f["event"] == "fault_injected" for f in faults)


def test_bad_input_gets_one_line_errors(run: Path) -> None:
    d = ["--dir", str(run)]
    assert "UNKNOWN_TOPIC_OR_PARTITION" in one_line_error(cli("topics", "describe", "nope", *d))
    # As Kafka's producer, it waits max.block.ms for the topic to appear in the metadata before it gives up.
    missing = one_line_error(cli("produce", "nope", "--num-records", "1", "--max-block-ms", "300", *d))
    assert "UNKNOWN_TOPIC_OR_PARTITION" in missing and "not present in metadata after 300 ms" in missing
    assert "no broker reachable" in one_line_error(cli("topics", "describe", "--bootstrap-server", "127.0.0.1:1"))
    assert "unrecognized arguments" in one_line_error(cli("produce", "events", "--bogus", *d))
    ok(
        "topics",
        "create",
        "single",
        "--partitions",
        "1",
        "--replication-factor",
        "1",
        "--config",
        "min.insync.replicas=2",
        *d,
    )
    # min.insync.replicas is capped at the replication factor, as Kafka's effectiveMinIsr: RF 1 takes acks=all.
    ok("produce", "single", "--acks", "all", "--num-records", "3", "--delivery-timeout-ms", "2000", *d)
    # RF 2 with min ISR 2 and one replica stopped: acks=all is refused with NOT_ENOUGH_REPLICAS.
    ok("topics", "create", "pair", "--replica-assignment", "1:2", "--config", "min.insync.replicas=2", *d)
    ok("fault", "stop", "2", *d)
    try:
        refused_with_not_enough_replicas(run, d)
    finally:  # the next tests need broker 2 back, whatever happened here
        ok("fault", "start", "2", *d)
        wait_until_unfenced(run, 2)


def refused_with_not_enough_replicas(run: Path, d: list[str]) -> None:
    wait_for_isr(run, "pair", [1])  # leadership on 1 and the ISR shrunk, or the refusal is LEADER_NOT_AVAILABLE
    # 4 s: the refusal is answered at once, but a loaded machine must not turn the last retry into a timeout.
    history = run / "history" / "produce-refused.jsonl"
    refused = cli(
        "produce",
        "pair",
        "--acks",
        "all",
        "--num-records",
        "3",
        "--delivery-timeout-ms",
        "4000",
        "--history",
        str(history),
        *d,
    )
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "3 failed: NOT_ENOUGH_REPLICAS 3" in refused.stderr
    # The producer retries NOT_ENOUGH_REPLICAS (retriable, as in Kafka), and says so once rather than silently.
    assert refused.stderr.count("retrying pair-0: NOT_ENOUGH_REPLICAS") == 1, refused.stderr
    lines = [json.loads(x) for x in history.read_text().splitlines()]
    assert [(line["error"], line["definite"]) for line in lines] == [("NOT_ENOUGH_REPLICAS", True)] * 3, lines


def test_refusals_name_their_kafka_error(run: Path) -> None:
    d = ["--dir", str(run)]
    ok("topics", "create", "metrics.cpu", "--partitions", "1", "--replication-factor", "1", *d)
    collided = one_line_error(cli("topics", "create", "metrics_cpu", "--partitions", "1", *d))
    assert "INVALID_TOPIC_EXCEPTION" in collided and "metrics.cpu" in collided


def test_a_record_over_max_request_size_fails_as_message_too_large(run: Path) -> None:
    d = ["--dir", str(run)]
    ok("topics", "create", "large", "--partitions", "1", "--replication-factor", "1", *d)
    # Larger than gRPC's message limit: without the max.request.size check it was retried as NETWORK_EXCEPTION.
    huge = "x" * (65 * 1024 * 1024)
    refused = cli("produce", "large", "--delivery-timeout-ms", "5000", *d, stdin=f"small\n{huge}\n")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "produced 1 of 2 records (1 failed: MESSAGE_TOO_LARGE 1)" in refused.stderr, refused.stderr


def test_perf_produce_and_consume(run: Path) -> None:
    d = ["--dir", str(run)]
    ok("topics", "create", "perf", "--partitions", "2", "--replication-factor", "3", *d)
    for acks in ("1", "all"):
        produced = json.loads(
            ok("perf", "produce", "perf", "--num-records", "2000", "--record-size", "512", "--acks", acks, "--json", *d)
        )
        assert (produced["acknowledged"], produced["failed"], produced["acks"]) == (2000, {}, acks)
        assert produced["p50_ms"] <= produced["p99_ms"] <= produced["max_ms"]
        assert produced["mb_per_s"] > 0 and "records sent" in produced["line"]
    throttled = ok(
        "perf", "produce", "perf", "--num-records", "200", "--throughput", "400", "--producer-props", "linger.ms=0", *d
    )
    assert throttled.startswith("200 records sent") and "99.9th" in throttled
    consumed = json.loads(ok("perf", "consume", "perf", "--num-records", "4200", "--json", *d))
    assert (consumed["records"], consumed["timed_out"]) == (4200, False)
    assert consumed["mb"] == pytest.approx((4000 * 512 + 200 * 1024) / 1024 / 1024, abs=1e-3)
    assert "bad --producer-props" in one_line_error(
        cli("perf", "produce", "perf", "--num-records", "1", "--producer-props", "linger=5", *d)
    )

"""Where an acks=all write's time goes, read off the wire: packet capture on the loopback while a client produces
one record at a time at a moderate rate, split at each message of the write's path.

    .venv/bin/python benchmarks/acks_all_timeline.py [--records 5000] [--rate 500] [--dir RUN] [--out FILE]

Needs tcpdump (`apt-get install tcpdump`) and the right to capture (root). Without `--dir` it starts a 3+3 cluster on
the host's loopback (`cluster_settings.py`), with `--dir` it uses that run's (host network) cluster. A topic of one
partition, RF 3, min ISR 2; minikafka's producer (the gRPC listener, as `run_all`'s latency row) sends 1 KiB
records with acks=all, linger.ms 0, one in flight, at `--rate` a second. For each write the capture gives, at the
leader's side of its sockets:

    produce in -> first Fetch answer out -> second answer out -> each follower's next Fetch in -> response out

Messages are told apart by direction and size: the produce request and the Fetch answers carry the record (more than
half its size); a follower's next Fetch and the produce response are small. A write counts only when the capture
shows exactly that shape for it (one request, two answers, two Fetches, one response); the rest are counted as
unclear and left out. The client's own figures (send to acknowledgement, its process included) are printed beside.
"""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported

# isort: split
import argparse
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_wire import RECORD_SIZE, create_minikafka_topic
from run_all import produce

from minikafka.deploy.local_cluster import Cluster

_LINE = re.compile(r"^(\d+\.\d+) IP (\S+) > (\S+?):? tcp (\d+)")


@dataclass(frozen=True)
class Packet:
    at_s: float
    source: str  # address.port, as tcpdump prints it
    destination: str
    size: int  # TCP payload bytes


@dataclass(frozen=True)
class LeaderPorts:
    client: str  # the leader's client (gRPC) listener, "address.port"
    replication: str  # its inter-broker listener


@dataclass
class Write:
    sent_s: float
    answers: list[tuple[float, str]] = field(default_factory=list)  # (time, follower's socket)
    fetches: list[tuple[float, str]] = field(default_factory=list)
    acknowledged_s: float | None = None

    def clean(self) -> bool:
        followers = {socket for _, socket in self.answers}
        return (
            self.acknowledged_s is not None
            and len(self.answers) == 2
            and len(followers) == 2
            and sorted(socket for _, socket in self.fetches) == sorted(followers)
        )


def parse_capture(lines: Iterable[str]) -> list[Packet]:
    """tcpdump `-n -tt -q` lines with a payload."""
    packets = []
    for line in lines:
        matched = _LINE.match(line)
        if matched and int(matched[4]) > 0:
            packets.append(Packet(float(matched[1]), matched[2], matched[3], int(matched[4])))
    return packets


def writes(packets: Sequence[Packet], leader: LeaderPorts, record_size: int) -> list[Write]:
    """Each produce request the leader received, with the messages of its write that followed it."""
    big = record_size // 2
    found: list[Write] = []
    current: Write | None = None
    for packet in packets:
        if packet.destination == leader.client and packet.size > big:
            current = Write(packet.at_s)
            found.append(current)
        elif current is None:
            continue
        elif packet.source == leader.replication and packet.size > big:
            current.answers.append((packet.at_s, packet.destination))
        elif packet.destination == leader.replication and packet.size <= big:
            current.fetches.append((packet.at_s, packet.source))
        elif packet.source == leader.client and packet.size <= big:
            current.acknowledged_s = packet.at_s
            current = None
    return found


def segments_us(write: Write) -> dict[str, float]:
    """A clean write's steps, in microseconds."""
    assert write.acknowledged_s is not None
    first, second = sorted(write.answers)
    turnaround = [min(t for t, socket in write.fetches if socket == s) - at for at, s in write.answers]
    last_fetch = max(t for t, _ in write.fetches)
    return {
        "produce in to first Fetch answer out": (first[0] - write.sent_s) * 1e6,
        "first answer to second answer": (second[0] - first[0]) * 1e6,
        "a follower's turnaround (answer out to its next Fetch in)": sum(turnaround) / 2 * 1e6,
        "last follower Fetch in to response out": (write.acknowledged_s - last_fetch) * 1e6,
        "produce in to response out": (write.acknowledged_s - write.sent_s) * 1e6,
    }


def percentiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(fraction: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(len(ordered) * fraction))], 1)

    return {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": round(ordered[-1], 1)}


def summarize(found: Sequence[Write]) -> dict[str, Any]:
    clean = [segments_us(w) for w in found if w.clean()]
    if not clean:
        return {"writes": len(found), "clean": 0}
    steps = {name: percentiles([row[name] for row in clean]) for name in clean[0]}
    return {"writes": len(found), "clean": len(clean), "steps_us": steps}


def leader_ports(cluster: Cluster, leader_id: int) -> LeaderPorts:
    spec = cluster.node(leader_id)

    def dotted(address: str) -> str:
        host, port = address.rsplit(":", 1)
        return f"{host}.{port}"

    return LeaderPorts(dotted(spec.address), dotted(spec.inter_node_address))


def leader_of(cluster: Cluster, topic: str) -> int:
    from minikafka.client.admin import AdminClient

    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=30, tls=cluster.admin_tls)
    try:
        [partition] = admin.wait_for_topic(topic, 30).partitions
    finally:
        admin.close()
    return partition.leader


def capture(leader: LeaderPorts, path: Path) -> subprocess.Popen[str]:
    """tcpdump on the loopback, for the leader's address only; returns once it listens."""
    host = leader.client.rsplit(".", 1)[0]
    command = ["tcpdump", "-i", "lo", "-n", "-tt", "-q", "-l", f"tcp and host {host}"]
    with path.open("w") as output:  # tcpdump writes to its own copy of the descriptor
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if "listening on" in line:
            return process
        if not line and process.poll() is not None:
            break
    process.kill()
    raise RuntimeError("tcpdump did not start listening (is it installed, and may this user capture?)")


def measure(cluster: Cluster, records: int, rate: int, scratch: Path) -> dict[str, Any]:
    topic = f"timeline-{time.time_ns()}"  # a fresh one each run, also on a kept cluster
    create_minikafka_topic(cluster, topic, 1)
    leader = leader_ports(cluster, leader_of(cluster, topic))
    produce(cluster, topic, min(records, rate), -1, throughput=rate, linger_ms=0)  # connections up, fetchers idle
    dump = scratch / "capture.txt"
    tcpdump = capture(leader, dump)
    try:
        client = produce(cluster, topic, records, -1, throughput=rate, linger_ms=0)
    finally:
        tcpdump.terminate()
        tcpdump.wait(10)
    with dump.open() as lines:
        found = writes(parse_capture(lines), leader, RECORD_SIZE)
    client_ms = {k: client[k] for k in ("p50_ms", "p99_ms", "max_ms") if k in client}
    return {"records": records, "rate_per_s": rate, "client_ms": client_ms, **summarize(found)}


def print_summary(result: dict[str, Any]) -> None:
    print(f"{result['clean']} of {result['writes']} writes with a clean capture; client: {result['client_ms']}")
    for name, figures in result.get("steps_us", {}).items():
        shown = "  ".join(f"{k} {v:7.1f}" for k, v in figures.items())
        print(f"  {name:<58} {shown}  us")


def main() -> None:
    import structlog
    from cluster_settings import SETTINGS

    from minikafka.deploy import cluster_commands

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rate", type=int, default=500, help="records a second")
    parser.add_argument("--dir", type=Path, help="a running cluster's run directory (host network)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    if shutil.which("tcpdump") is None:
        raise SystemExit("acks_all_timeline.py needs tcpdump: apt-get install tcpdump")
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    scratch = Path(tempfile.mkdtemp(prefix="minikafka-timeline-"))
    cluster = Cluster.load(args.dir) if args.dir else cluster_commands.up(scratch / "run", 3, 3, SETTINGS)
    try:
        result = measure(cluster, args.records, args.rate, scratch)
    finally:
        if args.dir is None:
            cluster_commands.down(cluster)
        shutil.rmtree(scratch, ignore_errors=True)
    print_summary(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Liveness of a 3+3 cluster while its brokers take on many partitions at once.

    .venv/bin/python benchmarks/partition_scale.py [--partitions 5000] [--per-topic 5000] [--settle-s 300]

Starts a local 3+3 cluster with the defaults (`cluster up`), creates 1,000 partitions, then `--partitions`
partitions of replication factor 3 (in topics of at most `--per-topic`, the controller bounding the records of one
CreateTopics), and measures: the seconds until every ISR is full (the metadata's view) and until every broker took
on all its replicas (a become_leader or become_follower logged for each partition), the brokers' session expiries
and fencings in the run's logs, the `become_leader` / `alter_partition_sent` events, the leader epochs, the
leaders per broker, and each node's idle CPU, RSS and open descriptors, with the warm-up topic alone (the run's
baseline) and once settled. Prints one JSON object (also written to
--out) and stops the cluster.
"""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported (common/grpc_environment.py)

# isort: split
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from minikafka.client.admin import AdminClient
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.deploy import cluster_commands
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import last_lines, wait_until

HERE = Path(__file__).resolve().parent
COUNTED = (
    "broker_session_expired",
    "broker_fenced",
    "become_leader",
    "become_follower",
    "alter_partition_sent",
    "partition_open_failed",
    "log_dir_offline",
    "controller_stalled",
    "controlled_shutdown_granted",
    "controlled_shutdown_abandoned",
    "controlled_shutdown_timed_out",
)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def exited(pid: int) -> bool:
    """Gone, or a zombie (exited, not yet reaped by the cluster launcher)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def exit_reasons(cluster: Any) -> dict[str, str]:
    """For each broker that exited: the last line of its stderr (its one-line reason)."""
    return {
        spec.label: (last_lines(spec.stderr_path, 1) or ["(no stderr)"])[0]
        for spec in cluster.brokers
        if exited(cluster.pids[spec.node_id])
    }


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def idle_usage(pids: dict[str, int], window_s: float) -> dict[str, dict[str, float] | None]:
    """Each process's CPU share (percent of one core) over `window_s` with no client load, its RSS and its open
    descriptors; None for a process that is gone."""
    before: dict[str, float] = {}
    for label, pid in pids.items():
        try:
            before[label] = cpu_seconds(pid)
        except OSError:
            continue
    time.sleep(window_s)  # a measurement window, not synchronisation
    usage: dict[str, dict[str, float] | None] = {}
    for label, pid in pids.items():
        if exited(pid):
            usage[label] = None
            continue
        try:
            usage[label] = {
                "idle_cpu_percent": round(100 * (cpu_seconds(pid) - before[label]) / window_s, 1),
                "rss_mib": round(rss_mib(pid), 1),
                "open_files": open_files(pid),
            }
        except (OSError, KeyError):
            usage[label] = None
    return usage


def partitions_state(admin: AdminClient, topics: list[str]) -> list[Any] | None:
    try:
        return [p for t in admin.describe_topics(topics) for p in t.partitions]
    except KafkaError:
        return None


def create_when_brokers_unfenced(admin: AdminClient, name: str, partitions: int, timeout_s: float) -> int:
    """Create the topic, retrying while fewer than 3 brokers are unfenced (a fencing still under way); the
    number of retries."""
    deadline = time.monotonic() + timeout_s
    retries = 0
    while True:
        try:
            admin.create_topic(name, partitions, 3)
            return retries
        except KafkaError as error:
            if error.code is not ErrorCode.INVALID_REPLICATION_FACTOR or time.monotonic() > deadline:
                raise
            retries += 1
            time.sleep(0.5)  # polling interval while brokers are fenced


def all_full(state: list[Any] | None, expected: int) -> bool:
    """Every one of `expected` partitions has a leader and all its replicas in the ISR."""
    if state is None or len(state) != expected:
        return False
    return all(p.leader >= 0 and sorted(p.isr) == sorted(p.replicas) for p in state)


def start_profilers(
    cluster: Any, profile_dir: Path | None, seconds: float = 40, suffix: str = ""
) -> list[subprocess.Popen[bytes]]:
    """py-spy (when installed beside this Python) records broker-1 and every controller for `seconds` (40 from the
    big creation on, and the idle window): where their event loops spend the time."""
    py_spy = Path(sys.executable).parent / "py-spy"
    if profile_dir is None or not py_spy.exists():
        return []
    profile_dir.mkdir(parents=True, exist_ok=True)
    nodes = [spec for spec in cluster.nodes if spec.label == "broker-1" or spec in cluster.controllers]
    return [
        subprocess.Popen(
            [str(py_spy), "record", "-p", str(cluster.pids[spec.node_id]), "-d", str(round(seconds)), "-r", "50"]
            + ["--nonblocking", "-f", "raw", "-o", str(profile_dir / f"{spec.label}{suffix}.txt")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for spec in nodes
    ]


def roles_taken(logs: Path) -> dict[str, int]:
    """Per broker, how many distinct partitions it logged a become_leader or become_follower for."""
    taken: dict[str, int] = {}
    for path in sorted(logs.glob("broker-*.jsonl")):
        partitions: set[str] = set()
        with path.open() as lines:
            for line in lines:
                if '"become_leader"' in line or '"become_follower"' in line:
                    try:
                        partitions.add(json.loads(line)["partition"])
                    except (json.JSONDecodeError, KeyError):
                        continue
        taken[path.stem] = len(partitions)
    return taken


def longest_stalls(logs: Path) -> dict[str, int]:
    """Per controller, the longest `controller_stalled` it logged (ms its event loop did not run), 0 for none."""
    longest: dict[str, int] = {}
    for path in sorted(logs.glob("controller-*.jsonl")):
        worst = 0
        with path.open() as lines:
            for line in lines:
                if '"controller_stalled"' in line:
                    try:
                        worst = max(worst, int(json.loads(line)["stalled_ms"]))
                    except (json.JSONDecodeError, KeyError, ValueError):
                        continue
        longest[path.stem] = worst
    return longest


def count_events(logs: Path) -> dict[str, dict[str, int]]:
    """Per node, how often each counted event was logged. `broker_fenced` is a replay event every node logs:
    the controllers' counts are each the number of fencings."""
    counts: dict[str, dict[str, int]] = {}
    for path in sorted(logs.glob("*.jsonl")):
        seen: collections.Counter[str] = collections.Counter()
        with path.open() as lines:
            for line in lines:
                if not any(name in line for name in COUNTED):
                    continue
                try:
                    event = json.loads(line).get("event")
                except json.JSONDecodeError:
                    continue
                if event in COUNTED:
                    seen[event] += 1
        counts[path.stem] = {name: seen[name] for name in COUNTED}
    return counts


def controller_failover(cluster: Any, admin: AdminClient, timeout_s: float) -> dict[str, Any]:
    """SIGKILL the active controller; the seconds until another leads and a CreateTopics commits. The killed one is
    started again and the quorum left whole."""
    faults = Faults(cluster)
    leader = admin.describe_quorum()["leader_id"]
    faults.kill(leader)
    started = time.monotonic()

    def committed() -> bool:
        try:
            admin.create_topic("failover-probe", 1, 3)
            return True
        except KafkaError:
            return False

    def another_leads() -> bool:
        try:
            return admin.describe_quorum()["leader_id"] not in (-1, leader)
        except KafkaError:
            return False

    ok = wait_until(another_leads, timeout_s, interval_s=0.2) and wait_until(committed, timeout_s, interval_s=0.2)
    elapsed = round(time.monotonic() - started, 2) if ok else None
    new_leader = admin.describe_quorum()["leader_id"] if ok else None
    faults.start(leader)
    return {"killed_controller": leader, "new_controller": new_leader, "controller_failover_s": elapsed}


def roles_since(path: Path, position: int) -> int:
    """Distinct partitions a broker logged a become_leader or become_follower for after byte `position` of its log."""
    partitions: set[str] = set()
    with path.open() as lines:
        lines.seek(position)
        for line in lines:
            if '"become_leader"' in line or '"become_follower"' in line:
                try:
                    partitions.add(json.loads(line)["partition"])
                except (json.JSONDecodeError, KeyError):
                    continue
    return len(partitions)


def broker_restart(cluster: Any, admin: AdminClient, topics: list[str], total: int, timeout_s: float) -> dict[str, Any]:
    """Stop broker 1 (controlled shutdown), start it again: the seconds its stop took, and from its start until it
    took on every one of its replicas again and every ISR is full."""
    faults = Faults(cluster)
    spec = cluster.brokers[0]
    started = time.monotonic()
    faults.stop(spec.node_id, timeout_s=timeout_s)
    stopped = round(time.monotonic() - started, 1)
    position = spec.events_path.stat().st_size
    started = time.monotonic()
    faults.start(spec.node_id)
    rejoined = wait_until(lambda: roles_since(spec.events_path, position) >= total, timeout_s, interval_s=2.0)
    rejoined_s = round(time.monotonic() - started, 1) if rejoined else None
    full = wait_until(lambda: all_full(partitions_state(admin, topics), total), timeout_s, interval_s=2.0)
    return {
        "restarted_broker": spec.node_id,
        "broker_stop_s": stopped,
        "broker_restart_replicas_taken_s": rejoined_s,
        "broker_restart_isrs_full_s": round(time.monotonic() - started, 1) if full else None,
    }


def run(
    run_dir: Path,
    partitions: int,
    per_topic: int,
    settle_s: float,
    idle_window_s: float,
    profile_dir: Path | None,
    faults: bool = False,
) -> dict[str, Any]:
    cluster = cluster_commands.up(run_dir, 3, 3, {})
    result: dict[str, Any] = {"partitions": partitions, "load_average_start": os.getloadavg()}
    try:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=30, tls=cluster.admin_tls
        )
        started = time.monotonic()
        admin.create_topic("warmup", 1000, 3)  # the finding's first step: a cluster already holding 1,000
        admin.wait_for_topic("warmup", 30)
        warm = wait_until(lambda: all_full(partitions_state(admin, ["warmup"]), 1000), settle_s, interval_s=1.0)
        result["warmup_isrs_full_s"] = round(time.monotonic() - started, 1) if warm else None
        result["events_warmup"] = count_events(run_dir / "logs")
        brokers = {spec.label: cluster.pids[spec.node_id] for spec in cluster.brokers}
        controllers = {spec.label: cluster.pids[spec.node_id] for spec in cluster.controllers}
        # The baseline of the same run: the cluster idle with the warm-up topic alone.
        result["idle_warmup"] = idle_usage({**brokers, **controllers}, idle_window_s)
        result["load_average_warmup"] = os.getloadavg()
        profilers = start_profilers(cluster, profile_dir)
        topics = ["warmup"]
        started = time.monotonic()
        remaining, index = partitions, 0
        while remaining > 0:
            size = min(per_topic, remaining)
            name = f"big{index}"
            result["create_retries"] = result.get("create_retries", 0) + create_when_brokers_unfenced(
                admin, name, size, settle_s
            )
            topics.append(name)
            remaining, index = remaining - size, index + 1
        result["create_s"] = round(time.monotonic() - started, 2)
        full_at = None
        state = None
        while time.monotonic() - started < settle_s:
            state = partitions_state(admin, topics)
            if all_full(state, partitions + 1000):
                full_at = time.monotonic() - started
                break
            time.sleep(1.0)  # polling interval of a measurement
        result["isrs_full_s"] = None if full_at is None else round(full_at, 1)
        # The metadata's ISRs start full; what takes the time is each broker taking on its replicas.
        applied = wait_until(
            lambda: min(roles_taken(run_dir / "logs").values(), default=0) >= partitions + 1000,
            max(0.0, settle_s - (time.monotonic() - started)),
            interval_s=2.0,
        )
        result["replicas_applied_s"] = round(time.monotonic() - started, 1) if applied else None
        result["roles_taken_per_broker"] = roles_taken(run_dir / "logs")
        state = partitions_state(admin, topics) or state
        if state is not None:
            big = state[1000:] if len(state) > 1000 else state
            epochs = collections.Counter(p.leader_epoch for p in big)
            result["max_leader_epoch"] = max(epochs) if epochs else None
            result["leader_epochs"] = dict(sorted(epochs.items()))
            result["leaders_per_broker"] = dict(sorted(collections.Counter(p.leader for p in big).items()))
            result["partitions_not_full"] = sum(sorted(p.isr) != sorted(p.replicas) for p in state)
        started = time.monotonic()
        described = partitions_state(admin, topics)
        result["describe_s"] = round(time.monotonic() - started, 2) if described is not None else None
        for profiler in profilers:
            profiler.wait()
        profilers = start_profilers(cluster, profile_dir, idle_window_s, "-idle")
        result["idle"] = idle_usage({**brokers, **controllers}, idle_window_s)
        for profiler in profilers:
            profiler.wait()
        result["events"] = count_events(run_dir / "logs")
        result["longest_controller_stall_ms"] = longest_stalls(run_dir / "logs")
        result["brokers_exited"] = exit_reasons(cluster)
        if faults and not result["brokers_exited"]:
            result.update(controller_failover(cluster, admin, settle_s))
            topics.append("failover-probe")
            result.update(broker_restart(cluster, admin, topics, partitions + 1001, settle_s))
            result["events_after_faults"] = count_events(run_dir / "logs")
            result["longest_controller_stall_ms_after_faults"] = longest_stalls(run_dir / "logs")
        result["load_average_end"] = os.getloadavg()
        return result
    finally:
        cluster_commands.down(cluster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=5000)
    parser.add_argument("--per-topic", type=int, default=5000, help="partitions per CreateTopics")
    parser.add_argument("--settle-s", type=float, default=300.0, help="give up waiting for full ISRs after this")
    parser.add_argument("--idle-window-s", type=float, default=10.0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--profile-dir", default=None, help="py-spy raw profiles of broker-1 and the controllers")
    parser.add_argument("--faults", action="store_true", help="then time a controller failover and a broker's restart")
    parser.add_argument("--keep-run", action="store_true", help="keep the run directory (logs, data)")
    args = parser.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="minikafka-bench-scale-"))
    result = run(
        run_dir,
        args.partitions,
        args.per_topic,
        args.settle_s,
        args.idle_window_s,
        Path(args.profile_dir) if args.profile_dir else None,
        args.faults,
    )
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.keep_run:
        print(f"the run directory stays in {run_dir}", file=sys.stderr)
    else:
        shutil.rmtree(run_dir, ignore_errors=True)  # after the figures: thousands of partitions take a while


if __name__ == "__main__":
    main()

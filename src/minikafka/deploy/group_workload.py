"""The chaos run's group consumers: members of one consumer group (`minikafka consume --group`, each a process)
that commit as they go and are SIGKILLed and restarted at seeded random times. Each incarnation writes its own
history file, `history/group-<member>-<incarnation>.jsonl` (record lines with `group` and `ts`). At the end a last
member reads what the group had not consumed yet; then every acknowledged record must have been consumed by the
group at least once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from minikafka.deploy.local_cluster import Cluster

GROUP = "chaos-readers"
# A member is killed after a uniform pause in this range: longer than a session timeout on average, so the group
# is stable some of the time rather than always waiting for a dead member to time out.
KILL_EVERY_S = (4.0, 12.0)
DOWN_S = (0.5, 2.0)  # and restarted this long after
DRAIN_IDLE_MS = 5000  # the last member stops after this long without a record once caught up
DRAIN_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class GroupCounts:
    members: int
    kills: int
    consumed: int  # record lines over every member's files (a record read twice counts twice)
    unconsumed: int  # acknowledged records no member ever consumed


class GroupWorkload:
    def __init__(self, cluster: Cluster, topic: str, members: int, seed: int, protocol: str = "classic") -> None:
        """`protocol`: the members' group.protocol, classic or consumer (KIP-848)."""
        self.cluster = cluster
        self.protocol = protocol
        self.topic = topic
        self.members = members
        self.random = random.Random(seed)
        self.history = cluster.run_dir / "history"
        self.kills = 0
        self._incarnations = [0] * members
        self._processes: list[subprocess.Popen[bytes] | None] = [None] * members
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._chaos, name="group-workload", daemon=True)

    def _spawn(self, member: int, idle_ms: int = 3600000) -> subprocess.Popen[bytes]:
        self._incarnations[member] += 1
        path = self.history / f"group-{member}-{self._incarnations[member]}.jsonl"
        command = [
            sys.executable,
            "-m",
            "minikafka.launcher",
            "consume",
            self.topic,
            "--dir",
            str(self.cluster.run_dir),
        ]
        command += ["--group", GROUP, "--from-beginning", "--json", "--timeout-ms", str(idle_ms)]
        command += ["--group-protocol", self.protocol]
        with path.open("wb") as out:
            return subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL)

    def start(self) -> None:
        self.history.mkdir(parents=True, exist_ok=True)
        for member in range(self.members):
            self._processes[member] = self._spawn(member)
        self._thread.start()

    def _chaos(self) -> None:
        while not self._stop.wait(self.random.uniform(*KILL_EVERY_S)):
            member = self.random.randrange(self.members)
            process = self._processes[member]
            if process is not None and process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
                self.kills += 1
            if self._stop.wait(self.random.uniform(*DOWN_S)):
                return
            self._processes[member] = self._spawn(member)

    def stop(self) -> None:
        """Stop the kills and the members (SIGINT: each leaves the group on its way out), then drain."""
        self._stop.set()
        self._thread.join()
        for process in self._processes:
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in self._processes:
            if process is not None:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        drain = self._spawn(0, DRAIN_IDLE_MS)
        try:
            drain.wait(DRAIN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            drain.kill()
            drain.wait()

    def kill_all(self) -> None:
        """On a failed run: no member outlives the cluster."""
        self._stop.set()
        for process in self._processes:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()

    def counts(self, produce_histories: list[Path]) -> GroupCounts:
        consumed: set[tuple[str, int, int, str]] = set()
        lines = 0
        for path in sorted(self.history.glob("group-*.jsonl")):
            for line in path.read_text(errors="replace").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a member killed mid-line
                if isinstance(record, dict) and record.get("type") is None and "offset" in record:
                    consumed.add((record["topic"], record["partition"], record["offset"], record["value"]))
                    lines += 1
        unconsumed = 0
        for history in produce_histories:
            for line in history.read_text().splitlines():
                sent = json.loads(line)
                if sent["error"] is None and sent["acks"] == "all":
                    key = (sent["topic"], sent["partition"], sent["offset"], sent["value"])
                    unconsumed += key not in consumed
        return GroupCounts(self.members, self.kills, lines, unconsumed)

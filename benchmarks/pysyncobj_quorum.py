"""Baseline: pysyncobj (a Python Raft library) committing small entries on 3 local processes.

`measure(ports, entries, outstanding)` starts the three nodes as child processes; once a leader is elected, the leader
drives the load in-process and reports commits/s and commit latency. (A follower's commands are forwarded to the
leader over TCP, which about halves its commits/s: the leader drives, as the controller's in-process rows write in
their leader.)
Needs `pip install -e ".[bench]"`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any


def _node(self_port: int, peer_ports: list[int], entries: int, outstanding: int) -> None:
    from pysyncobj import SyncObj, SyncObjConf, replicated

    class Log(SyncObj):
        def __init__(self) -> None:
            # Tuned for latency (the defaults tick every 50 ms and send appends every 100 ms: ~200 ms per commit).
            conf = SyncObjConf(appendEntriesUseBatch=True, appendEntriesPeriod=0.005, autoTickPeriod=0.002)
            super().__init__(f"127.0.0.1:{self_port}", [f"127.0.0.1:{p}" for p in peer_ports], conf)
            self.entries: list[bytes] = []

        @replicated
        def append(self, entry: bytes) -> int:
            self.entries.append(entry)
            return len(self.entries)

    node = Log()
    while node._getLeader() is None:
        time.sleep(0.05)
    if not node._isLeader():
        while True:
            time.sleep(1)  # serve until killed
    # Sequential: one entry at a time, commit latency.
    sequential = []
    for i in range(200):
        sent = time.monotonic()
        node.append(b"s%06d" % i, sync=True)
        sequential.append((time.monotonic() - sent) * 1000)
    # Pipelined: up to `outstanding` entries awaiting commit.
    slots = threading.Semaphore(outstanding)
    done = threading.Event()
    committed = [0]
    lock = threading.Lock()

    def callback(_result: Any, _error: Any) -> None:
        slots.release()
        with lock:
            committed[0] += 1
            if committed[0] == entries:
                done.set()

    started = time.monotonic()
    for i in range(entries):
        slots.acquire()
        node.append(b"e%06d" % i, callback=callback)
    done.wait(120)
    elapsed = time.monotonic() - started
    sequential.sort()
    print(
        json.dumps(
            {
                "entries": committed[0],
                "commits_per_s": round(committed[0] / elapsed, 1),
                "sequential_p50_ms": round(sequential[len(sequential) // 2], 3),
                "sequential_p99_ms": round(sequential[int(len(sequential) * 0.99)], 3),
                "outstanding": outstanding,
            }
        ),
        flush=True,
    )


def measure(ports: list[int], entries: int = 5000, outstanding: int = 64) -> dict[str, Any]:
    processes = []
    try:
        for port in ports:
            peers = [p for p in ports if p != port]
            processes.append(
                subprocess.Popen(
                    [sys.executable, __file__, str(port), ",".join(map(str, peers)), str(entries), str(outstanding)],
                    stdout=subprocess.PIPE,  # only the leader writes (its report), then exits
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
            )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            for process in processes:
                if process.poll() is not None:
                    assert process.stdout is not None
                    lines = process.stdout.read().strip().splitlines()
                    if process.returncode != 0 or not lines:
                        raise RuntimeError(f"a pysyncobj node exited with {process.returncode} and no report")
                    return json.loads(lines[-1])
            time.sleep(0.05)
        raise TimeoutError("no pysyncobj node finished the workload in 300 s")
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()


if __name__ == "__main__":
    port, peers, count, window = sys.argv[1:5]
    _node(int(port), [int(p) for p in peers.split(",")], int(count), int(window))

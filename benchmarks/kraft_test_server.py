"""Kafka's TestRaftServer (`test-kraft-server-start.sh`): the KRaft quorum alone, a write workload in place of
the controller.

    .venv/bin/python benchmarks/kraft_test_server.py --config controller.properties [--workload records|controller]
        [--num-records 5000] [--record-size 64] [--outstanding 64] [--sequential 200] [--set KEY=VALUE ...]

Each voter runs the Raft layer exactly as a controller process does (RaftDriver, the metadata log on disk with an
fsync per append, the Raft gRPC service) and, with the default `records` workload, no QuorumController. The voter
that is the leader writes `num_records` records of `record_size` bytes: first `sequential` of them one at a time
(commit latency), then the rest with `outstanding` awaiting their commit, each batch appended as the active
controller appends (`batch_linger`: at once when its first record found no earlier batch awaiting its commit, else
`controller.quorum.append.linger.ms` after that record arrived). It prints one JSON line of commits/s and commit
latency.
This is the quorum's own rate, measured as pysyncobj's baseline is (the writer inside a node, no RPC per write);
`benchmarks/run_all.py` sets the two side by side.

With the `controller` workload (not in Kafka's tool) each voter also runs the controller, and the leader, once it
is the active controller, writes metadata instead: broker registrations and topic creations submitted in-process
to the servicer a controller RPC reaches (`controller_workload.py`), so the figure is the
controller's commit rate without the RPC transport.
"""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported (common/grpc_environment.py)

# isort: split
import argparse
import asyncio
import os
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import structlog
from controller_workload import ControllerWorkload, WriteFailed, run_controller_workload

from minikafka.common.cli_support import CliError, add_config_arguments, print_json, run_event_loop, stop_requested
from minikafka.common.config import ConfigError, load_config_file, parse_overrides
from minikafka.common.event_log import configure_event_log
from minikafka.common.grpc_support import start_server
from minikafka.common.latency_stats import LatencyStats
from minikafka.common.purgatory import Purgatory
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.process import attach_controller, raft_driver
from minikafka.kraft_controller.quorum_controller import QuorumController
from minikafka.kraft_controller.raft.append_linger import batch_linger
from minikafka.kraft_controller.raft.driver import NotLeaderError, RaftDriver, RaftService
from minikafka.kraft_controller.raft.messages import LogEntry
from minikafka.kraft_controller.service import ControllerService

# Kafka's TestRaftServer writes a topic of its own, __raft_performance_test: its records never mix with the
# metadata log a controller with the same log.dirs keeps.
RAFT_PERFORMANCE_TEST_DIR = "__raft_performance_test"


@dataclass(frozen=True)
class RaftWorkload:
    num_records: int
    record_size: int
    outstanding: int
    sequential: int


class LeadershipLost(Exception):
    """The writer stopped being the leader before its records committed."""


@dataclass
class _Batch:
    last_offset: int
    arrivals: list[float]  # when each record was ready to be written (time.monotonic)


@dataclass
class RaftWriter:
    """Writes the workload as leader and records each record's commit latency (a Raft listener)."""

    driver: RaftDriver
    linger_s: float
    record: bytes
    latency: LatencyStats = field(default_factory=LatencyStats)
    _in_flight: deque[_Batch] = field(default_factory=deque)
    _in_flight_records: int = 0
    _wake: Purgatory = field(default_factory=Purgatory)
    _epoch: int = -1

    async def write(self, count: int, outstanding: int) -> float:
        """Write `count` records keeping `outstanding` uncommitted; returns the seconds until the last commit."""
        self._epoch = self.driver.leader()[1]
        self.latency = LatencyStats()
        started = time.monotonic()
        accumulated: list[float] = []
        written = 0
        append_at = 0.0
        while written < count or self._in_flight:
            now = time.monotonic()
            # A record arrives for every free slot, as a client would send its next write on an answer.
            arriving = min(outstanding - self._in_flight_records - len(accumulated), count - written - len(accumulated))
            if arriving > 0:
                if not accumulated:
                    append_at = now + batch_linger(self.linger_s, bool(self._in_flight))
                accumulated.extend([now] * arriving)
            if accumulated and now >= append_at:
                try:
                    offset = await self.driver.propose([self.record] * len(accumulated))
                except NotLeaderError as error:
                    raise LeadershipLost(f"{error} with {written} records written") from None
                self._in_flight.append(_Batch(offset + len(accumulated) - 1, accumulated))
                self._in_flight_records += len(accumulated)
                written += len(accumulated)
                accumulated = []
                continue
            if self.driver.leader() != (self.driver.node_id, self._epoch):
                raise LeadershipLost(f"leadership moved to {self.driver.leader()} with {written} records written")
            await self._wake.wait(max(0.0, append_at - now) if accumulated else 1.0)
        return time.monotonic() - started

    # ---- Raft listener ----

    def handle_high_watermark(self, high_watermark: int) -> None:
        now = time.monotonic()
        while self._in_flight and self._in_flight[0].last_offset < high_watermark:
            batch = self._in_flight.popleft()
            self._in_flight_records -= len(batch.arrivals)
            for arrived in batch.arrivals:
                self.latency.record((now - arrived) * 1000)
        self._wake.wake_all()

    def handle_leader_change(self, epoch: int, leader_id: int | None, epoch_start_offset: int) -> None:
        self._wake.wake_all()

    def handle_commit(self, entries: Sequence[LogEntry]) -> None:
        pass  # the records are opaque bytes: nothing to replay

    def handle_snapshot(self, data: bytes, end_offset: int) -> None:
        pass


async def wait_for_leader(driver: RaftDriver, stopping: asyncio.Event) -> int | None:
    """The elected leader's id (None if stopped first); polls the Raft state, which the driver's tasks move."""
    while not stopping.is_set():
        leader_id, _ = driver.leader()
        if leader_id is not None:
            return leader_id
        await asyncio.sleep(0.02)
    return None


async def run_test_raft_server(config: ControllerConfig, workload: RaftWorkload | ControllerWorkload) -> int:
    log = structlog.get_logger()
    driver = raft_driver(config, config.data_dir / RAFT_PERFORMANCE_TEST_DIR)
    measure: Callable[[], Awaitable[dict[str, Any]]]
    controller: QuorumController | None = None
    if isinstance(workload, ControllerWorkload):
        service = attach_controller(config, driver)
        controller = service.controller
        measure = partial(_measure_controller, service, driver, workload, config)
    else:
        writer = RaftWriter(driver, config.append_linger_ms / 1000, os.urandom(workload.record_size))
        driver.add_listener(writer)
        measure = partial(_measure, writer, workload, config)
    bound = await start_server(config.listener.host, config.listener.port, [RaftService(driver).register])
    stopping = stop_requested()
    driver.start()
    if controller is not None:
        controller.start()
    log.info("test_raft_server_started", node_id=config.node_id, address=bound.address)
    status = 0
    try:
        if await wait_for_leader(driver, stopping) == config.node_id:
            try:
                print_json(await measure())
            except (LeadershipLost, WriteFailed) as error:
                log.error("test_raft_server_leadership_lost", error=str(error))
                print_json({"node_id": config.node_id, "error": str(error)})
                status = 1
        await stopping.wait()  # a voter serves the others until stopped
    finally:
        if controller is not None:
            await controller.stop()
        await driver.stop(resign=True)
        await bound.server.stop(grace=0.5)
    return status


async def _measure(writer: RaftWriter, workload: RaftWorkload, config: ControllerConfig) -> dict[str, Any]:
    sequential = min(workload.sequential, workload.num_records)
    await writer.write(sequential, 1)
    one_at_a_time = writer.latency.summary()
    pipelined = workload.num_records - sequential
    elapsed = await writer.write(pipelined, workload.outstanding)
    return {
        "node_id": config.node_id,
        "records": workload.num_records,
        "record_size": workload.record_size,
        "outstanding": workload.outstanding,
        "append_linger_ms": config.append_linger_ms,
        "commits_per_s": round(pipelined / elapsed, 1) if pipelined and elapsed > 0 else None,
        "commit_latency": _rounded(writer.latency.summary()),
        "sequential_commit_latency": _rounded(one_at_a_time),
    }


async def _measure_controller(
    service: ControllerService, driver: RaftDriver, workload: ControllerWorkload, config: ControllerConfig
) -> dict[str, Any]:
    while not service.controller.active:  # elected, but not yet caught up on the log it leads
        if driver.leader()[0] != config.node_id:
            raise LeadershipLost(f"leadership moved to {driver.leader()} before the controller became active")
        await asyncio.sleep(0.02)

    async def call(name: str, request: Any) -> Any:
        return await getattr(service, name)(request, None)

    async def high_watermark() -> int:
        return driver.core.high_watermark

    report = await run_controller_workload(call, high_watermark, workload)
    return {"node_id": config.node_id, "workload": "controller", "append_linger_ms": config.append_linger_ms, **report}


def _rounded(summary: dict[str, float | int | None]) -> dict[str, float | int | None]:
    return {key: round(value, 3) if isinstance(value, float) else value for key, value in summary.items()}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="kraft_test_server.py",
        description="Kafka's TestRaftServer: one voter of a KRaft quorum whose leader writes a workload instead of "
        "running the controller; prints commits/s and commit latency (the quorum alone, for benchmarks)",
    )
    add_config_arguments(parser)
    parser.add_argument(
        "--workload",
        choices=("records", "controller"),
        default="records",
        help="records: opaque records, no controller (Kafka's tool); controller: each voter runs the controller "
        "and the leader submits broker registrations and topic creations to it in-process",
    )
    parser.add_argument(
        "--num-records",
        type=int,
        default=5000,
        help="records the leader writes (controller: broker registrations; a tenth as many topic creations)",
    )
    parser.add_argument("--record-size", type=int, default=64, help="bytes of each record (records workload)")
    parser.add_argument("--outstanding", type=int, default=64, help="writes awaiting their commit at a time")
    parser.add_argument(
        "--sequential",
        type=int,
        default=200,
        help="writes first made one at a time, for the commit latency (records: of --num-records; controller: "
        "registrations before the rest)",
    )
    return parser.parse_args(argv)


def workload_of(args: argparse.Namespace) -> RaftWorkload | ControllerWorkload:
    for name in ("num_records", "record_size", "outstanding"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be at least 1")
    if args.sequential < 0:
        raise CliError("--sequential must not be negative")
    if args.workload == "controller":
        return ControllerWorkload(args.num_records, args.outstanding, sequential=args.sequential)
    return RaftWorkload(args.num_records, args.record_size, args.outstanding, args.sequential)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        workload = workload_of(args)
        config = load_config_file(ControllerConfig, Path(args.config), parse_overrides(args.set))
    except (CliError, ConfigError) as error:
        sys.stderr.write(f"kraft_test_server.py: error: {error}\n")
        return 1
    configure_event_log(config.label, config.events_dir, config.log_level)
    try:
        return run_event_loop(run_test_raft_server(config, workload))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

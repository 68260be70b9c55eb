"""A fake Raft for the active controller's shell: appends on propose and commits only when a test says so (or,
with `auto_commit`, right after each append), so QuorumController runs without a quorum or a disk."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from minikafka.common.config import load_config
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.control.requests import BrokerHeartbeatRequest, BrokerRegistrationRequest
from minikafka.kraft_controller.metadata.records import Endpoint
from minikafka.kraft_controller.quorum_controller import QuorumController
from minikafka.kraft_controller.raft.messages import LogEntry

CONFIG = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "PLAINTEXT://127.0.0.1:1",
    "controller.quorum.voters": "1@127.0.0.1:1",
    "log.dirs": "/nonexistent",  # never opened: the Raft log is the fake below
}


class ManualRaft:
    """Appends on propose; nothing commits until the test says so, or, with `auto_commit`, in the loop turn
    after each append (as a quorum answers later, never inside propose)."""

    node_id = 1

    def __init__(self, auto_commit: bool = False) -> None:
        self.epoch = 1
        self.leader_id: int | None = 1
        self.entries: list[LogEntry] = []
        self.appends: list[int] = []  # entries per propose call
        self.auto_commit = auto_commit
        self.controller: QuorumController | None = None
        self.high_watermark = 0

    def leader(self) -> tuple[int | None, int]:
        return self.leader_id, self.epoch

    def log_end_offset(self) -> int:
        return len(self.entries)

    async def propose(self, entries: Sequence[bytes]) -> int:
        self.appends.append(len(entries))
        base = len(self.entries)
        self.entries += [LogEntry(base + i, self.epoch, data) for i, data in enumerate(entries)]
        if self.auto_commit:
            asyncio.get_running_loop().call_soon(self.commit, len(self.entries))
        return base

    def commit(self, high_watermark: int) -> None:
        """Entries below `high_watermark` are committed: replayed (control entries are not, as RaftDriver passes
        only data entries on), then the high watermark moves."""
        assert self.controller is not None
        data = [e for e in self.entries[self.high_watermark : high_watermark] if not e.control]
        if data:
            self.controller.handle_commit(data)
        self.high_watermark = max(self.high_watermark, high_watermark)
        self.controller.handle_high_watermark(self.high_watermark)

    def take_snapshot(self, end_offset: int, data: bytes) -> None:
        pass


async def active_controller(
    linger_ms: int | None = None, auto_commit: bool = False
) -> tuple[QuorumController, ManualRaft]:
    raft = ManualRaft(auto_commit)
    raft.entries.append(LogEntry(0, 1, b"", control=True))  # the epoch-start entry
    linger = {} if linger_ms is None else {"controller.quorum.append.linger.ms": str(linger_ms)}
    controller = QuorumController(load_config(ControllerConfig, {**CONFIG, **linger}), raft, clock=lambda: 0)
    raft.controller = controller
    controller.handle_leader_change(1, 1, 0)
    raft.commit(1)
    assert controller.active
    controller.start()
    return controller, raft


async def until(condition: Callable[[], bool], what: str, timeout_s: float = 20) -> None:
    """Wait, a loop turn at a time, for `condition`; fail naming `what` after `timeout_s`."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"never happened: {what}")


async def registered_brokers(
    controller: QuorumController, broker_ids: Sequence[int], now_ms: int = 0
) -> dict[int, int]:
    """Register each broker and unfence it with a caught-up heartbeat at `now_ms`; their broker epochs."""
    epochs = {}
    for broker_id in broker_ids:
        request = BrokerRegistrationRequest(broker_id, f"incarnation-{broker_id}", (Endpoint("PLAINTEXT", "h", 1),))
        registered = await controller.submit(lambda r=request: controller.state.register_broker(r, now_ms))  # type: ignore[misc]
        epochs[broker_id] = registered.broker_epoch
        beat = BrokerHeartbeatRequest(broker_id, registered.broker_epoch, current_metadata_offset=10**9)
        answer = await controller.submit(lambda b=beat: controller.state.broker_heartbeat(b, now_ms))  # type: ignore[misc]
        assert not answer.is_fenced
    return epochs

"""The simulated cluster's nodes: each one the shipped process (`run_controller_process`, `run_broker_process`)
run as a simulated node on the virtual-time loop, started, crashed and restarted inside one process."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.process import run_broker_process
from minikafka.common.config import config_keys, load_config
from minikafka.common.node_environment import SimulatedNode, enter_simulated_node
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.process import run_controller_process
from minikafka.sim.disk import SimDisk
from minikafka.sim.network import SimNetwork

P = ParamSpec("P")
T = TypeVar("T")

CONTROLLER_IDS = (101, 102, 103)
BROKER_IDS = (1, 2, 3)
CLIENT_ID = 1000
CRASH_GRACE_S = 5.0  # how long a crashed node's tasks get to unwind (simulated)

# What every simulated node runs with: the guards and timeouts of a real cluster, a faster start.
BASE_CONFIG = {
    "cluster.id": "minikafka-sim",
    # Appends reach the simulated disk's files at once; what a power loss takes is what was not fsynced.
    "log.simulate.page.cache": "false",
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "2000",
    "replica.lag.time.max.ms": "10000",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
}


def controller_address(node_id: int) -> str:
    return f"127.0.1.{node_id - 100}:9093"


def broker_address(node_id: int) -> str:
    return f"127.0.2.{node_id}:9092"


def voters() -> str:
    return ",".join(f"{node_id}@{controller_address(node_id)}" for node_id in CONTROLLER_IDS)


def node_properties(node_id: int, data_dir: Path, overrides: Mapping[str, str]) -> dict[str, str]:
    """A node's config as `cluster up` writes it, with `--set`'s overrides its role accepts."""
    controller = node_id in CONTROLLER_IDS
    address = controller_address(node_id) if controller else broker_address(node_id)
    props = {
        **BASE_CONFIG,
        "node.id": str(node_id),
        "process.roles": "controller" if controller else "broker",
        "listeners": f"CONTROLLER://{address}" if controller else f"GRPC://{address}",
        "controller.quorum.voters": voters(),
        "log.dirs": str(data_dir),
    }
    props.update(overrides)
    accepted = {key.name for _, key in config_keys(ControllerConfig if controller else BrokerConfig)}
    return {key: value for key, value in props.items() if key in accepted}


@dataclass
class NodeExit:
    node_id: int
    error: str


class SimProcess:
    """One node's process: its config, data directory and current incarnation."""

    def __init__(self, node_id: int, data_dir: Path, network: SimNetwork, overrides: Mapping[str, str]) -> None:
        self.node_id = node_id
        self.data_dir = data_dir
        self.network = network
        self.overrides = overrides
        self.incarnation: SimulatedNode | None = None
        self.context = contextvars.Context()  # the incarnation's: its tasks run in it, or in copies of it
        self.disk = SimDisk()
        self.torn_writes: random.Random | None = None  # set: a power loss keeps a drawn prefix of unflushed writes
        self.torn_files = 0  # files a power loss left with part of their unflushed bytes
        self.task: asyncio.Task[None] | None = None
        self.exits: list[NodeExit] = []
        self.starts = 0  # incarnations started so far

    @property
    def controller(self) -> bool:
        return self.node_id in CONTROLLER_IDS

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    @property
    def parts(self) -> dict[str, Any]:
        return {} if self.incarnation is None or not self.running else self.incarnation.parts

    def start(self) -> None:
        self.starts += 1
        self.disk = SimDisk()
        node = SimulatedNode(self.node_id, self.network, self.disk)
        context = contextvars.Context()
        context.run(enter_simulated_node, node)
        self.incarnation, self.context = node, context
        self.task = asyncio.get_running_loop().create_task(self._run(), context=context)

    def run_as(self, action: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Call into the running node's shell as the node does: the tasks the call creates are the node's (a crash
        ends them, a pause holds them) and reach the simulated network, not the real one on real time."""
        if not self.running:
            raise RuntimeError(f"node {self.node_id} is not running")
        return self.context.copy().run(action, *args, **kwargs)

    async def _run(self) -> None:
        props = node_properties(self.node_id, self.data_dir, self.overrides)
        try:
            if self.controller:
                await run_controller_process(_load(ControllerConfig, props))
            else:
                self.data_dir.mkdir(parents=True, exist_ok=True)
                await run_broker_process(_load(BrokerConfig, props))
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - a node that exits with an error is an event of the run
            self.exits.append(NodeExit(self.node_id, repr(error)))
            structlog.get_logger().warning("sim_node_exited", node_id=self.node_id, error=repr(error))

    async def crash(self, power_loss: bool) -> None:
        """The process dies (SIGKILL); with `power_loss` the machine too, and the disk keeps only what was fsynced."""
        node = self.incarnation
        if node is None:
            return
        node.ended = True
        self.disk.fail("the node crashed")
        self.network.crashed(self.node_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CRASH_GRACE_S
        while (pending := _in_creation_order(node.tasks)) and loop.time() < deadline:
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=0.1)
        if power_loss:
            tails = self.disk.lose_power(self.torn_writes)
            if self.torn_writes is not None:
                torn = [f"{tail.name}:{tail.kept}/{tail.unflushed}" for tail in tails if tail.torn]
                self.torn_files += len(torn)
                structlog.get_logger().info("sim_torn_writes", node_id=self.node_id, files=torn)
        else:
            self.disk.close_all()
        self.incarnation = None

    async def stop(self, timeout_s: float = 30.0) -> None:
        """A graceful stop (SIGTERM): the controlled shutdown, then every part; a crash if it does not end in time."""
        node, task = self.incarnation, self.task
        if node is None or task is None:
            return
        node.stopping.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
        await self.crash(power_loss=False)  # whatever is left of it (nothing, after a clean stop)


def _in_creation_order(tasks: Iterable[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """The unfinished tasks, oldest first: a set's order follows memory addresses, which a replay does not keep."""
    return sorted((task for task in tasks if not task.done()), key=lambda task: getattr(task, "sim_order", 0))


def _load(cls: Any, props: dict[str, str]) -> Any:
    return load_config(cls, props)

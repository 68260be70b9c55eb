"""The startup gate runs in the simulator: a restarted simulated broker answers its client and its inter-broker gRPC
listeners (as `cluster up`'s brokers, it has both) UNAVAILABLE until the controller unfenced it, then serves them."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from minikafka.broker.startup_gate import NOT_UNFENCED
from minikafka.pb import broker_pb2, broker_pb2_grpc
from minikafka.sim.cluster import CLIENT_ID, CONTROLLER_IDS, SimProcess
from minikafka.sim.network import SimNetwork
from minikafka.sim.virtual_loop import run_virtual

BROKER = 1
CLIENT_LISTENER, INTER_BROKER_LISTENER = "127.0.2.1:9095", "127.0.2.1:9092"
LISTENERS = {
    "listeners": f"BROKER://{INTER_BROKER_LISTENER},GRPC://{CLIENT_LISTENER}",
    "inter.broker.listener.name": "BROKER",
}


async def _until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        assert loop.time() < deadline, f"not {what} within {timeout_s} simulated s"
        await asyncio.sleep(0.1)


def _unfenced(broker: SimProcess) -> bool:
    part = broker.parts.get("broker")
    return part is not None and part.lifecycle.initially_unfenced.is_set()


async def _list_offsets(network: SimNetwork, address: str) -> Any:
    """A call whose servicer answers before the unfence too (Metadata's refuses on its own): "answered", or the
    status code and details of its refusal."""
    stub = broker_pb2_grpc.BrokerStub(network.channel(CLIENT_ID, address))
    try:
        await stub.ListOffsets(broker_pb2.ListOffsetsRequest(), timeout=5)
        return "answered"
    except grpc.aio.AioRpcError as error:
        return (error.code(), error.details())


def test_a_restarted_broker_refuses_its_client_and_inter_broker_listeners_until_unfenced(tmp_path: Path) -> None:
    async def main() -> list[Any]:
        network = SimNetwork(random.Random(1))
        nodes = [SimProcess(n, tmp_path / str(n), network, {}) for n in CONTROLLER_IDS]
        broker = SimProcess(BROKER, tmp_path / str(BROKER), network, LISTENERS)
        for node in [*nodes, broker]:
            node.start()
        await _until(lambda: _unfenced(broker), "unfenced")
        seen = [await _list_offsets(network, CLIENT_LISTENER)]
        await broker.crash(power_loss=False)
        network.partition([BROKER], CONTROLLER_IDS)  # the restarted broker cannot be unfenced until this heals
        broker.start()
        await _until(lambda: CLIENT_LISTENER in network.servers, "serving")
        await asyncio.sleep(5)
        seen += [await _list_offsets(network, CLIENT_LISTENER), await _list_offsets(network, INTER_BROKER_LISTENER)]
        network.heal()
        await _until(lambda: _unfenced(broker), "unfenced after the restart")
        seen += [await _list_offsets(network, CLIENT_LISTENER), await _list_offsets(network, INTER_BROKER_LISTENER)]
        for node in [broker, *nodes]:
            await node.crash(power_loss=False)
        return seen

    before, refused, inter_broker_refused, after, inter_broker_after = run_virtual(main())
    assert before == after == inter_broker_after == "answered"
    assert refused == inter_broker_refused == (grpc.StatusCode.UNAVAILABLE, NOT_UNFENCED)

"""The simulated network: the generated stubs' unary and stream calls reach a servicer in another simulated node
through `grpc_support` (as the shells open their channels), with delays, lost messages, partitions and crashes
seen as a real network's callers see them."""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
import pytest

from minikafka.common.grpc_support import PeerChannels, start_server
from minikafka.common.node_environment import SimulatedNode, enter_simulated_node
from minikafka.common.sequential_stream import SequentialStream
from minikafka.pb import raft_pb2, raft_pb2_grpc
from minikafka.sim.disk import SimDisk
from minikafka.sim.network import NetworkFaults, SimNetwork
from minikafka.sim.virtual_loop import run_virtual

T = TypeVar("T")
ADDRESS = "127.0.0.1:9001"


class Voter(raft_pb2_grpc.RaftServicer):
    def __init__(self) -> None:
        self.votes = 0

    async def Vote(self, request: raft_pb2.VoteRequest, context: Any) -> raft_pb2.VoteResponse:
        self.votes += 1
        if request.candidate_id < 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no such candidate")
        if request.candidate_epoch == 99:
            await asyncio.sleep(3600)  # never answers in time
        return raft_pb2.VoteResponse(leader_epoch=request.candidate_epoch, vote_granted=True)

    async def FetchStream(
        self, requests: AsyncIterator[raft_pb2.RaftFetchRequest], context: Any
    ) -> AsyncIterator[raft_pb2.RaftFetchResponse]:
        async for request in requests:
            yield raft_pb2.RaftFetchResponse(high_watermark=request.fetch_offset)


def as_node(network: SimNetwork, node_id: int, work: Callable[[], Awaitable[T]]) -> asyncio.Task[T]:
    """`work` run as simulated node `node_id`, in a context of its own."""
    node = SimulatedNode(node_id, network, SimDisk())

    async def run() -> T:
        enter_simulated_node(node)
        return await work()

    return asyncio.get_running_loop().create_task(run(), context=contextvars.Context())


async def serve_voter(network: SimNetwork, voter: Voter) -> None:
    await start_server("127.0.0.1", 9001, [lambda server: raft_pb2_grpc.add_RaftServicer_to_server(voter, server)])


def test_unary_calls_reach_the_other_node_and_come_back_with_its_errors() -> None:
    async def main() -> list[Any]:
        network = SimNetwork(random.Random(1))
        voter = Voter()
        await as_node(network, 1, lambda: serve_voter(network, voter))

        async def client() -> list[Any]:
            stub = raft_pb2_grpc.RaftStub(PeerChannels().get(ADDRESS))
            granted = await stub.Vote(raft_pb2.VoteRequest(candidate_epoch=3, candidate_id=2), timeout=1)
            seen: list[Any] = [granted.vote_granted, granted.leader_epoch]
            for request in (raft_pb2.VoteRequest(candidate_id=-1), raft_pb2.VoteRequest(candidate_epoch=99)):
                with pytest.raises(grpc.aio.AioRpcError) as failed:
                    await stub.Vote(request, timeout=1)
                seen.append(failed.value.code())
            seen.append(asyncio.get_running_loop().time())
            return seen

        return await as_node(network, 2, client)

    granted, epoch, aborted, late, now = run_virtual(main())
    assert (granted, epoch) == (True, 3)
    assert aborted == grpc.StatusCode.INVALID_ARGUMENT
    assert late == grpc.StatusCode.DEADLINE_EXCEEDED
    assert 1 <= now < 1.1  # the late call waited out its own one-second deadline, in simulated time


def test_a_partition_holds_calls_until_it_heals_and_a_lost_message_times_out() -> None:
    async def main() -> list[Any]:
        network = SimNetwork(random.Random(2))
        voter = Voter()
        await as_node(network, 1, lambda: serve_voter(network, voter))
        network.partition([2], [1])

        async def client() -> list[Any]:
            loop = asyncio.get_running_loop()
            stub = raft_pb2_grpc.RaftStub(PeerChannels().get(ADDRESS))
            seen: list[Any] = []
            with pytest.raises(grpc.aio.AioRpcError) as cut:
                await stub.Vote(raft_pb2.VoteRequest(candidate_id=2), timeout=2)
            seen += [cut.value.code(), voter.votes]
            loop.call_later(5, network.heal)
            started = loop.time()
            await stub.Vote(raft_pb2.VoteRequest(candidate_id=2), timeout=30)
            seen.append(loop.time() - started)
            network.faults = NetworkFaults(drop_probability=1.0)
            with pytest.raises(grpc.aio.AioRpcError) as lost:
                await stub.Vote(raft_pb2.VoteRequest(candidate_id=2), timeout=2)
            seen.append(lost.value.code())
            return seen

        return await as_node(network, 2, client)

    cut, votes_while_cut, held_s, lost = run_virtual(main())
    assert cut == grpc.StatusCode.DEADLINE_EXCEEDED and votes_while_cut == 0
    assert 5 <= held_s < 5.2
    assert lost == grpc.StatusCode.DEADLINE_EXCEEDED


def test_a_stream_answers_in_order_and_breaks_when_its_server_crashes() -> None:
    async def main() -> list[Any]:
        network = SimNetwork(random.Random(3))
        voter = Voter()
        server_task = as_node(network, 1, lambda: serve_voter(network, voter))
        await server_task
        server_node = next(iter(network.servers.values()))

        async def client() -> list[Any]:
            stub = raft_pb2_grpc.RaftStub(PeerChannels().get(ADDRESS))
            stream: SequentialStream[Any, Any] = SequentialStream(stub.FetchStream)
            seen: list[Any] = []
            for offset in range(5):
                answer = await stream.call(raft_pb2.RaftFetchRequest(fetch_offset=offset), timeout=1)
                seen.append(answer.high_watermark)
            # The serving node goes away: its handler tasks end, the server stops listening.
            for task in list(server_node.network.servers[ADDRESS].context.run(lambda: _node_tasks())):
                task.cancel()
            await server_node.stop()
            with pytest.raises(grpc.RpcError) as gone:
                await stream.call(raft_pb2.RaftFetchRequest(fetch_offset=9), timeout=1)
            seen.append(gone.value.code())
            return seen

        return await as_node(network, 2, client)

    *offsets, gone = run_virtual(main())
    assert offsets == [0, 1, 2, 3, 4]
    assert gone == grpc.StatusCode.UNAVAILABLE


def _node_tasks() -> list[asyncio.Task[Any]]:
    from minikafka.common.node_environment import simulated_node

    node = simulated_node()
    assert node is not None
    return list(node.tasks)


def test_code_running_as_no_simulated_node_is_refused_the_real_network() -> None:
    """On a simulation's loop, a channel or server made outside every simulated node (a harness calling into a
    node's shell from its own task) would be gRPC's real one, answered on real time: refused at once."""

    async def main() -> None:
        with pytest.raises(RuntimeError, match="outside any simulated node"):
            PeerChannels().get(ADDRESS)
        with pytest.raises(RuntimeError, match="outside any simulated node"):
            await start_server("127.0.0.1", 9001, [])

    run_virtual(main())

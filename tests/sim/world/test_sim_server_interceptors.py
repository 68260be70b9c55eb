"""A simulated server runs its listener's interceptors as grpc.aio's server does: on every call, ordinary, stream
or a duplicated request's replay, each interceptor in order, the handler they return serving the call."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest

from minikafka.common.grpc_support import PeerChannels, guarded_handler, start_server
from minikafka.common.sequential_stream import SequentialStream
from minikafka.pb import raft_pb2, raft_pb2_grpc
from minikafka.sim.network import NetworkFaults, SimNetwork
from minikafka.sim.virtual_loop import run_virtual
from tests.sim.world.test_network import ADDRESS, Voter, as_node


class Gate(grpc.aio.ServerInterceptor):
    """Records each call it sees (with the name of the interceptor it follows) and, while closed, refuses it."""

    def __init__(self, name: str, seen: list[str]) -> None:
        self.name = name
        self.seen = seen
        self.open = True

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Any]], details: Any
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        self.seen.append(f"{self.name} {details.method} {dict(details.invocation_metadata).get('who', '-')}")
        handler = await continuation(details)
        return None if handler is None else guarded_handler(handler, details.method, self._unary, self._stream)

    def _unary(self, _method: str, behaviour: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def guarded(request: Any, context: Any) -> Any:
            if not self.open:
                await context.abort(grpc.StatusCode.UNAVAILABLE, f"{self.name} closed")
            return await behaviour(request, context)

        return guarded

    def _stream(self, _method: str, behaviour: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
        async def guarded(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            if not self.open:
                await context.abort(grpc.StatusCode.UNAVAILABLE, f"{self.name} closed")
            async for answer in behaviour(requests, context):
                yield answer

        return guarded


async def _serve(voter: Voter, *gates: Gate) -> None:
    await start_server(
        "127.0.0.1", 9001, [lambda server: raft_pb2_grpc.add_RaftServicer_to_server(voter, server)], interceptors=gates
    )


def test_each_call_passes_the_interceptors_in_order_and_a_closed_one_refuses_it() -> None:
    async def main() -> list[Any]:
        network = SimNetwork(random.Random(1))
        voter, seen = Voter(), []
        first, second = Gate("first", seen), Gate("second", seen)
        await as_node(network, 1, lambda: _serve(voter, first, second))

        async def client() -> list[Any]:
            stub = raft_pb2_grpc.RaftStub(PeerChannels().get(ADDRESS))
            vote = raft_pb2.VoteRequest(candidate_epoch=3, candidate_id=2)
            results: list[Any] = [(await stub.Vote(vote, timeout=1, metadata=(("who", "c"),))).vote_granted]
            stream: SequentialStream[Any, Any] = SequentialStream(stub.FetchStream)
            results.append((await stream.call(raft_pb2.RaftFetchRequest(fetch_offset=7), timeout=1)).high_watermark)
            second.open = False
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.Vote(vote, timeout=1)
            results.append((refused.value.code(), refused.value.details()))
            closed: SequentialStream[Any, Any] = SequentialStream(stub.FetchStream)
            with pytest.raises(grpc.RpcError) as refused_stream:
                await closed.call(raft_pb2.RaftFetchRequest(fetch_offset=8), timeout=1)
            results.append(refused_stream.value.code())
            return results

        return [*await as_node(network, 2, client), voter.votes, seen]

    granted, high_watermark, refused, refused_stream, votes, seen = run_virtual(main())
    assert (granted, high_watermark) == (True, 7)
    assert refused == (grpc.StatusCode.UNAVAILABLE, "second closed")
    assert refused_stream == grpc.StatusCode.UNAVAILABLE
    assert votes == 1  # the refused call never reached the servicer
    vote, fetch = "/minikafka.Raft/Vote", "/minikafka.Raft/FetchStream"
    assert seen == [
        f"first {vote} c",
        f"second {vote} c",
        f"first {fetch} -",
        f"second {fetch} -",
        f"first {vote} -",
        f"second {vote} -",
        f"first {fetch} -",
        f"second {fetch} -",
    ]


def test_a_duplicated_request_passes_the_interceptors_again() -> None:
    async def main() -> list[Any]:
        network = SimNetwork(random.Random(4), NetworkFaults(duplicate_probability=1.0))
        voter, seen = Voter(), []
        gate = Gate("gate", seen)
        await as_node(network, 1, lambda: _serve(voter, gate))

        async def client() -> None:
            stub = raft_pb2_grpc.RaftStub(PeerChannels().get(ADDRESS))
            await stub.Vote(raft_pb2.VoteRequest(candidate_epoch=3, candidate_id=2), timeout=1)
            gate.open = False  # the replay, still to come, is refused

        await as_node(network, 2, client)
        await asyncio.sleep(5)  # simulated: the replay arrives within a second
        return [network.duplicates, voter.votes, len(seen)]

    assert run_virtual(main()) == [1, 1, 2]

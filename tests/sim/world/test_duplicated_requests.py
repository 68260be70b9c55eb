"""Duplicated messages on the simulated network: a unary request delivered a second time, later, runs its handler
twice while its caller gets one answer; a stream's messages are never duplicated (TCP keeps them once and in
order); and a seeded run with duplicates holds."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from test_network import as_node

from minikafka.common.grpc_support import PeerChannels, start_server
from minikafka.common.sequential_stream import SequentialStream
from minikafka.pb import raft_pb2, raft_pb2_grpc
from minikafka.sim.event_invariants import EventInvariants
from minikafka.sim.network import NetworkFaults, SimNetwork
from minikafka.sim.virtual_loop import run_virtual
from minikafka.sim.world import SimulationSettings, simulate_seed

ADDRESS = "127.0.0.1:9002"
ALWAYS = NetworkFaults(duplicate_probability=1.0, duplicate_max_late_ms=500)


class CountingVoter(raft_pb2_grpc.RaftServicer):
    def __init__(self) -> None:
        self.votes: list[float] = []  # when each Vote ran
        self.fetches = 0

    async def Vote(self, request: raft_pb2.VoteRequest, context: Any) -> raft_pb2.VoteResponse:
        self.votes.append(asyncio.get_running_loop().time())
        if request.candidate_id < 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no such candidate")
        return raft_pb2.VoteResponse(leader_epoch=len(self.votes), vote_granted=True)

    async def FetchStream(
        self, requests: AsyncIterator[raft_pb2.RaftFetchRequest], context: Any
    ) -> AsyncIterator[raft_pb2.RaftFetchResponse]:
        async for request in requests:
            self.fetches += 1
            yield raft_pb2.RaftFetchResponse(high_watermark=request.fetch_offset)


async def serve(voter: CountingVoter) -> None:
    await start_server("127.0.0.1", 9002, [lambda server: raft_pb2_grpc.add_RaftServicer_to_server(voter, server)])


async def until(condition: Callable[[], bool], deadline_s: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while not condition():
        assert loop.time() < end, "condition not met in time"
        await asyncio.sleep(0.01)


def test_a_duplicated_request_runs_its_handler_twice_and_its_caller_gets_one_answer() -> None:
    async def main() -> dict[str, Any]:
        network = SimNetwork(random.Random(5), ALWAYS)
        voter = CountingVoter()
        await as_node(network, 1, lambda: serve(voter))

        async def client() -> dict[str, Any]:
            stub = raft_pb2_grpc.RaftStub(PeerChannels().get(ADDRESS))
            answer = await stub.Vote(raft_pb2.VoteRequest(candidate_epoch=3, candidate_id=2), timeout=1)
            answered_at = asyncio.get_running_loop().time()
            await until(lambda: len(voter.votes) == 2)
            return {"epoch": answer.leader_epoch, "answered_at": answered_at, "votes": list(voter.votes)}

        seen = await as_node(network, 2, client)
        # A duplicate's refusal (a handler's abort) goes to nobody, and raises nowhere.
        aborted = await as_node(network, 2, lambda: _vote(raft_pb2.VoteRequest(candidate_id=-1)))
        await until(lambda: len(voter.votes) == 4)
        return {**seen, "aborted": aborted, "duplicates": network.duplicates}

    seen = run_virtual(main())
    assert seen["epoch"] == 1  # the first delivery's answer
    assert len(seen["votes"]) == 2 and seen["votes"][1] > seen["votes"][0]
    assert seen["aborted"] == grpc.StatusCode.INVALID_ARGUMENT
    assert seen["duplicates"] == 2


async def _vote(request: raft_pb2.VoteRequest) -> grpc.StatusCode:
    try:
        await raft_pb2_grpc.RaftStub(PeerChannels().get(ADDRESS)).Vote(request, timeout=1)
    except grpc.aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def test_a_duplicate_reaching_a_node_that_went_away_runs_nothing_and_a_stream_is_never_duplicated() -> None:
    async def main() -> dict[str, Any]:
        network = SimNetwork(random.Random(6), NetworkFaults(duplicate_probability=1.0, duplicate_max_late_ms=0))
        voter = CountingVoter()
        await as_node(network, 1, lambda: serve(voter))

        async def client() -> dict[str, Any]:
            stub = raft_pb2_grpc.RaftStub(PeerChannels().get(ADDRESS))
            stream: SequentialStream[Any, Any] = SequentialStream(stub.FetchStream)
            answers = [
                (await stream.call(raft_pb2.RaftFetchRequest(fetch_offset=n), timeout=1)).high_watermark
                for n in range(5)
            ]
            network.faults = NetworkFaults(duplicate_probability=1.0, duplicate_max_late_ms=10_000)
            await stub.Vote(raft_pb2.VoteRequest(candidate_id=2), timeout=1)
            network.crashed(1)  # before the duplicate arrives
            await asyncio.sleep(11)  # past every duplicate's lateness: nothing more may run
            return {"answers": answers, "votes": len(voter.votes), "fetches": voter.fetches}

        return await as_node(network, 2, client)

    seen = run_virtual(main())
    assert seen == {"answers": [0, 1, 2, 3, 4], "votes": 1, "fetches": 5}


def test_a_seeded_run_with_duplicated_requests_holds() -> None:
    settings = SimulationSettings(1, duration_s=10.0, network=NetworkFaults(duplicate_probability=0.3))
    result = simulate_seed(settings)
    assert result.violation is None, result.violation
    assert result.observed["duplicated_requests"] > 0


def _registered(offset: int, broker_epoch: int, incarnation: str) -> dict[str, Any]:
    return {
        "event": "broker_registered",
        "offset": offset,
        "broker_id": 2,
        "broker_epoch": broker_epoch,
        "incarnation_id": incarnation,
    }


def _elr(offset: int, isr: list[int], elr: list[int]) -> dict[str, Any]:
    return {
        "event": "partition_changed",
        "offset": offset,
        "topic": "sim",
        "topic_id": "t",
        "partition": 0,
        "leader": isr[0] if isr else -1,
        "isr": isr,
        "elr": elr,
        "replicas": [1, 2, 3],
        "leader_epoch": offset,
        "partition_epoch": offset,
        "reason": "fence",
    }


def test_a_replayed_registration_of_the_same_incarnation_is_no_unclean_start_for_elr_members_complete() -> None:
    """Seed 17 of the default faults with `--duplicate-probability 0.3`: broker 2's BrokerRegistration, replayed a
    second later, registered the same incarnation again (fenced, a new broker epoch, as Kafka's controller does);
    it stays in the ELR, as Kafka keeps it (its unclean-shutdown handling is for a new incarnation only), and
    ElrMembersComplete took the replay for an unclean start. A new incarnation's unclean start still breaks it."""

    def violations(second_incarnation: str) -> list[str]:
        checks = EventInvariants()
        checks.observe(2, 1, {"event": "broker_starting", "previous_broker_epoch": -1})
        for event in (
            _registered(4, 4, "first"),
            _elr(10, [2, 3], []),
            _registered(28, 28, second_incarnation),
            _elr(29, [3], [2]),
        ):
            checks.observe(None, 1, event)
        return [v.invariant for v in checks.violations]

    assert violations("first") == []
    assert violations("second") == ["ElrMembersComplete"]

"""The simulated controller quorum as an operator runs it: formatted as a dynamic quorum (KIP-853) for a run that
wipes controllers, and a wiped controller's voter replaced under its new directory, as `chaos`'s controller-wipe
does on real processes (describe the quorum, remove the old directory, add the new one)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import PeerChannels
from minikafka.kraft_controller.raft.bootstrap import format_controller, format_initial_controllers
from minikafka.pb import controller_pb2, controller_pb2_grpc
from minikafka.sim.cluster import BASE_CONFIG, CONTROLLER_IDS, SimProcess, controller_address
from minikafka.storage.meta_properties import new_directory_id

R = TypeVar("R")
CLUSTER_ID = BASE_CONFIG["cluster.id"]
POLL_S = 0.5
# The answers after which a voter change is asked again: no leader yet, or its commit not reached in time.
_RETRIED = frozenset({ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT})


def format_dynamic_quorum(processes: Mapping[int, SimProcess]) -> None:
    """`kafka-storage format --initial-controllers` for every controller: each voter named by id and directory."""
    format_initial_controllers({node_id: processes[node_id].data_dir for node_id in CONTROLLER_IDS}, CLUSTER_ID)


class QuorumOperator:
    """Calls the active controller over the simulated network, as `kafka-metadata-quorum` does."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.channels = PeerChannels()

    async def ask(
        self, call: Callable[[controller_pb2_grpc.ControllerStub], Awaitable[R]], done: Callable[[R], bool]
    ) -> R | None:
        """Each controller in turn until one gives an answer `done` accepts; None after `timeout_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        while loop.time() < deadline:
            for node_id in CONTROLLER_IDS:
                stub = controller_pb2_grpc.ControllerStub(self.channels.get(controller_address(node_id)))
                try:
                    answer = await call(stub)
                except Exception:  # noqa: BLE001 - a controller away or cut off: ask the next
                    continue
                if done(answer):
                    return answer
            await asyncio.sleep(POLL_S)
        return None

    async def describe(self) -> controller_pb2.DescribeQuorumResponse | None:
        request = controller_pb2.DescribeQuorumRequest()
        return await self.ask(
            lambda stub: stub.DescribeQuorum(request, timeout=5), lambda r: r.error_code == ErrorCode.NONE
        )

    async def _change(
        self, call: Callable[[controller_pb2_grpc.ControllerStub], Awaitable[controller_pb2.RaftVoterChangeResponse]]
    ) -> str:
        """A voter change asked until it is answered other than NOT_CONTROLLER or REQUEST_TIMED_OUT: "" once
        committed, else the refusal."""
        answer = await self.ask(call, lambda r: ErrorCode.of(r.error_code) not in _RETRIED)
        if answer is None:
            return f"not answered within {self.timeout_s:.0f} s"
        if answer.error_code != ErrorCode.NONE:
            return f"{ErrorCode.of(answer.error_code).name}: {answer.error_message}"
        return ""

    async def replace_voter(self, node_id: int, old: str, new: str) -> str:
        """Once `node_id` fetches as an observer in directory `new`: remove `old`, add `new`. Returns what went
        wrong ("" when the voter set names the new directory)."""

        def observed(answer: controller_pb2.DescribeQuorumResponse) -> bool:
            return answer.error_code == ErrorCode.NONE and any(
                o.replica_id == node_id and o.replica_directory_id == new for o in answer.observers
            )

        request = controller_pb2.DescribeQuorumRequest()
        if await self.ask(lambda stub: stub.DescribeQuorum(request, timeout=5), observed) is None:
            return f"controller {node_id} was not seen fetching in directory {new} within {self.timeout_s:.0f} s"
        remove = controller_pb2.RemoveRaftVoterRequest(cluster_id=CLUSTER_ID, voter_id=node_id, voter_directory_id=old)
        removing = self._change(lambda stub: stub.RemoveRaftVoter(remove, timeout=35))
        if refused := await self._unless_done(removing, ErrorCode.VOTER_NOT_FOUND, node_id, old, present=False):
            return f"RemoveRaftVoter({node_id}, {old}): {refused}"
        add = controller_pb2.AddRaftVoterRequest(
            cluster_id=CLUSTER_ID, voter_id=node_id, voter_directory_id=new, timeout_ms=30_000
        )
        adding = self._change(lambda stub: stub.AddRaftVoter(add, timeout=35))
        if refused := await self._unless_done(adding, ErrorCode.DUPLICATE_VOTER, node_id, new, present=True):
            return f"AddRaftVoter({node_id}, {new}): {refused}"
        return ""

    async def _unless_done(
        self, change: Awaitable[str], done_error: ErrorCode, node_id: int, directory: str, present: bool
    ) -> str:
        """The change's refusal, or "" when it is `done_error` and the voter set shows the change made: a change
        asked again after its answer was lost to a leader change is refused so once the first one committed, and
        an operator then reads the quorum (`kafka-metadata-quorum describe`)."""
        refused = await change
        if refused.startswith(done_error.name) and await self._voter(node_id, directory) is present:
            return ""
        return refused

    async def _voter(self, node_id: int, directory: str) -> bool | None:
        """Whether the voter set names `node_id` in `directory`; None when no controller answered."""
        described = await self.describe()
        if described is None:
            return None
        return any(v.replica_id == node_id and v.replica_directory_id == directory for v in described.current_voters)


def wipe_and_format(process: SimProcess, dynamic: bool) -> str:
    """A controller's disk replaced: empty, and in a dynamic quorum formatted to join (a new directory, no voter
    set), as an operator formats a replaced controller's disk. Returns the new directory ("" in a static quorum):
    the operator adds the voter by the id its own disk holds, as `kafka-metadata-quorum add-controller` does, not
    by the leader's observers, which still list the directories of earlier wipes."""
    shutil.rmtree(process.data_dir, ignore_errors=True)
    if not dynamic:
        return ""
    return format_controller(process.data_dir, CLUSTER_ID, process.node_id, new_directory_id(), None).directory_id

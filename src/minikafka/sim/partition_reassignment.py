"""The operator's partition reassignment of a fault plan's `reassign` step: AlterPartitionReassignments sent to the
active controller over the simulated network, the request `kafka-reassign-partitions --execute` (the admin client)
sends, answered by the controller's own service."""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2
from minikafka.sim.controller_quorum import QuorumOperator

REQUEST_TIMEOUT_S = 10.0


def _refusal(answer: controller_pb2.AlterPartitionReassignmentsResponse) -> str:
    """ "" when the partition's reassignment was accepted, else what refused it."""
    if answer.error_code != ErrorCode.NONE:
        return f"{ErrorCode.of(answer.error_code).name}: {answer.error_message}"
    refused = [p for topic in answer.responses for p in topic.partitions if p.error_code != ErrorCode.NONE]
    return f"{ErrorCode.of(refused[0].error_code).name}: {refused[0].error_message}" if refused else ""


async def reassign_partition(operator: QuorumOperator, topic: str, partition: int, replicas: Sequence[int]) -> str:
    """Move `topic`-`partition` to `replicas`, asking each controller until the active one answers; "" once it
    accepted, else the refusal (or that no controller answered within the operator's time)."""
    request = controller_pb2.AlterPartitionReassignmentsRequest(timeout_ms=int(REQUEST_TIMEOUT_S * 1000))
    entry = request.topics.add(name=topic).partitions.add(partition_index=partition)
    entry.replicas.broker_ids.extend(replicas)
    answer = await operator.ask(
        lambda stub: stub.AlterPartitionReassignments(request, timeout=REQUEST_TIMEOUT_S),
        lambda r: r.error_code != ErrorCode.NOT_CONTROLLER,
    )
    if answer is None:
        return f"no active controller answered within {operator.timeout_s:.0f} s"
    return _refusal(answer)

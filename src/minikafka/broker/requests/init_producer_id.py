"""InitProducerId (Kafka's KafkaApis.handleInitProducerIdRequest). Without a transactional id: a producer id the
controller allocated to this broker, epoch 0; as in Kafka, such a request always gets a new id, whatever id and
epoch it carries (KIP-360's fields matter only to transactional producers). With one: the transaction coordinator
answers (a new or bumped epoch that fences the id's older producers), where the front end has one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from minikafka.broker.client_authorizer import Caller
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from minikafka.broker.transaction.coordinator import TransactionCoordinator


@dataclass(slots=True)
class ProducerIdAnswer:
    error: ErrorCode
    message: str
    producer_id: int  # -1 on an error
    producer_epoch: int  # -1 on an error


async def handle_init_producer_id(
    manager: ReplicaManager,
    transactional_id: str | None,
    transactions: TransactionCoordinator | None = None,
    timeout_ms: int = 60000,
    expected: tuple[int, int] | None = None,
    caller: Caller | None = None,
) -> ProducerIdAnswer:
    """`caller` None: never refused (an inter-node caller)."""
    refusal = None if caller is None else _refusal(manager, transactional_id, caller)
    if refusal is not None:
        return refusal
    if transactional_id is not None:
        if transactions is None:
            # The gRPC front end has no transaction coordinator: a transactional producer is told so for good.
            return ProducerIdAnswer(ErrorCode.INVALID_REQUEST, "transactions are not supported here", -1, -1)
        reply = await transactions.init_producer_id(transactional_id, timeout_ms, expected)
        if reply.error != ErrorCode.NONE:
            return ProducerIdAnswer(reply.error, "", -1, -1)
        return ProducerIdAnswer(ErrorCode.NONE, "", reply.producer_id, reply.producer_epoch)
    try:
        producer_id = await manager.producer_ids.generate()
    except KafkaError as error:
        return ProducerIdAnswer(error.code, error.message, -1, -1)
    return ProducerIdAnswer(ErrorCode.NONE, "", producer_id, 0)


def _refusal(manager: ReplicaManager, transactional_id: str | None, caller: Caller) -> ProducerIdAnswer | None:
    """Kafka's: WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the cluster or WRITE on some
    topic (KIP-679)."""
    authorizer = manager.authorizer
    if transactional_id is not None:
        if authorizer.allowed(caller, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return None
        return ProducerIdAnswer(
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactional Id authorization failed.", -1, -1
        )
    if authorizer.allowed_on_some(caller, AclOperation.WRITE, ResourceType.TOPIC) or authorizer.allowed_on_cluster(
        caller, AclOperation.IDEMPOTENT_WRITE
    ):
        return None
    return ProducerIdAnswer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", -1, -1)

"""The transaction APIs of the Kafka listener, answered by the broker's transaction coordinator: AddPartitionsToTxn
(v3 and below one transaction; v4+ a batch, with VerifyOnly), AddOffsetsToTxn, EndTxn, TxnOffsetCommit (at the
group coordinator), DescribeTransactions and ListTransactions. InitProducerId with a transactional id and
FindCoordinator with key type 1 come here from their own modules."""

from __future__ import annotations

import datetime
from typing import Any

from minikafka.broker.coordinator_runtime.internal_topic import partition_for
from minikafka.broker.group.offsets import CommitRequest
from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.kafka_wire.group_offsets import as_simple_commit, consumer_group_refusal
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.transaction.core import Reply
from minikafka.broker.transaction.state import TxnState
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.clock import wall_ms
from minikafka.common.errors import ErrorCode

ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66
PRODUCE = 0
END_TXN_V2 = 5  # the first EndTxn version of transaction.version 2

VERSIONS: dict[int, tuple[int, int]] = {
    ADD_PARTITIONS_TO_TXN: (0, 5),
    ADD_OFFSETS_TO_TXN: (0, 4),
    END_TXN: (0, 5),  # v5: a producer of transaction.version 2 (the epoch bumped by every EndTxn, and answered)
    TXN_OFFSET_COMMIT: (0, 5),  # v5: a producer of transaction.version 2, which sends no AddOffsetsToTxn
    DESCRIBE_TRANSACTIONS: (0, 0),
    LIST_TRANSACTIONS: (0, 1),
}


def _fenced(error: ErrorCode, api_version: int, first_with_fenced: int) -> ErrorCode:
    """Before PRODUCER_FENCED (KIP-588), clients know it as INVALID_PRODUCER_EPOCH."""
    if error == ErrorCode.PRODUCER_FENCED and api_version < first_with_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


async def handle_add_partitions(ctx: WireContext, request: Request) -> Any:
    body, version = request.body, request.header.api_version
    cls = response_class(ADD_PARTITIONS_TO_TXN, version)
    if version <= 3:
        results = await _add_partitions_one(
            ctx,
            body.v3_and_below_transactional_id,
            body.v3_and_below_producer_id,
            body.v3_and_below_producer_epoch,
            body.v3_and_below_topics,
            False,
            version,
        )
        return build(cls, throttle_time=0, results_by_topic_v3_and_below=_topic_results(cls, results))
    answered = []
    for txn in body.transactions or ():
        results = await _add_partitions_one(
            ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.topics, txn.verify_only, version
        )
        answered.append(
            build(
                sibling(cls, "AddPartitionsToTxnResult"),
                transactional_id=txn.transactional_id,
                topic_results=_topic_results(cls, results),
            )
        )
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, results_by_transaction=tuple(answered))


async def _add_partitions_one(
    ctx: WireContext,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    topics: Any,
    verify_only: bool,
    version: int,
) -> dict[TopicPartitionKey, ErrorCode]:
    asked = [TopicPartitionKey(t.name, p) for t in topics or () for p in t.partitions or ()]
    if ctx.transactions is None:
        return dict.fromkeys(asked, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not _may_write(ctx, transactional_id):
        return dict.fromkeys(asked, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    denied = {tp for tp in asked if not ctx.allowed(AclOperation.WRITE, ResourceType.TOPIC, tp.topic)}
    if denied:  # as Kafka: nothing is added, the others OPERATION_NOT_ATTEMPTED
        return {
            tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp in denied else ErrorCode.OPERATION_NOT_ATTEMPTED
            for tp in asked
        }
    image = ctx.manager.metadata.image
    unknown = {
        tp
        for tp in asked
        if (topic := image.topics_by_name.get(tp.topic)) is None or tp.partition not in topic.partitions
    }
    if unknown:
        # As Kafka: nothing is added; the unknown partitions say why, the others OPERATION_NOT_ATTEMPTED.
        return {
            tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
            for tp in asked
        }
    if verify_only:
        return ctx.transactions.verify(transactional_id, producer_id, epoch, asked)
    reply = await ctx.transactions.add_partitions(transactional_id, producer_id, epoch, asked)
    return dict.fromkeys(asked, _fenced(reply.error, version, 2))


def _topic_results(cls: type, results: dict[TopicPartitionKey, ErrorCode]) -> tuple[Any, ...]:
    by_topic: dict[str, list[tuple[int, ErrorCode]]] = {}
    for tp, error in results.items():
        by_topic.setdefault(tp.topic, []).append((tp.partition, error))
    partition_cls = sibling(cls, "AddPartitionsToTxnPartitionResult")
    return tuple(
        build(
            sibling(cls, "AddPartitionsToTxnTopicResult"),
            name=name,
            results_by_partition=tuple(
                build(partition_cls, partition_index=p, partition_error_code=e) for p, e in partitions
            ),
        )
        for name, partitions in by_topic.items()
    )


async def handle_add_offsets(ctx: WireContext, request: Request) -> Any:
    body, version = request.body, request.header.api_version
    cls = response_class(ADD_OFFSETS_TO_TXN, version)
    if ctx.transactions is None:
        return build(cls, throttle_time=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not _may_write(ctx, body.transactional_id):
        return build(cls, throttle_time=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, body.group_id):
        return build(cls, throttle_time=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    reply = await ctx.transactions.add_offsets(
        body.transactional_id, body.producer_id, body.producer_epoch, body.group_id
    )
    return build(cls, throttle_time=0, error_code=_fenced(reply.error, version, 2))


async def handle_end_txn(ctx: WireContext, request: Request) -> Any:
    body, version = request.body, request.header.api_version
    cls = response_class(END_TXN, version)
    reply = Reply(0, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not _may_write(ctx, body.transactional_id):
        reply = Reply(0, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif ctx.transactions is not None:
        reply = await ctx.transactions.end_txn(
            body.transactional_id,
            body.producer_id,
            body.producer_epoch,
            body.committed,
            client_transaction_version(END_TXN, version),
        )
    if version < END_TXN_V2:
        return build(cls, throttle_time=0, error_code=_fenced(reply.error, version, 2))
    return build(
        cls,
        throttle_time=0,
        error_code=reply.error,
        producer_id=reply.producer_id,
        producer_epoch=reply.producer_epoch,
    )


async def _add_offsets_partition(ctx: WireContext, body: Any) -> ErrorCode:
    """TxnOffsetCommit v5 (transaction.version 2): the group's __consumer_offsets partition joins the transaction
    here, as AddOffsetsToTxn would have added it."""
    offsets = ctx.manager.metadata.image.topics_by_name.get("__consumer_offsets")
    if ctx.verifier is None or offsets is None or not offsets.partitions:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    partition = TopicPartition("__consumer_offsets", partition_for(body.group_id, len(offsets.partitions)))
    verifier = ctx.verifier
    error = await verifier.add_to_transaction(body.transactional_id, body.producer_id, body.producer_epoch, partition)
    return _UNREACHED_TXN_COORDINATOR.get(error, error)


# The transaction coordinator could not be reached or is moving: retriable for the client, which must not look
# for another group coordinator (this one is fine).
_UNREACHED_TXN_COORDINATOR = {
    ErrorCode.NOT_COORDINATOR: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
}


def client_transaction_version(api_key: int, api_version: int) -> int:
    """The transaction version a request's version says its producer speaks (Kafka reads it from the version, as
    the client picks that version from the finalized transaction.version): 2 for EndTxn v5, Produce v12 and
    TxnOffsetCommit v5, else 0."""
    first = {END_TXN: END_TXN_V2, TXN_OFFSET_COMMIT: 5, PRODUCE: 12}.get(api_key)
    return 2 if first is not None and api_version >= first else 0


async def handle_txn_offset_commit(ctx: WireContext, request: Request) -> Any:
    body, version = request.body, request.header.api_version
    cls = response_class(TXN_OFFSET_COMMIT, version)
    known = ctx.manager.metadata.image.topics_by_name
    entries = [
        (
            TopicPartitionKey(t.name, p.partition_index),
            p.committed_offset,
            getattr(p, "committed_leader_epoch", -1),
            p.committed_metadata,
        )
        for t in body.topics or ()
        if t.name in known
        for p in t.partitions or ()
    ]
    errors: dict[TopicPartitionKey, ErrorCode] = {}
    refusal = _txn_offset_commit_refusal(ctx, body)
    if refusal is not None:
        error = refusal
    elif ctx.groups is None:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    elif version >= 5 and (added := await _add_offsets_partition(ctx, body)) != ErrorCode.NONE:
        error = added
    else:
        error, errors = await _txn_commit(ctx, body, version, entries)
    partition_cls = sibling(cls, "TxnOffsetCommitResponsePartition")
    topics = tuple(
        build(
            sibling(cls, "TxnOffsetCommitResponseTopic"),
            name=t.name,
            partitions=tuple(
                build(
                    partition_cls,
                    partition_index=p.partition_index,
                    error_code=errors.get(TopicPartitionKey(t.name, p.partition_index), error)
                    if t.name in known
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                )
                for p in t.partitions or ()
            ),
        )
        for t in body.topics or ()
    )
    return build(cls, throttle_time=0, topics=topics)


async def _txn_commit(
    ctx: WireContext, body: Any, version: int, entries: list[tuple[TopicPartitionKey, int, int, str | None]]
) -> tuple[ErrorCode, dict[TopicPartitionKey, ErrorCode]]:
    """The member named is checked by its consumer-protocol group's member epoch when the group is one (its
    `generation_id` carries the member epoch), else by the classic coordinator."""
    assert ctx.groups is not None
    member = CommitRequest(
        0,
        getattr(body, "member_id", ""),
        getattr(body, "group_instance_id", None),
        getattr(body, "generation_id", -1),
        (),
        version,
    )
    refusal = consumer_group_refusal(ctx, body.group_id, member, transactional=True)
    if refusal is not None and refusal != ErrorCode.NONE:
        return refusal, {}
    if refusal is not None:
        member = as_simple_commit(member)
    return await ctx.groups.txn_commit_offsets(
        body.group_id,
        body.producer_id,
        body.producer_epoch,
        member.member_id,
        member.group_instance_id,
        member.generation_id,
        entries,
    )


def _may_write(ctx: WireContext, transactional_id: str) -> bool:
    """Kafka's check of every call of a transactional producer: WRITE on its transactional id."""
    return ctx.allowed(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)


def _txn_offset_commit_refusal(ctx: WireContext, body: Any) -> ErrorCode | None:
    """Kafka's order: READ on the group, WRITE on the transactional id, READ on every topic (here: all or none)."""
    if not ctx.allowed(AclOperation.READ, ResourceType.GROUP, body.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if not _may_write(ctx, body.transactional_id):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if any(not ctx.allowed(AclOperation.READ, ResourceType.TOPIC, t.name) for t in body.topics or ()):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None


def _timestamp(ms: int) -> datetime.datetime:
    """kio writes a datetime as its epoch milliseconds: -1 (Kafka's "none") is a millisecond before the epoch."""
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


def handle_describe(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_TRANSACTIONS, request.header.api_version)
    state_cls, topic_cls = sibling(cls, "TransactionState"), sibling(cls, "TopicData")
    states = []
    for transactional_id in request.body.transactional_ids or ():
        found = ctx.transactions.describe(transactional_id) if ctx.transactions else ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not ctx.allowed(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            found = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if isinstance(found, ErrorCode):
            states.append(
                build(
                    state_cls,
                    error_code=found,
                    transactional_id=transactional_id,
                    transaction_state="",
                    transaction_timeout=0,
                    transaction_start_time=_timestamp(0),  # the field's default, as Kafka sends with an error
                    producer_id=-1,
                    producer_epoch=-1,
                    topics=(),
                )
            )
            continue
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(found.partitions, key=lambda p: (p.topic, p.partition)):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        states.append(
            build(
                state_cls,
                error_code=ErrorCode.NONE,
                transactional_id=transactional_id,
                transaction_state=found.state.display_name,
                transaction_timeout=found.timeout_ms,
                transaction_start_time=_timestamp(found.start_ms),
                producer_id=found.producer_id,
                producer_epoch=found.producer_epoch,
                topics=tuple(build(topic_cls, topic=name, partitions=tuple(ids)) for name, ids in by_topic.items()),
            )
        )
    return build(cls, throttle_time=0, transaction_states=tuple(states))


def handle_list(ctx: WireContext, request: Request) -> Any:
    body = request.body
    cls = response_class(LIST_TRANSACTIONS, request.header.api_version)
    names = {state.display_name: state for state in TxnState}
    wanted = {names[f] for f in body.state_filters or () if f in names}
    unknown = tuple(f for f in body.state_filters or () if f not in names)
    listed = ctx.transactions.listed() if ctx.transactions is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE
    if isinstance(listed, ErrorCode):
        return build(cls, throttle_time=0, error_code=listed, unknown_state_filters=unknown, transaction_states=())
    producers = set(body.producer_id_filters or ())
    duration_ms = int(getattr(body, "duration_filter", -1))
    entries = tuple(
        build(
            sibling(cls, "TransactionState"),
            transactional_id=m.transactional_id,
            producer_id=m.producer_id,
            transaction_state=m.state.display_name,
        )
        for m in listed
        if ctx.allowed(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, m.transactional_id)
        and (not wanted or m.state in wanted)
        and (not producers or m.producer_id in producers)
        and (duration_ms < 0 or (m.state == TxnState.ONGOING and wall_ms() - m.start_ms >= duration_ms))
    )
    return build(
        cls, throttle_time=0, error_code=ErrorCode.NONE, unknown_state_filters=unknown, transaction_states=entries
    )


HANDLERS: dict[int, Any] = {
    ADD_PARTITIONS_TO_TXN: handle_add_partitions,
    ADD_OFFSETS_TO_TXN: handle_add_offsets,
    END_TXN: handle_end_txn,
    TXN_OFFSET_COMMIT: handle_txn_offset_commit,
    DESCRIBE_TRANSACTIONS: handle_describe,
    LIST_TRANSACTIONS: handle_list,
}

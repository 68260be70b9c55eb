"""A follower's fetcher for one leader broker: one Fetch v15 (with `replica_state`) for every partition it follows
from that leader, long-polling; diverging epochs truncate the local log before fetching resumes. The fetches go on
one FetchStream per leader address (a unary call each would cost about twice the CPU), in one incremental fetch
session per leader address (KIP-227): after the first, a Fetch lists only the partitions whose fetch state moved."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import grpc
import structlog

from broker.fetch_session import INITIAL_EPOCH, PartitionFetchState, PartitionKey
from broker.fetch_session_handler import FetchRequestData, FetchSessionHandler
from broker.metadata_listener import endpoint_for
from broker.replica.divergence import EpochEndOffset, follower_truncation
from common.errors import ErrorCode, KafkaError
from common.grpc_support import insecure_channel
from common.sequential_stream import SequentialStream
from minikafka_pb import broker_pb2, broker_pb2_grpc

if TYPE_CHECKING:
    from broker.replica_manager import Replica, ReplicaManager


def _leader_address(manager: ReplicaManager, leader_id: int) -> str | None:
    broker = manager.metadata.image.broker(leader_id)
    if broker is None:
        return None
    endpoint = endpoint_for(broker, manager.config.inter_broker_listener)
    return None if endpoint is None else f"{endpoint.host}:{endpoint.port}"


async def run_fetcher(manager: ReplicaManager, leader_id: int) -> None:
    channels: dict[str, grpc.aio.Channel] = {}
    streams: dict[str, SequentialStream[broker_pb2.FetchRequest, broker_pb2.FetchResponse]] = {}
    try:
        await _fetch_forever(manager, leader_id, channels, streams)
    finally:
        for stream in streams.values():
            await stream.close()
        for channel in channels.values():
            await channel.close()


async def _fetch_forever(
    manager: ReplicaManager,
    leader_id: int,
    channels: dict[str, grpc.aio.Channel],
    streams: dict[str, SequentialStream[broker_pb2.FetchRequest, broker_pb2.FetchResponse]],
) -> None:
    log = structlog.get_logger().bind(fetcher_leader=leader_id)
    backoff = manager.config.replica_fetch_backoff_ms / 1000
    sessions: dict[str, FetchSessionHandler] = {}  # one fetch session per leader address
    # The append error each failing partition last logged: a failure repeating at every retry is logged once.
    failing: dict[str, str] = {}
    while True:
        replicas = manager.followed_from(leader_id)
        address = _leader_address(manager, leader_id)
        if not replicas or address is None or manager.broker_epoch() < 0:
            await asyncio.sleep(0.1)
            continue
        if address not in streams:
            channels[address] = insecure_channel(address)
            streams[address] = SequentialStream(broker_pb2_grpc.BrokerStub(channels[address]).FetchStream)
            sessions[address] = FetchSessionHandler()
        session = sessions[address]
        by_key: dict[PartitionKey, Replica] = {}
        wanted: dict[PartitionKey, PartitionFetchState] = {}
        for replica in replicas:
            key = (replica.topic_id.bytes, replica.tp.partition)
            by_key[key] = replica
            wanted[key] = PartitionFetchState(
                key[0],
                replica.tp.topic,
                replica.tp.partition,
                replica.leader_epoch,
                replica.log.log_end_offset,
                replica.log.latest_epoch,
                replica.log.log_start_offset,
                manager.config.replica_fetch_max_bytes,
            )
        plan = session.build(wanted)
        request = _fetch_request(manager, plan)
        timeout = manager.config.replica_fetch_wait_max_ms / 1000 + manager.config.request_timeout_ms / 1000
        try:
            response = await streams[address].call(request, timeout)
        except grpc.RpcError as error:
            _log_session_reset(log, plan, leader_id, ErrorCode.NETWORK_EXCEPTION)
            session.handle_error()
            log.debug("fetch_failed", leader=leader_id, code=error.code().name)  # type: ignore[attr-defined]
            await asyncio.sleep(backoff)
            continue
        code = ErrorCode.of(response.error_code)
        _log_session_reset(log, plan, leader_id, code)
        session.handle_response(plan, response.session_id, code)
        if code != ErrorCode.NONE:
            # A session error is mended by the full fetch that follows at once; others back off.
            log.debug("fetch_failed", leader=leader_id, code=code.name)
            if not code.retriable:
                await asyncio.sleep(backoff)
            continue
        wait = False
        for topic in response.responses:
            for data in topic.partitions:
                key = (topic.topic_id, data.partition_index)
                replica = by_key.get(key)
                if replica is None or not _still_fetching(replica, leader_id, wanted[key]):
                    continue  # the partition moved, or its log changed, while the fetch was in flight
                wait |= not _apply(replica, data, log, failing)
        if wait:
            await asyncio.sleep(min(backoff, 0.1))


def _still_fetching(replica: Replica, leader_id: int, sent: PartitionFetchState) -> bool:
    """An answer applies only to the fetch state it was asked for: same leader, leader epoch and fetch offset (the
    log may have been truncated, or the leader changed, while the Fetch was in flight)."""
    return (
        replica.leader is None
        and replica.leader_id == leader_id
        and replica.leader_epoch == sent.current_leader_epoch
        and replica.log.log_end_offset == sent.fetch_offset
    )


def _log_session_reset(log: structlog.BoundLogger, plan: FetchRequestData, leader_id: int, code: ErrorCode) -> None:
    if code != ErrorCode.NONE and plan.epoch != INITIAL_EPOCH:
        log.info("fetch_session_reset", leader=leader_id, session_id=plan.session_id, error=code.name)


def _fetch_request(manager: ReplicaManager, plan: FetchRequestData) -> broker_pb2.FetchRequest:
    request = broker_pb2.FetchRequest(
        replica_state=broker_pb2.ReplicaState(replica_id=manager.config.node_id, replica_epoch=manager.broker_epoch()),
        max_wait_ms=manager.config.replica_fetch_wait_max_ms,
        min_bytes=manager.config.replica_fetch_min_bytes,
        max_bytes=manager.config.replica_fetch_response_max_bytes,
        session_id=plan.session_id,
        session_epoch=plan.epoch,
    )
    topic: broker_pb2.FetchRequest.FetchTopic | None = None
    for state in plan.to_send:
        if topic is None or topic.topic_id != state.topic_id:
            topic = request.topics.add(topic_id=state.topic_id, topic=state.topic)
        topic.partitions.add(
            partition=state.partition,
            current_leader_epoch=state.current_leader_epoch,
            fetch_offset=state.fetch_offset,
            last_fetched_epoch=state.last_fetched_epoch,
            log_start_offset=state.log_start_offset,
            partition_max_bytes=state.partition_max_bytes,
        )
    forgotten: broker_pb2.FetchRequest.ForgottenTopic | None = None
    for topic_id, partition in plan.forgotten:
        if forgotten is None or forgotten.topic_id != topic_id:
            forgotten = request.forgotten_topics_data.add(topic_id=topic_id)
        forgotten.partitions.append(partition)
    return request


def _apply(
    replica: Replica,
    data: broker_pb2.FetchResponse.PartitionData,
    log: structlog.BoundLogger,
    failing: dict[str, str],
) -> bool:
    """Apply one partition's answer; False when the follower should back off (an error)."""
    code = ErrorCode.of(data.error_code)
    if code != ErrorCode.NONE:
        log.debug("fetch_partition_error", partition=str(replica.tp), error=code.name)
        return False
    now = int(time.monotonic() * 1000)
    partition_log = replica.log
    if data.HasField("diverging_epoch"):
        diverging = EpochEndOffset(data.diverging_epoch.epoch, data.diverging_epoch.end_offset)
        local = EpochEndOffset(*partition_log.end_offset_for_epoch(diverging.epoch))
        fetch_offset = partition_log.log_end_offset
        truncation = follower_truncation(diverging, local, partition_log.log_end_offset, fetch_offset)
        partition_log.truncate_to(
            truncation.offset,
            reason=f"{truncation.reason}: leader epoch {diverging.epoch} ends at {diverging.end_offset}",
        )
        return True
    if data.records:
        label = str(replica.tp)
        try:
            partition_log.append_as_follower(data.records, now)
        except KafkaError as error:
            if failing.get(label) != error.message:
                failing[label] = error.message
                log.warning("follower_append_failed", partition=label, error=error.message)
            return False
        if failing.pop(label, None) is not None:
            log.info("follower_append_recovered", partition=label, log_end_offset=partition_log.log_end_offset)
    partition_log.high_watermark = min(data.high_watermark, partition_log.log_end_offset)
    return True

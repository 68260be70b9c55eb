"""A follower's fetcher for one leader broker: one Fetch v15 (with `replica_state`) for every partition it follows
from that leader, long-polling. The fetches go on one FetchStream per leader address (a unary call each would cost
about twice the CPU), in one incremental fetch session per leader address (KIP-227): after the first, a Fetch lists
only the partitions whose fetch state moved. The host keeps the fetch states as its partitions change and hands
over the changed ones each round, so an idle round costs what changed, not every partition followed.

The fetcher only moves bytes: it asks its host what to fetch and hands each partition's answer back to it, where
the partition's core decides (truncate, append, the follower's HWM).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.fetch_session import INITIAL_EPOCH, PartitionFetchState, PartitionKey
from minikafka.broker.fetch_session_handler import FetchRequestData, FetchSessionHandler
from minikafka.broker.follower_fetch_states import FetchStateChanges
from minikafka.broker.replica.divergence import EpochEndOffset
from minikafka.common.errors import ErrorCode
from minikafka.common.fetch_response_wire import DecodedFetchResponse, decode_fetch_response
from minikafka.common.grpc_support import PeerChannels, connection_failed
from minikafka.common.sequential_stream import SequentialStream
from minikafka.pb import broker_pb2

FetchStream = SequentialStream[broker_pb2.FetchRequest, DecodedFetchResponse]
_FETCH_STREAM = "/minikafka.Broker/FetchStream"


@dataclass(frozen=True)
class FollowerAnswer:
    """One partition of a Fetch answer as the follower received it, with the fetch state it was asked for."""

    leader_id: int
    sent: PartitionFetchState
    error: ErrorCode
    high_watermark: int
    records: bytes | memoryview  # of a large answer, a view of the received bytes (fetch_response_wire)
    diverging: EpochEndOffset | None
    log_start_offset: int = -1  # the leader's, for OFFSET_OUT_OF_RANGE recovery


class FetcherHost(Protocol):
    """What a fetcher needs from the broker's replicas (the ReplicaManager)."""

    config: BrokerConfig

    def broker_epoch(self) -> int: ...

    def fetch_changes(self, leader_id: int, resync: bool) -> FetchStateChanges:
        """The partitions fetched from `leader_id` and those changed since the last call; `resync`: read every
        replica's state afresh first."""
        ...

    def leader_address(self, leader_id: int) -> str | None: ...

    def apply_follower_answer(self, answer: FollowerAnswer) -> bool: ...

    def follower_throttled(self, states: Mapping[PartitionKey, PartitionFetchState]) -> frozenset[PartitionKey]:
        """The partitions of `states` the next Fetch leaves out (the follower's replication throttle)."""
        ...


async def run_fetcher(host: FetcherHost, leader_id: int) -> None:
    channels = PeerChannels(host.config.inter_node_tls)
    streams: dict[str, FetchStream] = {}
    try:
        await _fetch_forever(host, leader_id, channels, streams)
    finally:
        for stream in streams.values():
            await stream.close()
        await channels.close()


async def _fetch_forever(
    host: FetcherHost, leader_id: int, channels: PeerChannels, streams: dict[str, FetchStream]
) -> None:
    log = structlog.get_logger().bind(fetcher_leader=leader_id)
    config = host.config
    backoff = config.replica_fetch_backoff_ms / 1000
    timeout = config.replica_fetch_wait_max_ms / 1000 + config.request_timeout_ms / 1000
    sessions: dict[str, FetchSessionHandler] = {}  # one fetch session per leader address
    held: frozenset[PartitionKey] = frozenset()  # left out of the Fetches by the replication throttle
    while True:
        address = host.leader_address(leader_id)
        session = sessions.get(address) if address in streams else None
        # A full Fetch lists states read afresh from every replica: whatever went unnoted is mended there.
        changes = host.fetch_changes(leader_id, resync=session is None or session.full_next)
        wanted, now_held = _throttled(host, changes.states)
        changed = changes.changed | (held ^ now_held) if held or now_held else changes.changed
        for handler in sessions.values():
            handler.note_changed(changed)
        held = now_held
        if not changes.states or address is None or host.broker_epoch() < 0:
            await asyncio.sleep(0.1)
            continue
        if not wanted:  # every partition held back: as Kafka's fetcher with nothing to fetch
            await asyncio.sleep(backoff)
            continue
        if session is None:
            streams[address] = SequentialStream(fetch_stream(channels.get(address)))
            session = sessions[address] = FetchSessionHandler()
        plan = session.build(wanted)
        try:
            response = await streams[address].call(_fetch_request(host, plan), timeout)
        except grpc.RpcError as error:
            _log_session_reset(log, plan, leader_id, ErrorCode.NETWORK_EXCEPTION)
            session.handle_error()
            log.debug("fetch_failed", leader=leader_id, code=error.code().name)
            if connection_failed(error):
                # A new channel resolves the leader's name again: a restarted container may have a new address.
                await streams.pop(address).close()
                channels.retire(address)
            await asyncio.sleep(backoff)
            continue
        code = ErrorCode.of(response.message.error_code)
        _log_session_reset(log, plan, leader_id, code)
        fetched = session.handle_response(plan, response.message.session_id, code)
        if code != ErrorCode.NONE:
            # A session error is mended by the full fetch that follows at once; others back off.
            log.debug("fetch_failed", leader=leader_id, code=code.name)
            if not code.retriable:
                await asyncio.sleep(backoff)
            continue
        if fetched is not None and not _hand_over(host, leader_id, fetched, response):
            await asyncio.sleep(min(backoff, 0.1))


def _throttled(
    host: FetcherHost, states: Mapping[PartitionKey, PartitionFetchState]
) -> tuple[Mapping[PartitionKey, PartitionFetchState], frozenset[PartitionKey]]:
    """The states to fetch now, and those the replication throttle holds back (left out, so forgotten by the
    leader's session until they are fetched again, as Kafka's fetcher leaves them out of its session)."""
    held = host.follower_throttled(states)
    return ({key: state for key, state in states.items() if key not in held} if held else states), held


def fetch_stream(channel: grpc.aio.Channel) -> Any:
    """The Broker service's FetchStream, its answers read without copying their records."""
    return channel.stream_stream(
        _FETCH_STREAM,
        request_serializer=broker_pb2.FetchRequest.SerializeToString,
        response_deserializer=decode_fetch_response,
        _registered_method=True,  # type: ignore[call-arg]  # grpcio takes it, as the generated stubs pass it; types-grpcio omits it
    )


def _hand_over(
    host: FetcherHost,
    leader_id: int,
    fetched: Mapping[PartitionKey, PartitionFetchState],
    response: DecodedFetchResponse,
) -> bool:
    """Hand every partition's answer to the host, with the state it was fetched at; False when one of them asks
    the fetcher to back off."""
    applied = True
    for topic_id, data, records in response.partitions():
        sent = fetched.get((topic_id, data.partition_index))
        if sent is None:
            continue  # not asked for in this Fetch
        diverging = (
            EpochEndOffset(data.diverging_epoch.epoch, data.diverging_epoch.end_offset)
            if data.HasField("diverging_epoch")
            else None
        )
        answer = FollowerAnswer(
            leader_id,
            sent,
            ErrorCode.of(data.error_code),
            data.high_watermark,
            records,
            diverging,
            data.log_start_offset,
        )
        applied &= host.apply_follower_answer(answer)
    return applied


def _log_session_reset(log: structlog.BoundLogger, plan: FetchRequestData, leader_id: int, code: ErrorCode) -> None:
    if code != ErrorCode.NONE and plan.epoch != INITIAL_EPOCH:
        log.info("fetch_session_reset", leader=leader_id, session_id=plan.session_id, error=code.name)


def _fetch_request(host: FetcherHost, plan: FetchRequestData) -> broker_pb2.FetchRequest:
    config = host.config
    request = broker_pb2.FetchRequest(
        replica_state=broker_pb2.ReplicaState(replica_id=config.node_id, replica_epoch=host.broker_epoch()),
        max_wait_ms=config.replica_fetch_wait_max_ms,
        min_bytes=config.replica_fetch_min_bytes,
        max_bytes=config.replica_fetch_response_max_bytes,
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

"""The broker's gRPC servicers: the Broker API (Produce, Fetch v15, ListOffsets, Metadata, OffsetsForLeaderEpoch)
and the Fault API. Thin: conversions and long-poll waiting; decisions are in the replica manager and its cores."""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import structlog

from minikafka.broker.fetch_session import (
    FINAL_EPOCH,
    CachedPartition,
    FetchContext,
    FetchSessionCache,
    PartitionAnswer,
    PartitionFetchState,
    must_answer,
)
from minikafka.broker.grpc_sasl.authenticator import GrpcSaslAuthenticator, not_sasl_listener
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.metadata_listener import endpoint_for
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import FetchPartitionResult, ReplicaManager, answered
from minikafka.common.clock import monotonic_ms
from minikafka.common.errors import ErrorCode, KafkaError, wire_code
from minikafka.common.fetch_response_wire import SplicedFetchResponse, encode_fetch_response
from minikafka.kraft_controller.metadata.image import MetadataImage, TopicImage
from minikafka.pb import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, fault_pb2, fault_pb2_grpc


@dataclass(frozen=True)
class FetchRead:
    """One read of every partition of a fetch: the answer, its bytes of records, whether any partition failed, and
    what a session answered."""

    answer: SplicedFetchResponse
    total: int
    failed: bool
    sent: list[tuple[CachedPartition, PartitionAnswer]]


class _FetchAnswersSpliced:
    """The server as the generated registration sees it: the Broker service's handlers are registered with Fetch and
    FetchStream answering through `encode_fetch_response`, so the records are joined into the answer only once."""

    _SPLICED = ("Fetch", "FetchStream")

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server
        self.registered = False

    def add_generic_rpc_handlers(self, _handlers: object) -> None:
        """The generated code's own handlers, left out: `add_registered_method_handlers` registers both kinds."""

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self.registered = True
        handlers = {
            name: handler._replace(response_serializer=encode_fetch_response) if name in self._SPLICED else handler
            for name, handler in handlers.items()
        }
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
        self._server.add_registered_method_handlers(service, handlers)


class BrokerService(broker_pb2_grpc.BrokerServicer):
    def __init__(
        self,
        manager: ReplicaManager,
        listener_name: str,
        fetch_sessions: FetchSessionCache,
        sasl: GrpcSaslAuthenticator | None = None,
    ) -> None:
        self.manager = manager
        self.listener_name = listener_name  # Metadata answers with each broker's endpoint for this listener
        self.fetch_sessions = fetch_sessions  # the broker's, shared by its listeners
        self.sasl = sasl  # a GRPC_SASL_SSL listener's exchange and sessions; None: the listener has no SASL

    def register(self, server: grpc.aio.Server) -> None:
        spliced = _FetchAnswersSpliced(server)
        broker_pb2_grpc.add_BrokerServicer_to_server(self, spliced)
        if not spliced.registered:  # generated code that no longer registers methods this way: fail at start-up
            raise RuntimeError("the generated Broker registration did not call add_registered_method_handlers")

    async def SaslAuthenticate(
        self, requests: AsyncIterator[broker_pb2.SaslRequest], context: Any
    ) -> AsyncIterator[broker_pb2.SaslResponse]:
        answers = not_sasl_listener(requests, context) if self.sasl is None else self.sasl.exchange(requests, context)
        async for answer in answers:
            yield answer

    # ---- Metadata ----

    async def Metadata(self, request: broker_pb2.MetadataRequest, context: Any) -> broker_pb2.MetadataResponse:
        if not self.manager.metadata_ready:
            # Like a Kafka broker that has not finished start-up: answering from a partial image would tell
            # clients that existing topics are unknown. UNAVAILABLE makes them ask another broker.
            await context.abort(grpc.StatusCode.UNAVAILABLE, "broker starting: metadata not caught up yet")
        image = self.manager.metadata.image
        response = broker_pb2.MetadataResponse(
            cluster_id=self.manager.config.cluster_id,
            metadata_offset=image.offset,
            controller_id=self.manager.metadata.leader[0] or -1,
        )
        for broker_id, broker in sorted(image.brokers.items()):
            if broker.fenced:
                continue
            endpoint = endpoint_for(broker, self.listener_name)
            if endpoint is not None:
                response.brokers.add(node_id=broker_id, host=endpoint.host, port=endpoint.port, rack=broker.rack)
        names = list(request.topics) or sorted(image.topics_by_name)
        for name in names:
            topic = image.topics_by_name.get(name)
            if topic is None:
                response.topics.add(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            entry = response.topics.add(name=name, topic_id=topic.topic_id.bytes)
            for index, partition in sorted(topic.partitions.items()):
                offline = [r for r in partition.replicas if (known := image.broker(r)) is None or known.fenced]
                entry.partitions.add(
                    partition_index=index,
                    leader_id=partition.leader,
                    leader_epoch=partition.leader_epoch,
                    replica_nodes=list(partition.replicas),
                    isr_nodes=list(partition.isr),
                    eligible_leader_replicas=list(partition.elr),
                    last_known_elr=list(partition.last_known_elr),
                    offline_replicas=offline,
                    partition_epoch=partition.partition_epoch,
                    error_code=ErrorCode.NONE if partition.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                )
        return response

    # ---- Produce ----

    async def Produce(self, request: broker_pb2.ProduceRequest, context: Any) -> broker_pb2.ProduceResponse:
        return await self._start_produce(request)

    async def ProduceStream(
        self, requests: AsyncIterator[broker_pb2.ProduceRequest], context: Any
    ) -> AsyncIterator[broker_pb2.ProduceResponse]:
        """Requests pipelined on one stream: each is appended as it arrives, in order, and answered in order."""
        answers: asyncio.Queue[asyncio.Future[broker_pb2.ProduceResponse] | None] = asyncio.Queue()

        async def read() -> None:
            try:
                async for request in requests:
                    answers.put_nowait(self._start_produce(request))
            finally:
                answers.put_nowait(None)

        reader = asyncio.create_task(read())
        try:
            while (answer := await answers.get()) is not None:
                yield await answer
        finally:
            reader.cancel()

    def _start_produce(self, request: broker_pb2.ProduceRequest) -> asyncio.Future[broker_pb2.ProduceResponse]:
        """Append every partition's batches now; the future answers once each partition has its outcome."""
        if request.acks not in (0, 1, -1):
            code = ErrorCode.INVALID_REQUIRED_ACKS
            response = broker_pb2.ProduceResponse()
            for topic in request.topic_data:
                entry = response.responses.add(name=topic.name)
                for data in topic.partition_data:
                    entry.partition_responses.add(
                        index=data.index,
                        error_code=code,
                        base_offset=-1,
                        error_message=f"acks must be 0, 1 or -1, not {request.acks}",
                    )
            return answered(response)
        work = []
        for topic in request.topic_data:
            for data in topic.partition_data:
                tp = TopicPartition(topic.name, data.index)
                work.append((tp, self.manager.produce(tp, data.records, request.acks, request.timeout_ms or 30000)))
        waiting = [job for _, job in work if not job.done()]
        if not waiting:  # acks 0/1 and refusals: answered at once
            return answered(self._produce_response(work))
        # acks=all: answered from the last partition's callback (a task and a gather cost the answer loop turns).
        answer: asyncio.Future[broker_pb2.ProduceResponse] = asyncio.get_running_loop().create_future()

        def one_done(_job: asyncio.Future[ProduceResult]) -> None:
            if answer.done() or not all(job.done() for job in waiting):
                return
            try:
                answer.set_result(self._produce_response(work))
            except Exception as error:  # a partition's job failed: the call fails with it (as gather made it)
                answer.set_exception(error)

        for job in waiting:
            job.add_done_callback(one_done)
        return answer

    def _produce_response(
        self, work: list[tuple[TopicPartition, asyncio.Future[ProduceResult]]]
    ) -> broker_pb2.ProduceResponse:
        response = broker_pb2.ProduceResponse()
        entries: dict[str, broker_pb2.ProduceResponse.TopicProduceResponse] = {}
        for tp, job in work:
            result = job.result()
            if tp.topic not in entries:
                entries[tp.topic] = response.responses.add(name=tp.topic)
            replica = self.manager.replicas.get(tp)
            entries[tp.topic].partition_responses.add(
                index=tp.partition,
                error_code=int(result.error),
                base_offset=result.base_offset if result.error == ErrorCode.NONE else -1,
                log_start_offset=replica.log.log_start_offset if replica else -1,
                error_message=result.message,
                current_leader=_leader_of(replica),
            )
        return response

    # ---- Fetch ----

    async def FetchStream(
        self, requests: AsyncIterator[broker_pb2.FetchRequest], context: Any
    ) -> AsyncIterator[SplicedFetchResponse | broker_pb2.FetchResponse]:
        """A follower's fetches on one stream: it sends the next request after reading the answer."""
        async for request in requests:
            yield await self.Fetch(request, context)

    async def Fetch(
        self, request: broker_pb2.FetchRequest, context: Any
    ) -> SplicedFetchResponse | broker_pb2.FetchResponse:
        deadline = time.monotonic() + max(0, request.max_wait_ms) / 1000
        is_replica = _from_replica(request)
        fetch = self.fetch_sessions.new_context(
            request.session_id,
            request.session_epoch if request.HasField("session_epoch") else FINAL_EPOCH,
            [_fetch_state(topic, line) for topic in request.topics for line in topic.partitions],
            [(topic.topic_id, partition) for topic in request.forgotten_topics_data for partition in topic.partitions],
            is_replica,
            monotonic_ms(),
        )
        if fetch.error != ErrorCode.NONE:
            return broker_pb2.FetchResponse(error_code=wire_code(fetch.error), session_id=fetch.session_id)
        if fetch.session is not None and not fetch.incremental:
            structlog.get_logger().info(
                "fetch_session_created",
                session_id=fetch.session_id,
                replica_id=request.replica_state.replica_id if is_replica else -1,
                partitions=len(fetch.session.partitions),
            )
        # Only the first read counts in the followers' state; a woken re-read is the same fetch.
        read = self._fetch_once(request, is_replica, fetch, record_fetch=True)
        while read.total < max(1, request.min_bytes) and not read.failed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            # No await since the read above, so no change can have been missed before this wait starts; after a
            # timeout the re-read finds the time up and answers.
            await self.manager.wait_for_change(is_replica, remaining)
            read = self._fetch_once(request, is_replica, fetch, record_fetch=False)
        self.fetch_sessions.record_answers(fetch, read.sent)
        read.answer.message.session_id = fetch.session_id
        return read.answer

    def _fetch_once(
        self, request: broker_pb2.FetchRequest, is_replica: bool, fetch: FetchContext, record_fetch: bool
    ) -> FetchRead:
        """Read every partition of the fetch. An incremental fetch answers only the partitions with news; a failed
        one always is."""
        response = broker_pb2.FetchResponse()
        batches: list[bytes] = []  # each answered partition's records, beside the message (SplicedFetchResponse)
        sent: list[tuple[CachedPartition, PartitionAnswer]] = []
        budget = request.max_bytes or 52428800
        total = 0
        any_failed = False
        image = self.manager.metadata.image
        for topic in fetch.targets:
            known = _topic_by_id_bytes(image, topic.topic_id) or image.topics_by_name.get(topic.topic)
            entry = None
            for cached in topic.partitions:
                partition = cached.state
                replica = None
                if known is None:
                    code = ErrorCode.UNKNOWN_TOPIC_ID if topic.topic_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    result = FetchPartitionResult(code)
                else:
                    tp = TopicPartition(known.name, partition.partition)
                    max_bytes = min(partition.partition_max_bytes or 1048576, max(budget - total, 1))
                    if is_replica:
                        result = self.manager.follower_fetch(
                            tp,
                            request.replica_state.replica_id,
                            request.replica_state.replica_epoch,
                            partition.current_leader_epoch,
                            partition.fetch_offset,
                            partition.last_fetched_epoch,
                            max_bytes,
                            record_fetch=record_fetch,
                        )
                    else:
                        result = self.manager.consumer_fetch(
                            tp, partition.fetch_offset, partition.current_leader_epoch, max_bytes
                        )
                    replica = self.manager.replicas.get(tp)
                log_start = replica.log.log_start_offset if replica else -1
                records, hwm, diverging = result.records, result.high_watermark, result.diverging
                failed = result.error != ErrorCode.NONE or diverging is not None
                any_failed |= failed
                if fetch.session is not None:
                    answer = PartitionAnswer(len(records), failed, hwm, log_start)
                    if fetch.incremental and not must_answer(cached, answer):
                        continue
                    sent.append((cached, answer))
                if entry is None:
                    entry = response.responses.add(topic_id=topic.topic_id, topic=topic.topic)
                data = entry.partitions.add(
                    partition_index=partition.partition,
                    error_code=int(result.error),
                    high_watermark=hwm,
                    last_stable_offset=hwm,
                    log_start_offset=log_start,
                )
                batches.append(records)
                if known is not None:
                    data.current_leader.CopyFrom(_leader_of(replica))
                if diverging is not None:
                    data.diverging_epoch.epoch, data.diverging_epoch.end_offset = diverging.epoch, diverging.end_offset
                total += len(records)
        return FetchRead(SplicedFetchResponse(response, batches), total, any_failed, sent)

    # ---- ListOffsets / OffsetsForLeaderEpoch ----

    async def ListOffsets(self, request: broker_pb2.ListOffsetsRequest, context: Any) -> broker_pb2.ListOffsetsResponse:
        response = broker_pb2.ListOffsetsResponse()
        for topic in request.topics:
            entry = response.topics.add(name=topic.name)
            for partition in topic.partitions:
                tp = TopicPartition(topic.name, partition.partition_index)
                listed = self.manager.list_offset(tp, partition.timestamp, partition.current_leader_epoch)
                ok = listed.error == ErrorCode.NONE
                entry.partitions.add(
                    partition_index=partition.partition_index,
                    error_code=listed.error,
                    offset=listed.offset if ok else -1,
                    timestamp=listed.timestamp if ok else -1,
                    leader_epoch=listed.leader_epoch if ok else -1,
                )
        return response

    async def InitProducerId(
        self, request: broker_pb2.InitProducerIdRequest, context: Any
    ) -> broker_pb2.InitProducerIdResponse:
        try:
            producer_id = await self.manager.producer_ids.generate()
        except KafkaError as error:
            return broker_pb2.InitProducerIdResponse(error_code=wire_code(error.code), error_message=error.message)
        return broker_pb2.InitProducerIdResponse(
            error_code=wire_code(ErrorCode.NONE), producer_id=producer_id, producer_epoch=0
        )

    async def OffsetsForLeaderEpoch(
        self, request: broker_pb2.OffsetsForLeaderEpochRequest, context: Any
    ) -> broker_pb2.OffsetsForLeaderEpochResponse:
        response = broker_pb2.OffsetsForLeaderEpochResponse()
        image = self.manager.metadata.image
        for topic in request.topics:
            entry = response.topics.add(topic_id=topic.topic_id)
            known = _topic_by_id_bytes(image, topic.topic_id)
            for partition in topic.partitions:
                if known is None:
                    entry.partitions.add(
                        partition=partition.partition,
                        error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                        leader_epoch=-1,
                        end_offset=-1,
                    )
                    continue
                tp = TopicPartition(known.name, partition.partition)
                found = self.manager.offset_for_leader_epoch(tp, partition.current_leader_epoch, partition.leader_epoch)
                entry.partitions.add(
                    partition=partition.partition,
                    error_code=found.error,
                    leader_epoch=found.leader_epoch if found.error == ErrorCode.NONE else -1,
                    end_offset=found.offset if found.error == ErrorCode.NONE else -1,
                )
        return response

    # ---- partition administration, forwarded to the active controller ----

    async def ElectLeaders(
        self, request: controller_pb2.ElectLeadersRequest, context: Any
    ) -> controller_pb2.ElectLeadersResponse:
        return await self.manager.controller.forward("ElectLeaders", request, controller_pb2.ElectLeadersResponse)

    async def AlterPartitionReassignments(
        self, request: controller_pb2.AlterPartitionReassignmentsRequest, context: Any
    ) -> controller_pb2.AlterPartitionReassignmentsResponse:
        return await self.manager.controller.forward(
            "AlterPartitionReassignments", request, controller_pb2.AlterPartitionReassignmentsResponse
        )

    async def ListPartitionReassignments(
        self, request: controller_pb2.ListPartitionReassignmentsRequest, context: Any
    ) -> controller_pb2.ListPartitionReassignmentsResponse:
        return await self.manager.controller.forward(
            "ListPartitionReassignments", request, controller_pb2.ListPartitionReassignmentsResponse
        )


def _leader_of(replica: object) -> common_pb2.LeaderIdAndEpoch:
    if replica is None:
        return common_pb2.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    return common_pb2.LeaderIdAndEpoch(leader_id=replica.leader_id, leader_epoch=replica.leader_epoch)  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=1024)
def _topic_id(raw: bytes) -> uuid.UUID | None:
    return uuid.UUID(bytes=raw) if len(raw) == 16 else None


def _topic_by_id_bytes(image: MetadataImage, raw: bytes) -> TopicImage | None:
    """The topic a request names by its 16-byte id (UUIDs are built once per id, not on every Fetch)."""
    topic_id = _topic_id(raw)
    return image.topic(topic_id) if topic_id is not None else None


def _fetch_state(
    topic: broker_pb2.FetchRequest.FetchTopic, line: broker_pb2.FetchRequest.FetchPartition
) -> PartitionFetchState:
    return PartitionFetchState(
        topic.topic_id,
        topic.topic,
        line.partition,
        line.current_leader_epoch,
        line.fetch_offset,
        line.last_fetched_epoch,
        line.log_start_offset,
        line.partition_max_bytes,
    )


def _from_replica(request: broker_pb2.FetchRequest) -> bool:
    return request.HasField("replica_state") and request.replica_state.replica_id >= 0


class FaultService(fault_pb2_grpc.FaultServicer):
    def __init__(self, manager: ReplicaManager, lifecycle: Any) -> None:
        self.manager = manager
        self.lifecycle = lifecycle

    def register(self, server: grpc.aio.Server) -> None:
        fault_pb2_grpc.add_FaultServicer_to_server(self, server)

    async def HoldAlterPartition(self, request: Any, context: Any) -> fault_pb2.HoldAlterPartitionResponse:
        self.manager.alter_partition.holding = True
        return fault_pb2.HoldAlterPartitionResponse(error_code=wire_code(ErrorCode.NONE))

    async def ReleaseAlterPartition(self, request: Any, context: Any) -> fault_pb2.ReleaseAlterPartitionResponse:
        released = self.manager.alter_partition.release(request.keep_holding)
        return fault_pb2.ReleaseAlterPartitionResponse(error_code=wire_code(ErrorCode.NONE), released_requests=released)

    async def InjectDiskFault(self, request: Any, context: Any) -> fault_pb2.InjectDiskFaultResponse:
        try:
            self.manager.logs.failures.inject(request.kind)
        except ValueError as error:
            return fault_pb2.InjectDiskFaultResponse(
                error_code=wire_code(ErrorCode.INVALID_REQUEST), error_message=str(error)
            )
        return fault_pb2.InjectDiskFaultResponse(error_code=wire_code(ErrorCode.NONE))

    async def DescribeState(self, request: Any, context: Any) -> fault_pb2.DescribeStateResponse:
        lifecycle = self.lifecycle
        response = fault_pb2.DescribeStateResponse(
            node_id=self.manager.config.node_id,
            process_role="broker",
            broker_epoch=lifecycle.broker_epoch,
            fenced=lifecycle.fenced or lifecycle.self_fenced,
            metadata_offset=self.manager.metadata.offset,
            alter_partition_held=self.manager.alter_partition.holding,
            held_alter_partition_requests=len(self.manager.alter_partition.held),
            lifecycle_state="self_fenced" if lifecycle.self_fenced else ("fenced" if lifecycle.fenced else "running"),
        )
        for tp, replica in sorted(self.manager.replicas.items(), key=lambda item: str(item[0])):
            leader = replica.leader
            response.partitions.add(
                topic=tp.topic,
                topic_id=replica.topic_id.bytes,
                partition=tp.partition,
                is_leader=leader is not None,
                leader_id=replica.leader_id,
                leader_epoch=replica.leader_epoch,
                partition_epoch=replica.partition_epoch,
                isr=sorted(leader.isr_state.isr) if leader else [],
                maximal_isr=sorted(leader.isr_state.maximal_isr) if leader else [],
                log_start_offset=replica.log.log_start_offset,
                log_end_offset=replica.log.log_end_offset,
                high_watermark=leader.high_watermark if leader else replica.log.high_watermark,
                isr_state=type(leader.isr_state).__name__ if leader else "",
            )
        return response

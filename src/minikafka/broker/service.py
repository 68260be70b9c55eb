"""The broker's gRPC servicers: the Broker API (Produce, Fetch v15, ListOffsets, Metadata, OffsetsForLeaderEpoch)
and the Fault API. Thin: Produce, Fetch, ListOffsets and OffsetsForLeaderEpoch are decoded into the request layer's
dataclasses (`broker.requests`, which the Kafka listener calls too) and its answers encoded."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import grpc

from minikafka.broker.client_authorizer import ANONYMOUS_PRINCIPAL, Caller, CallerAuthorization
from minikafka.broker.fetch_session import FINAL_EPOCH, FetchSessionCache, PartitionFetchState
from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.grpc_sasl.authenticator import GrpcSaslAuthenticator, not_sasl_listener
from minikafka.broker.grpc_sasl.interceptor import session_token
from minikafka.broker.kafka_wire.config_resources import config_denial
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.metadata_listener import endpoint_for
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.requests.fetch import FetchAnswer, FetchRequest, ForgottenPartition, handle_fetch, readable_by
from minikafka.broker.requests.init_producer_id import handle_init_producer_id
from minikafka.broker.requests.list_offsets import ListOffsetsPartition, handle_list_offsets
from minikafka.broker.requests.offset_for_leader_epoch import EpochRequestPartition, handle_offset_for_leader_epoch
from minikafka.broker.requests.produce import (
    ProducePartition,
    ProducePartitionAnswer,
    ProduceRequest,
    by_topic,
    handle_produce,
    produce_refusals,
)
from minikafka.broker.requests.write_txn_markers import (
    MarkerAnswer,
    MarkerPartitionAnswer,
    MarkerWritten,
    handle_write_txn_markers,
)
from minikafka.broker.transaction.coordinator import TransactionCoordinator
from minikafka.broker.transaction.markers import decode_request as decode_markers
from minikafka.broker.transaction.markers import encode_response as encode_marker_answers
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode, wire_code
from minikafka.common.fetch_response_wire import SplicedFetchResponse, encode_fetch_response
from minikafka.pb import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2, fault_pb2, fault_pb2_grpc

DEFAULT_PRODUCE_TIMEOUT_MS = 30000  # the producer's request.timeout.ms default
DEFAULT_FETCH_MAX_BYTES = 52428800  # Kafka's fetch.max.bytes default
MARKER_TIMEOUT_MS = 30000  # a marker waits this long for the ISR, as Kafka's request.timeout.ms


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
        on_marker_written: MarkerWritten | None = None,
        transactions: TransactionCoordinator | None = None,
        client_listener: bool = True,
    ) -> None:
        self.manager = manager
        # Only a client listener's callers are authorized by ACLs; the inter-broker listener's are nodes, each
        # authenticated by mutual TLS and allowed only its own requests (common.authorizer).
        self.client_listener = client_listener
        self.listener_name = listener_name  # Metadata answers with each broker's endpoint for this listener
        self.fetch_sessions = fetch_sessions  # the broker's, shared by its listeners
        self.sasl = sasl  # a GRPC_SASL_SSL listener's exchange and sessions; None: the listener has no SASL
        self.on_marker_written = on_marker_written  # the group coordinator's, for markers in __consumer_offsets
        self.transactions = transactions  # answers other leaders' verification of transactional batches

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

    def _caller(self, context: Any) -> Caller | None:
        """Who sent a call on a client listener (its SASL session's principal, else User:ANONYMOUS, and its
        address); None on the inter-broker listener, whose callers no ACL restricts."""
        if not self.client_listener or not self.manager.authorizer.enabled:
            return None
        session = self.sasl.session_of(session_token(context.invocation_metadata())) if self.sasl else None
        principal = session.principal if session is not None else ANONYMOUS_PRINCIPAL
        return Caller(principal, peer_host(context.peer()), self.listener_name)

    def _allowed_on_cluster(self, context: Any, operation: AclOperation) -> bool:
        caller = self._caller(context)
        return caller is None or self.manager.authorizer.allowed_on_cluster(caller, operation)

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
        caller = self._caller(context)
        names = list(request.topics) or sorted(image.topics_by_name)
        for name in names:
            if caller is not None and not self.manager.authorizer.allowed(
                caller, AclOperation.DESCRIBE, ResourceType.TOPIC, name
            ):
                # As Kafka: a topic asked for by name is refused; an unnamed one is left out of "all topics".
                if request.topics:
                    response.topics.add(name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                continue
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
        return await self._start_produce(request, self._caller(context))

    async def ProduceStream(
        self, requests: AsyncIterator[broker_pb2.ProduceRequest], context: Any
    ) -> AsyncIterator[broker_pb2.ProduceResponse]:
        """Requests pipelined on one stream: each is appended as it arrives, in order, and answered in order."""
        answers: asyncio.Queue[Awaitable[broker_pb2.ProduceResponse] | None] = asyncio.Queue()

        async def read() -> None:
            try:
                caller = self._caller(context)  # one SASL session per stream
                async for request in requests:
                    answers.put_nowait(self._start_produce(request, caller))
            finally:
                answers.put_nowait(None)

        reader = asyncio.create_task(read())
        try:
            while (answer := await answers.get()) is not None:
                yield await answer
        finally:
            reader.cancel()

    def _start_produce(
        self, request: broker_pb2.ProduceRequest, caller: Caller | None = None
    ) -> Awaitable[broker_pb2.ProduceResponse]:
        """Append every partition's batches now; the future answers once each partition has its outcome."""
        decoded = ProduceRequest(
            request.acks,
            # proto3 cannot tell an unset timeout from 0: unset is the producer's default request timeout.
            request.timeout_ms or DEFAULT_PRODUCE_TIMEOUT_MS,
            [
                ProducePartition(TopicPartition(topic.name, data.index), data.records)
                for topic in request.topic_data
                for data in topic.partition_data
            ],
        )
        refused = produce_refusals(self.manager, caller, decoded) if caller is not None else None
        return handle_produce(self.manager, decoded, _produce_response, refused=refused)

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
        replica = request.replica_state if request.HasField("replica_state") else None
        decoded = FetchRequest(
            replica.replica_id if replica is not None else -1,
            replica.replica_epoch if replica is not None else -1,
            request.max_wait_ms,
            request.min_bytes,
            # proto3 cannot tell an unset max_bytes from 0: unset is Kafka's fetch.max.bytes default.
            request.max_bytes or DEFAULT_FETCH_MAX_BYTES,
            request.session_id,
            request.session_epoch if request.HasField("session_epoch") else FINAL_EPOCH,
            [_fetch_state(topic, line) for topic in request.topics for line in topic.partitions],
            [
                ForgottenPartition(topic.topic_id, "", partition)
                for topic in request.forgotten_topics_data
                for partition in topic.partitions
            ],
            request.isolation_level,
        )
        caller = self._caller(context)
        if caller is not None and not decoded.from_follower:
            decoded.readable = readable_by(self.manager, caller)
        answer = await handle_fetch(self.manager, self.fetch_sessions, decoded)
        if answer.error != ErrorCode.NONE:
            return broker_pb2.FetchResponse(error_code=wire_code(answer.error), session_id=answer.session_id)
        return _fetch_response(answer)

    # ---- ListOffsets / OffsetsForLeaderEpoch ----

    async def ListOffsets(self, request: broker_pb2.ListOffsetsRequest, context: Any) -> broker_pb2.ListOffsetsResponse:
        lines = [
            ListOffsetsPartition(
                TopicPartition(topic.name, partition.partition_index),
                partition.timestamp,
                partition.current_leader_epoch,
            )
            for topic in request.topics
            for partition in topic.partitions
        ]
        answers = iter(handle_list_offsets(self.manager, lines, request.isolation_level, self._caller(context)))
        response = broker_pb2.ListOffsetsResponse()
        for topic in request.topics:
            entry = response.topics.add(name=topic.name)
            for partition in topic.partitions:
                listed = next(answers)
                entry.partitions.add(
                    partition_index=partition.partition_index,
                    error_code=listed.error,
                    offset=listed.offset,
                    timestamp=listed.timestamp,
                    leader_epoch=listed.leader_epoch,
                )
        return response

    async def InitProducerId(
        self, request: broker_pb2.InitProducerIdRequest, context: Any
    ) -> broker_pb2.InitProducerIdResponse:
        # The gRPC API has no transactional id.
        answer = await handle_init_producer_id(self.manager, None, caller=self._caller(context))
        return broker_pb2.InitProducerIdResponse(
            error_code=wire_code(answer.error),
            error_message=answer.message,
            producer_id=answer.producer_id,
            producer_epoch=answer.producer_epoch,
        )

    async def WriteTxnMarkers(
        self, request: broker_pb2.WriteTxnMarkersRequest, context: Any
    ) -> broker_pb2.WriteTxnMarkersResponse:
        entries = decode_markers(request)
        if self.listener_name != self.manager.config.inter_broker_listener:
            # Only a coordinator writes markers (Kafka's CLUSTER_ACTION): never a client's listener.
            refused = [
                MarkerAnswer(
                    e.marker.producer_id,
                    [MarkerPartitionAnswer(tp, ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for tp in e.partitions],
                )
                for e in entries
            ]
            return encode_marker_answers(refused)
        answers = await handle_write_txn_markers(self.manager, entries, MARKER_TIMEOUT_MS, self.on_marker_written)
        return encode_marker_answers(answers)

    async def VerifyTxnPartitions(
        self, request: broker_pb2.VerifyTxnPartitionsRequest, context: Any
    ) -> broker_pb2.VerifyTxnPartitionsResponse:
        asked = [TopicPartitionKey(t.name, p) for t in request.topics for p in t.partition_indexes]
        if self.listener_name != self.manager.config.inter_broker_listener:
            answers = dict.fromkeys(asked, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        elif self.transactions is None:
            answers = dict.fromkeys(asked, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        elif request.add_partitions:
            added = await self.transactions.add_partitions(
                request.transactional_id, request.producer_id, request.producer_epoch, asked, 2
            )
            answers = dict.fromkeys(asked, added.error)
        else:
            answers = self.transactions.verify(
                request.transactional_id, request.producer_id, request.producer_epoch, asked
            )
        response = broker_pb2.VerifyTxnPartitionsResponse()
        for name in dict.fromkeys(tp.topic for tp in asked):
            topic = response.topics.add(name=name)
            for tp in asked:
                if tp.topic == name:
                    topic.partitions.add(partition_index=tp.partition, error_code=int(answers[tp]))
        return response

    async def OffsetsForLeaderEpoch(
        self, request: broker_pb2.OffsetsForLeaderEpochRequest, context: Any
    ) -> broker_pb2.OffsetsForLeaderEpochResponse:
        lines = [
            EpochRequestPartition(
                topic.topic_id, "", partition.partition, partition.current_leader_epoch, partition.leader_epoch
            )
            for topic in request.topics
            for partition in topic.partitions
        ]
        answers = iter(handle_offset_for_leader_epoch(self.manager, lines, self._caller(context)))
        response = broker_pb2.OffsetsForLeaderEpochResponse()
        for topic in request.topics:
            entry = response.topics.add(topic_id=topic.topic_id)
            for partition in topic.partitions:
                found = next(answers)
                entry.partitions.add(
                    partition=partition.partition,
                    error_code=found.error,
                    leader_epoch=found.leader_epoch,
                    end_offset=found.end_offset,
                )
        return response

    # ---- partition administration, forwarded to the active controller ----

    async def ElectLeaders(
        self, request: controller_pb2.ElectLeadersRequest, context: Any
    ) -> controller_pb2.ElectLeadersResponse:
        if not self._allowed_on_cluster(context, AclOperation.ALTER):
            return controller_pb2.ElectLeadersResponse(error_code=wire_code(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
        return await self.manager.controller.forward("ElectLeaders", request, controller_pb2.ElectLeadersResponse)

    async def AlterPartitionReassignments(
        self, request: controller_pb2.AlterPartitionReassignmentsRequest, context: Any
    ) -> controller_pb2.AlterPartitionReassignmentsResponse:
        if not self._allowed_on_cluster(context, AclOperation.ALTER):
            return controller_pb2.AlterPartitionReassignmentsResponse(
                error_code=wire_code(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            )
        return await self.manager.controller.forward(
            "AlterPartitionReassignments", request, controller_pb2.AlterPartitionReassignmentsResponse
        )

    async def ListPartitionReassignments(
        self, request: controller_pb2.ListPartitionReassignmentsRequest, context: Any
    ) -> controller_pb2.ListPartitionReassignmentsResponse:
        if not self._allowed_on_cluster(context, AclOperation.DESCRIBE):
            return controller_pb2.ListPartitionReassignmentsResponse(
                error_code=wire_code(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            )
        return await self.manager.controller.forward(
            "ListPartitionReassignments", request, controller_pb2.ListPartitionReassignmentsResponse
        )

    async def AlterConfigs(
        self, request: controller_pb2.AlterConfigsRequest, context: Any
    ) -> controller_pb2.AlterConfigsResponse:
        """Forwarded with the resources the caller may ALTER_CONFIGS (the Kafka listener's `config_denial`); the
        others answered its error in their place, as Kafka's KafkaApis splits them."""
        caller = self._caller(context)
        denied: dict[int, ErrorCode] = {}
        if caller is not None:
            access = CallerAuthorization(self.manager.authorizer, caller)
            for index, entry in enumerate(request.resources):
                resource = entry.resource
                denial = config_denial(
                    access, resource.resource_type, resource.resource_name, AclOperation.ALTER_CONFIGS
                )
                if denial is not None:
                    denied[index] = denial
        allowed = controller_pb2.AlterConfigsRequest(
            validate_only=request.validate_only, incremental=request.incremental
        )
        allowed.resources.extend(r for i, r in enumerate(request.resources) if i not in denied)
        answer = controller_pb2.AlterConfigsResponse()
        if allowed.resources:
            answer = await self.manager.controller.forward("AlterConfigs", allowed, controller_pb2.AlterConfigsResponse)
            if answer.error_code != ErrorCode.NONE:
                return answer
        forwarded = iter(answer.results)
        response = controller_pb2.AlterConfigsResponse()
        for index, entry in enumerate(request.resources):
            if index in denied:
                response.results.add(resource=entry.resource, error_code=wire_code(denied[index]))
            else:
                response.results.append(next(forwarded))
        return response


def peer_host(peer: str) -> str:
    """The address of a gRPC peer (`ipv4:127.0.0.1:5000`, `ipv6:[::1]:5000`), as an ACL's host names it."""
    address = peer.partition(":")[2]
    host = address.rpartition(":")[0] if ":" in address else address
    return host.strip("[]")


def _produce_response(answers: list[ProducePartitionAnswer]) -> broker_pb2.ProduceResponse:
    response = broker_pb2.ProduceResponse()
    for name, partitions in by_topic(answers).items():
        entry = response.responses.add(name=name)
        for answer in partitions:
            leader = common_pb2.LeaderIdAndEpoch(leader_id=answer.leader_id, leader_epoch=answer.leader_epoch)
            entry.partition_responses.add(
                index=answer.tp.partition,
                error_code=int(answer.error),
                base_offset=answer.base_offset,
                log_start_offset=answer.log_start_offset,
                log_append_time_ms=answer.log_append_time_ms,
                error_message=answer.message,
                current_leader=leader,
            )
    return response


def _fetch_response(answer: FetchAnswer) -> SplicedFetchResponse:
    """The answer with its records beside the message, joined in only once when it is sent."""
    response = broker_pb2.FetchResponse(session_id=answer.session_id)
    batches: list[bytes] = []
    for topic in answer.topics:
        entry = response.responses.add(topic_id=topic.topic_id, topic=topic.topic)
        for partition in topic.partitions:
            data = entry.partitions.add(
                partition_index=partition.partition,
                error_code=int(partition.error),
                high_watermark=partition.high_watermark,
                last_stable_offset=partition.last_stable_offset,
                log_start_offset=partition.log_start_offset,
            )
            for txn in partition.aborted_transactions or ():
                data.aborted_transactions.add(producer_id=txn.producer_id, first_offset=txn.first_offset)
            batches.append(partition.records)
            if topic.known:
                data.current_leader.leader_id = partition.leader_id
                data.current_leader.leader_epoch = partition.leader_epoch
            if partition.diverging is not None:
                data.diverging_epoch.epoch = partition.diverging.epoch
                data.diverging_epoch.end_offset = partition.diverging.end_offset
    return SplicedFetchResponse(response, batches)


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

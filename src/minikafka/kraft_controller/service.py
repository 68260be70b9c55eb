"""The controller's gRPC servicer: thin conversions between protobuf and the control layer's dataclasses.

Whole-request errors (KafkaError) become the response's `error_code`/`error_message`; NOT_CONTROLLER also carries
the active controller's id, epoch and address so callers can redirect (rule 4: errors mapped in one place).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import grpc

from minikafka.common.acl_proto import binding_from_proto, binding_to_proto, filter_from_proto
from minikafka.common.errors import ErrorCode, KafkaError, wire_code
from minikafka.kraft_controller.control import requests as rq
from minikafka.kraft_controller.control.config_control import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.feature_control import FeatureUpdate, UpgradeType
from minikafka.kraft_controller.metadata.records import (
    LeaderRecoveryState,
    RegisterController,
    endpoints_from_proto,
    endpoints_to_proto,
)
from minikafka.kraft_controller.quorum_controller import NotControllerError, QuorumController
from minikafka.kraft_controller.raft.messages import AddVoter, RemoveVoter
from minikafka.kraft_controller.raft.messages import UpgradeKRaftVersion as KRaftUpgrade
from minikafka.kraft_controller.raft.voter_changes import VoterChangeResult
from minikafka.pb import common_pb2, controller_pb2, controller_pb2_grpc

P = TypeVar("P")
VoterChanger = Callable[[AddVoter | RemoveVoter | KRaftUpgrade, float], Awaitable[VoterChangeResult]]


class ControllerService(controller_pb2_grpc.ControllerServicer):
    def __init__(
        self,
        controller: QuorumController,
        voter_addresses: Mapping[int, str],
        describe_quorum: Callable[[], controller_pb2.DescribeQuorumResponse],
        cluster_id: str,
        change_voters: VoterChanger | None = None,
        authorizer_enabled: bool = False,
        endpoint_of: Callable[[int], str | None] | None = None,
    ) -> None:
        """`endpoint_of`: where a controller is reached now (the voter set's endpoints, KIP-853); default: the
        configured `voter_addresses`."""
        self.controller = controller
        self.endpoint_of = endpoint_of or voter_addresses.get
        # Without an authorizer (authorizer.class.name), Kafka's controllers answer ACL requests SECURITY_DISABLED.
        self.authorizer_enabled = authorizer_enabled
        self.voter_addresses = dict(voter_addresses)
        self.describe_quorum = describe_quorum
        self.cluster_id = cluster_id
        self.change_voters = change_voters

    def register(self, server: grpc.aio.Server) -> None:
        controller_pb2_grpc.add_ControllerServicer_to_server(self, server)

    # ---- error mapping ----

    def _leader(self) -> common_pb2.LeaderIdAndEpoch:
        leader, epoch = self.controller.raft.leader()
        return common_pb2.LeaderIdAndEpoch(
            leader_id=-1 if leader is None else leader,
            leader_epoch=epoch,
            leader_address=(self.endpoint_of(leader) or "") if leader is not None else "",
        )

    async def _answer(self, response_type: type[P], produce: Callable[[], Awaitable[P]]) -> P:
        try:
            return await produce()
        except NotControllerError as error:
            return response_type(
                error_code=ErrorCode.NOT_CONTROLLER,
                error_message=error.message,  # type: ignore[call-arg]
                current_leader=self._leader(),
            )
        except KafkaError as error:
            return response_type(error_code=int(error.code), error_message=error.message)  # type: ignore[call-arg]

    def _require_authorizer(self) -> None:
        if not self.authorizer_enabled:
            raise KafkaError(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the controller")

    # ---- RPCs ----

    async def BrokerRegistration(
        self, request: controller_pb2.BrokerRegistrationRequest, context: Any
    ) -> controller_pb2.BrokerRegistrationResponse:
        if request.cluster_id and request.cluster_id != self.cluster_id:
            return controller_pb2.BrokerRegistrationResponse(
                error_code=wire_code(ErrorCode.INCONSISTENT_CLUSTER_ID),
                error_message=f"cluster id {request.cluster_id} is not {self.cluster_id}",
            )
        registration = rq.BrokerRegistrationRequest(
            broker_id=request.broker_id,
            incarnation_id=request.incarnation_id,
            listeners=endpoints_from_proto(request.listeners),
            rack=request.rack,
            previous_broker_epoch=request.previous_broker_epoch if request.HasField("previous_broker_epoch") else -1,
        )

        async def run() -> controller_pb2.BrokerRegistrationResponse:
            now = self.controller.clock()
            response = await self.controller.submit(lambda: self.controller.state.register_broker(registration, now))
            return controller_pb2.BrokerRegistrationResponse(
                error_code=wire_code(response.error_code), broker_epoch=response.broker_epoch
            )

        return await self._answer(controller_pb2.BrokerRegistrationResponse, run)

    async def ControllerRegistration(
        self, request: controller_pb2.ControllerRegistrationRequest, context: Any
    ) -> controller_pb2.ControllerRegistrationResponse:
        listeners = endpoints_from_proto(request.listeners)
        registration = RegisterController(request.controller_id, request.incarnation_id, listeners)

        async def run() -> controller_pb2.ControllerRegistrationResponse:
            await self.controller.submit(lambda: self.controller.state.register_controller(registration))
            return controller_pb2.ControllerRegistrationResponse(error_code=wire_code(ErrorCode.NONE))

        return await self._answer(controller_pb2.ControllerRegistrationResponse, run)

    async def BrokerHeartbeat(
        self, request: controller_pb2.BrokerHeartbeatRequest, context: Any
    ) -> controller_pb2.BrokerHeartbeatResponse:
        heartbeat = rq.BrokerHeartbeatRequest(
            broker_id=request.broker_id,
            broker_epoch=request.broker_epoch,
            current_metadata_offset=request.current_metadata_offset,
            want_fence=request.want_fence,
            want_shutdown=request.want_shutdown,
            offline_log_dirs=tuple(request.offline_log_dirs),
        )

        async def run() -> controller_pb2.BrokerHeartbeatResponse:
            now = self.controller.clock()
            # As Kafka's: a heartbeat must start within half an interval; one the queue reaches later is answered
            # REQUEST_TIMED_OUT but still renews the session (the broker is alive, the controller is busy).
            start_by = now + self.controller.config.heartbeat_interval_ms // 2
            state = self.controller.state
            unchanged = self.controller.read(lambda: state.heartbeat_without_change(heartbeat, now))
            if unchanged is not None:
                return heartbeat_response(unchanged)
            state.heartbeat_arrived(heartbeat, now)
            generated = []

            def generate() -> ControllerResult[rq.BrokerHeartbeatResponse]:
                result = state.broker_heartbeat(heartbeat, now)
                state.heartbeat_awaiting_answer(heartbeat.broker_id)
                generated.append(True)
                return result

            try:
                response = await self.controller.submit(generate, start_by)
            except KafkaError as error:
                if error.code == ErrorCode.REQUEST_TIMED_OUT and self.controller.active and not generated:
                    state.expired_heartbeat(heartbeat, now)
                raise
            except asyncio.CancelledError:
                # The broker gave up waiting (its call's deadline) while the queue was busy: it was alive when the
                # heartbeat arrived all the same. Not counting it fenced brokers whose every heartbeat was queued
                # behind a write of thousands of records for longer than their calls wait.
                if self.controller.active and not generated:
                    state.expired_heartbeat(heartbeat, now)
                raise
            finally:
                if generated:
                    state.heartbeat_answered(heartbeat, self.controller.clock())
            return heartbeat_response(response)

        return await self._answer(controller_pb2.BrokerHeartbeatResponse, run)

    async def AlterPartition(
        self, request: controller_pb2.AlterPartitionRequest, context: Any
    ) -> controller_pb2.AlterPartitionResponse:
        try:
            alter = alter_partition_from_proto(request)
        except ValueError as error:
            return controller_pb2.AlterPartitionResponse(
                error_code=wire_code(ErrorCode.INVALID_REQUEST), error_message=str(error)
            )

        async def run() -> controller_pb2.AlterPartitionResponse:
            response = await self.controller.submit(lambda: self.controller.state.alter_partition(alter))
            return alter_partition_to_proto(response)

        return await self._answer(controller_pb2.AlterPartitionResponse, run)

    async def CreateTopics(
        self, request: controller_pb2.CreateTopicsRequest, context: Any
    ) -> controller_pb2.CreateTopicsResponse:
        create = rq.CreateTopicsRequest(
            topics=tuple(
                rq.CreatableTopic(
                    name=topic.name,
                    num_partitions=topic.num_partitions,
                    replication_factor=topic.replication_factor,
                    assignments=tuple(
                        rq.ReplicaAssignment(a.partition_index, tuple(a.broker_ids)) for a in topic.assignments
                    ),
                    configs=dict(topic.configs),
                )
                for topic in request.topics
            ),
            validate_only=request.validate_only,
        )

        async def run() -> controller_pb2.CreateTopicsResponse:
            response = await self.controller.submit(lambda: self.controller.state.create_topics(create))
            result = controller_pb2.CreateTopicsResponse()
            for topic in response.topics:
                result.topics.add(
                    name=topic.name,
                    topic_id=topic.topic_id.bytes if topic.topic_id else b"",
                    error_code=int(topic.error_code),
                    error_message=topic.error_message,
                    num_partitions=topic.num_partitions,
                    replication_factor=topic.replication_factor,
                )
            return result

        return await self._answer(controller_pb2.CreateTopicsResponse, run)

    async def DeleteTopics(
        self, request: controller_pb2.DeleteTopicsRequest, context: Any
    ) -> controller_pb2.DeleteTopicsResponse:
        delete = rq.DeleteTopicsRequest(tuple(request.topic_names))

        async def run() -> controller_pb2.DeleteTopicsResponse:
            response = await self.controller.submit(lambda: self.controller.state.delete_topics(delete))
            result = controller_pb2.DeleteTopicsResponse()
            for topic in response.topics:
                result.responses.add(
                    name=topic.name,
                    topic_id=topic.topic_id.bytes if topic.topic_id else b"",
                    error_code=int(topic.error_code),
                    error_message=topic.error_message,
                )
            return result

        return await self._answer(controller_pb2.DeleteTopicsResponse, run)

    async def ElectLeaders(
        self, request: controller_pb2.ElectLeadersRequest, context: Any
    ) -> controller_pb2.ElectLeadersResponse:
        try:
            elect = elect_leaders_from_proto(request)
        except ValueError as error:
            return controller_pb2.ElectLeadersResponse(
                error_code=wire_code(ErrorCode.INVALID_REQUEST), error_message=str(error)
            )

        async def run() -> controller_pb2.ElectLeadersResponse:
            response = await self.controller.submit(lambda: self.controller.state.elect_leaders(elect))
            return elect_leaders_to_proto(response)

        return await self._answer(controller_pb2.ElectLeadersResponse, run)

    async def AlterPartitionReassignments(
        self, request: controller_pb2.AlterPartitionReassignmentsRequest, context: Any
    ) -> controller_pb2.AlterPartitionReassignmentsResponse:
        alter = rq.AlterPartitionReassignmentsRequest(
            tuple(
                rq.ReassignablePartition(
                    topic.name,
                    p.partition_index,
                    tuple(p.replicas.broker_ids) if p.HasField("replicas") else None,
                )
                for topic in request.topics
                for p in topic.partitions
            )
        )

        async def run() -> controller_pb2.AlterPartitionReassignmentsResponse:
            response = await self.controller.submit(lambda: self.controller.state.alter_partition_reassignments(alter))
            result = controller_pb2.AlterPartitionReassignmentsResponse()
            by_topic: dict[str, Any] = {}
            for r in response.results:
                if r.topic not in by_topic:
                    by_topic[r.topic] = result.responses.add(name=r.topic)
                by_topic[r.topic].partitions.add(
                    partition_index=r.partition, error_code=int(r.error_code), error_message=r.error_message
                )
            return result

        return await self._answer(controller_pb2.AlterPartitionReassignmentsResponse, run)

    async def ListPartitionReassignments(
        self, request: controller_pb2.ListPartitionReassignmentsRequest, context: Any
    ) -> controller_pb2.ListPartitionReassignmentsResponse:
        async def run() -> controller_pb2.ListPartitionReassignmentsResponse:
            response = self.controller.read(self.controller.state.list_partition_reassignments)
            result = controller_pb2.ListPartitionReassignmentsResponse()
            by_topic: dict[str, Any] = {}
            for r in response.reassignments:
                if r.topic not in by_topic:
                    by_topic[r.topic] = result.topics.add(name=r.topic)
                by_topic[r.topic].partitions.add(
                    partition_index=r.partition,
                    replicas=list(r.replicas),
                    adding_replicas=list(r.adding_replicas),
                    removing_replicas=list(r.removing_replicas),
                )
            return result

        return await self._answer(controller_pb2.ListPartitionReassignmentsResponse, run)

    async def AddRaftVoter(
        self, request: controller_pb2.AddRaftVoterRequest, context: Any
    ) -> controller_pb2.RaftVoterChangeResponse:
        timeout_s = (request.timeout_ms or 30_000) / 1000
        change = AddVoter(
            request.voter_id, request.voter_directory_id, request.voter_endpoint, not request.ack_when_appended
        )
        return await self._voter_change(request.cluster_id, change, timeout_s)

    async def RemoveRaftVoter(
        self, request: controller_pb2.RemoveRaftVoterRequest, context: Any
    ) -> controller_pb2.RaftVoterChangeResponse:
        change = RemoveVoter(request.voter_id, request.voter_directory_id)
        return await self._voter_change(request.cluster_id, change, 30.0)

    async def UpgradeKRaftVersion(
        self, request: controller_pb2.UpgradeKRaftVersionRequest, context: Any
    ) -> controller_pb2.RaftVoterChangeResponse:
        if request.kraft_version != 1:
            message = f"kraft.version {request.kraft_version}: only an upgrade to 1 is supported"
            return controller_pb2.RaftVoterChangeResponse(
                error_code=wire_code(ErrorCode.INVALID_UPDATE_VERSION), error_message=message
            )
        return await self._voter_change(request.cluster_id, KRaftUpgrade(), 30.0)

    async def _voter_change(
        self, cluster_id: str, change: AddVoter | RemoveVoter | KRaftUpgrade, timeout_s: float
    ) -> controller_pb2.RaftVoterChangeResponse:
        async def run() -> controller_pb2.RaftVoterChangeResponse:
            if cluster_id != self.cluster_id:
                raise KafkaError(ErrorCode.INCONSISTENT_CLUSTER_ID, f"cluster id {cluster_id} is not {self.cluster_id}")
            if self.change_voters is None:
                raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "this controller cannot change the voter set")
            self.controller.read(lambda: None)  # NOT_CONTROLLER unless this is the active controller
            result = await self.change_voters(change, timeout_s)
            if result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                raise self.controller.not_controller()
            return controller_pb2.RaftVoterChangeResponse(
                error_code=wire_code(result.error_code), error_message=result.message
            )

        return await self._answer(controller_pb2.RaftVoterChangeResponse, run)

    async def DescribeQuorum(
        self, request: controller_pb2.DescribeQuorumRequest, context: Any
    ) -> controller_pb2.DescribeQuorumResponse:
        async def run() -> controller_pb2.DescribeQuorumResponse:
            return self.controller.read(self.describe_quorum)

        return await self._answer(controller_pb2.DescribeQuorumResponse, run)

    async def CreatePartitions(
        self, request: controller_pb2.CreatePartitionsRequest, context: Any
    ) -> controller_pb2.CreatePartitionsResponse:
        create = rq.CreatePartitionsRequest(
            topics=tuple(
                rq.CreatePartitionsTopic(
                    t.name, t.count, tuple(tuple(a.broker_ids) for a in t.assignments) if t.assignments else None
                )
                for t in request.topics
            ),
            validate_only=request.validate_only,
        )

        async def run() -> controller_pb2.CreatePartitionsResponse:
            response = await self.controller.submit(lambda: self.controller.state.create_partitions(create))
            result = controller_pb2.CreatePartitionsResponse()
            for r in response.results:
                result.results.add(name=r.name, error_code=int(r.error_code), error_message=r.error_message)
            return result

        return await self._answer(controller_pb2.CreatePartitionsResponse, run)

    async def AllocateProducerIds(
        self, request: controller_pb2.AllocateProducerIdsRequest, context: Any
    ) -> controller_pb2.AllocateProducerIdsResponse:
        allocate = rq.AllocateProducerIdsRequest(request.broker_id, request.broker_epoch)

        async def run() -> controller_pb2.AllocateProducerIdsResponse:
            response = await self.controller.submit(lambda: self.controller.state.allocate_producer_ids(allocate))
            return controller_pb2.AllocateProducerIdsResponse(
                error_code=wire_code(response.error_code),
                producer_id_start=response.producer_id_start,
                producer_id_len=response.producer_id_len,
            )

        return await self._answer(controller_pb2.AllocateProducerIdsResponse, run)

    async def AlterUserScramCredentials(
        self, request: controller_pb2.AlterUserScramCredentialsRequest, context: Any
    ) -> controller_pb2.AlterUserScramCredentialsResponse:
        alter = rq.AlterUserScramCredentialsRequest(
            deletions=tuple(rq.ScramCredentialDeletion(d.name, d.mechanism) for d in request.deletions),
            upsertions=tuple(
                rq.ScramCredentialUpsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password)
                for u in request.upsertions
            ),
        )

        async def run() -> controller_pb2.AlterUserScramCredentialsResponse:
            response = await self.controller.submit(lambda: self.controller.state.alter_user_scram_credentials(alter))
            result = controller_pb2.AlterUserScramCredentialsResponse()
            for r in response.results:
                result.results.add(user=r.user, error_code=int(r.error_code), error_message=r.error_message)
            return result

        return await self._answer(controller_pb2.AlterUserScramCredentialsResponse, run)

    async def UpdateFeatures(
        self, request: controller_pb2.UpdateFeaturesRequest, context: Any
    ) -> controller_pb2.UpdateFeaturesResponse:
        updates = tuple(
            FeatureUpdate(u.feature, u.max_version_level, UpgradeType.of(u.upgrade_type)) for u in request.updates
        )

        async def run() -> controller_pb2.UpdateFeaturesResponse:
            state = self.controller.state
            response = await self.controller.submit(lambda: state.update_features(updates, request.validate_only))
            return controller_pb2.UpdateFeaturesResponse(
                error_code=wire_code(response.error_code), error_message=response.error_message or ""
            )

        return await self._answer(controller_pb2.UpdateFeaturesResponse, run)

    async def CreateAcls(
        self, request: controller_pb2.CreateAclsRequest, context: Any
    ) -> controller_pb2.CreateAclsResponse:
        creations = tuple(binding_from_proto(b) for b in request.creations)

        async def run() -> controller_pb2.CreateAclsResponse:
            self._require_authorizer()
            response = await self.controller.submit(lambda: self.controller.state.create_acls(creations))
            result = controller_pb2.CreateAclsResponse()
            for r in response.results:
                result.results.add(error_code=int(r.error_code), error_message=r.error_message)
            return result

        return await self._answer(controller_pb2.CreateAclsResponse, run)

    async def DeleteAcls(
        self, request: controller_pb2.DeleteAclsRequest, context: Any
    ) -> controller_pb2.DeleteAclsResponse:
        filters = tuple(filter_from_proto(f) for f in request.filters)

        async def run() -> controller_pb2.DeleteAclsResponse:
            self._require_authorizer()
            response = await self.controller.submit(lambda: self.controller.state.delete_acls(filters))
            result = controller_pb2.DeleteAclsResponse()
            for r in response.results:
                result.filter_results.add(
                    error_code=int(r.error_code),
                    error_message=r.error_message,
                    matching=[binding_to_proto(b) for b in r.matching],
                )
            return result

        return await self._answer(controller_pb2.DeleteAclsResponse, run)

    async def DescribeAcls(
        self, request: controller_pb2.DescribeAclsRequest, context: Any
    ) -> controller_pb2.DescribeAclsResponse:
        acl_filter = filter_from_proto(request.filter)

        async def run() -> controller_pb2.DescribeAclsResponse:
            self._require_authorizer()
            response = self.controller.read(lambda: self.controller.state.describe_acls(acl_filter))
            return controller_pb2.DescribeAclsResponse(
                error_code=wire_code(response.error_code),
                error_message=response.error_message,
                bindings=[binding_to_proto(b) for b in response.bindings],
            )

        return await self._answer(controller_pb2.DescribeAclsResponse, run)

    async def AlterConfigs(
        self, request: controller_pb2.AlterConfigsRequest, context: Any
    ) -> controller_pb2.AlterConfigsResponse:
        try:
            alter = alter_configs_from_proto(request)
        except ValueError as error:
            return controller_pb2.AlterConfigsResponse(
                error_code=wire_code(ErrorCode.INVALID_REQUEST), error_message=str(error)
            )

        async def run() -> controller_pb2.AlterConfigsResponse:
            response = await self.controller.submit(lambda: self.controller.state.alter_configs(alter))
            result = controller_pb2.AlterConfigsResponse()
            for r in response.results:
                ref = controller_pb2.ConfigResourceRef(resource_type=r.resource_type, resource_name=r.resource_name)
                result.results.add(resource=ref, error_code=int(r.error_code), error_message=r.error_message)
            return result

        return await self._answer(controller_pb2.AlterConfigsResponse, run)

    async def DescribeDynamicConfigs(
        self, request: controller_pb2.DescribeDynamicConfigsRequest, context: Any
    ) -> controller_pb2.DescribeDynamicConfigsResponse:
        wanted = [(r.resource_type, r.resource_name) for r in request.resources]

        async def run() -> controller_pb2.DescribeDynamicConfigsResponse:
            described = self.controller.read(lambda: self.controller.state.describe_dynamic_configs(wanted))
            result = controller_pb2.DescribeDynamicConfigsResponse()
            for d in described:
                ref = controller_pb2.ConfigResourceRef(resource_type=d.resource_type, resource_name=d.resource_name)
                result.resources.add(
                    resource=ref, error_code=int(d.error_code), error_message=d.error_message, configs=d.configs
                )
            return result

        return await self._answer(controller_pb2.DescribeDynamicConfigsResponse, run)

    async def DescribeUserScramCredentials(
        self, request: controller_pb2.DescribeUserScramCredentialsRequest, context: Any
    ) -> controller_pb2.DescribeUserScramCredentialsResponse:
        users = None if request.all_users else tuple(request.users)

        async def run() -> controller_pb2.DescribeUserScramCredentialsResponse:
            response = self.controller.read(lambda: self.controller.state.describe_user_scram_credentials(users))
            result = controller_pb2.DescribeUserScramCredentialsResponse()
            for r in response.results:
                described = result.results.add(user=r.user, error_code=int(r.error_code), error_message=r.error_message)
                for info in r.credential_infos:
                    described.credential_infos.add(mechanism=info.mechanism, iterations=info.iterations)
            return result

        return await self._answer(controller_pb2.DescribeUserScramCredentialsResponse, run)

    async def DescribeCluster(
        self, request: controller_pb2.DescribeClusterRequest, context: Any
    ) -> controller_pb2.DescribeClusterResponse:
        async def run() -> controller_pb2.DescribeClusterResponse:
            response = self.controller.read(lambda: self.controller.state.describe_cluster().response)
            result = controller_pb2.DescribeClusterResponse(
                cluster_id=self.cluster_id,
                controller_id=self.controller.raft.node_id,
                metadata_offset=response.metadata_offset,
            )
            for broker in response.brokers:
                result.brokers.add(
                    broker_id=broker.broker_id,
                    listeners=endpoints_to_proto(broker.endpoints),
                    rack=broker.rack,
                    broker_epoch=broker.broker_epoch,
                    incarnation_id=broker.incarnation_id,
                    fenced=broker.fenced,
                    in_controlled_shutdown=broker.in_controlled_shutdown,
                )
            return result

        return await self._answer(controller_pb2.DescribeClusterResponse, run)


def heartbeat_response(response: rq.BrokerHeartbeatResponse) -> controller_pb2.BrokerHeartbeatResponse:
    return controller_pb2.BrokerHeartbeatResponse(
        error_code=wire_code(response.error_code),
        is_caught_up=response.is_caught_up,
        is_fenced=response.is_fenced,
        should_shutdown=response.should_shutdown,
    )


def alter_partition_from_proto(request: controller_pb2.AlterPartitionRequest) -> rq.AlterPartitionRequest:
    topics = []
    for topic in request.topics:
        if len(topic.topic_id) != 16:
            raise ValueError(f"topic id must be 16 bytes, got {len(topic.topic_id)}")
        partitions = tuple(
            rq.AlterPartitionPartition(
                partition_index=p.partition_index,
                leader_epoch=p.leader_epoch,
                new_isr_with_epochs=tuple(rq.BrokerState(b.broker_id, b.broker_epoch) for b in p.new_isr_with_epochs),
                partition_epoch=p.partition_epoch,
                leader_recovery_state=LeaderRecoveryState(p.leader_recovery_state),
            )
            for p in topic.partitions
        )
        topics.append(rq.AlterPartitionTopic(uuid.UUID(bytes=topic.topic_id), partitions))
    return rq.AlterPartitionRequest(request.broker_id, request.broker_epoch, tuple(topics))


def alter_partition_to_proto(response: rq.AlterPartitionResponse) -> controller_pb2.AlterPartitionResponse:
    result = controller_pb2.AlterPartitionResponse(error_code=wire_code(response.error_code))
    for topic in response.topics:
        topic_data = result.topics.add(topic_id=topic.topic_id.bytes)
        for p in topic.partitions:
            topic_data.partitions.add(
                partition_index=p.partition_index,
                error_code=int(p.error_code),
                leader_id=p.leader_id,
                leader_epoch=p.leader_epoch,
                isr=list(p.isr),
                leader_recovery_state=int(p.leader_recovery_state),
                partition_epoch=p.partition_epoch,
            )
    return result


def elect_leaders_from_proto(request: controller_pb2.ElectLeadersRequest) -> rq.ElectLeadersRequest:
    try:
        election_type = rq.ElectionType(request.election_type)
    except ValueError:
        raise ValueError(f"unknown election type {request.election_type}") from None
    if request.all_topic_partitions:
        return rq.ElectLeadersRequest(election_type, None)
    refs = tuple(rq.TopicPartitionRef(t.topic, p) for t in request.topic_partitions for p in t.partitions)
    return rq.ElectLeadersRequest(election_type, refs)


def elect_leaders_to_proto(response: rq.ElectLeadersResponse) -> controller_pb2.ElectLeadersResponse:
    result = controller_pb2.ElectLeadersResponse()
    by_topic: dict[str, controller_pb2.ElectLeadersResponse.ReplicaElectionResult] = {}
    for r in response.results:
        if r.topic not in by_topic:
            by_topic[r.topic] = result.replica_election_results.add(topic=r.topic)
        by_topic[r.topic].partition_result.add(
            partition_id=r.partition, error_code=int(r.error_code), error_message=r.error_message
        )
    return result


def alter_configs_from_proto(request: controller_pb2.AlterConfigsRequest) -> AlterConfigsRequest:
    """Raises ValueError for an op number Kafka does not define."""
    resources = tuple(
        AlterConfigsResource(
            r.resource.resource_type,
            r.resource.resource_name,
            tuple(
                AlterableConfig(c.name, AlterConfigOp(c.op), c.value if c.HasField("value") else None)
                for c in r.configs
            ),
        )
        for r in request.resources
    )
    return AlterConfigsRequest(resources, request.validate_only, request.incremental)

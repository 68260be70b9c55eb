"""The admin client: topics through the active controller, cluster and quorum descriptions.

Requests that only the active controller answers are sent to any known controller and follow its
NOT_CONTROLLER redirect (`current_leader`), as Kafka's admin client does; unreachable nodes are skipped. Partition
administration (leader elections, reassignments) can also go to any broker, which forwards it to the controller.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

from minikafka.client.sasl_channel import intercepted_sync_channel
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.client.unreachable import no_broker_reachable
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.grpc_support import sync_channel
from minikafka.common.rpc_failure import rpc_failure_text, tls_handshake_reason
from minikafka.common.tls import TlsFiles
from minikafka.pb import broker_pb2, broker_pb2_grpc, controller_pb2, controller_pb2_grpc

R = TypeVar("R")
FORWARDING_MARGIN_S = 2.0  # a broker gives up on the controller at the request's timeout, then answers


@dataclass(frozen=True)
class PartitionDescription:
    partition: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: list[int]
    isr: list[int]
    elr: list[int] = field(default_factory=list)  # KIP-966 eligible leader replicas
    last_known_elr: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "replicas": self.replicas,
            "isr": self.isr,
            "elr": self.elr,
            "last_known_elr": self.last_known_elr,
        }


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: str
    partitions: list[PartitionDescription]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "topic_id": self.topic_id, "partitions": [p.to_json() for p in self.partitions]}


def resolvable(address: str) -> bool:
    """Whether the host of `host:port` resolves here (a container's hostname does not resolve on the host)."""
    host = address.rsplit(":", 1)[0].strip("[]")
    try:
        socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return False
    return True


def topic_id_text(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw)) if len(raw) == 16 else raw.hex()


class AdminClient:
    def __init__(
        self,
        bootstrap_controllers: Sequence[str] = (),
        bootstrap_servers: Sequence[str] = (),
        timeout_s: float = 15.0,
        tls: TlsFiles | None = None,
        broker_tls: TlsFiles | None = None,
        broker_sasl: SaslLogin | None = None,
    ) -> None:
        self.controllers = list(bootstrap_controllers)
        self.servers = list(bootstrap_servers)
        self.timeout_s = timeout_s
        self.tls = tls  # shown to the controllers (their listener is node-to-node)
        self.broker_tls = broker_tls  # for brokers' client listeners when they are GRPC_SSL
        self.broker_sasl = broker_sasl  # for brokers' client listeners when they are GRPC_SASL_SSL
        self._channels: dict[tuple[str, bool], grpc.Channel] = {}

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _channel(self, address: str, controller: bool = True) -> grpc.Channel:
        key = (address, controller)
        if key not in self._channels:
            channel = sync_channel(address, self.tls if controller else self.broker_tls)
            if not controller and self.broker_sasl is not None:
                channel = intercepted_sync_channel(channel, self.broker_sasl, self.timeout_s)
            self._channels[key] = channel
        return self._channels[key]

    # ---- the active controller ----

    def _controller_stub(self, address: str) -> controller_pb2_grpc.ControllerStub:
        return controller_pb2_grpc.ControllerStub(self._channel(address))

    def _call_active_controller(self, call: Callable[[controller_pb2_grpc.ControllerStub], R]) -> R:
        """Call the active controller, following NOT_CONTROLLER redirects, until the deadline.

        A redirect naming a host this machine cannot resolve (a container's name seen from the host) is not
        followed; when every given controller redirects to such a host, the call fails at once saying so.
        """
        if not self.controllers:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, "no controller address given (use --bootstrap-controller)")
        deadline = time.monotonic() + self.timeout_s
        candidates = list(self.controllers)
        last_problem = "no controller answered"
        unresolvable: dict[str, str] = {}  # bootstrap address -> the unresolvable address it redirected to
        refused_tls: set[str] = set()  # controllers whose TLS handshake failed: retrying will not mend that
        while time.monotonic() < deadline:
            address = candidates.pop(0)
            candidates.append(address)
            try:
                response = call(self._controller_stub(address))
            except grpc.RpcError as error:
                last_problem = rpc_failure_text(address, error)
                if tls_handshake_reason(error) is not None:
                    refused_tls.add(address)
                    if refused_tls >= set(self.controllers):
                        raise KafkaError(ErrorCode.NETWORK_EXCEPTION, last_problem) from None
                time.sleep(0.05)
                continue
            refused_tls.discard(address)
            if response.error_code == ErrorCode.NOT_CONTROLLER:  # type: ignore[attr-defined]
                leader = response.current_leader  # type: ignore[attr-defined]
                target = leader.leader_address
                last_problem = f"{address} is not the active controller"
                if target and target != address and not resolvable(target):
                    unresolvable[address] = target
                    if set(unresolvable) >= set(self.controllers):
                        raise KafkaError(
                            ErrorCode.NOT_CONTROLLER,
                            f"the active controller is {leader.leader_id} at {target}, a host this machine cannot "
                            "resolve; give that controller's reachable address too with --bootstrap-controller",
                        )
                    time.sleep(0.05)
                elif target and target != address:
                    candidates = [target] + [c for c in candidates if c != target]
                else:
                    time.sleep(0.05)  # no leader known yet: an election is under way
                continue
            # The next call starts at the active controller (it used to start at the first address every time).
            self.controllers = [address] + [c for c in self.controllers if c != address]
            return response
        raise KafkaError(
            ErrorCode.NOT_CONTROLLER, f"no active controller within {self.timeout_s:.0f}s ({last_problem})"
        )

    def _call_partition_admin(self, method: str, request: Any) -> Any:
        """Partition administration: to the active controller when controllers are given, else to any broker, which
        forwards it there (as Kafka's tools need only --bootstrap-server). Whole-request errors raise."""
        if self.controllers or not self.servers:
            response = self._call_active_controller(lambda stub: getattr(stub, method)(request, timeout=self.timeout_s))
        else:
            response = self._call_any_broker(method, request)
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        return response

    def _call_any_broker(self, method: str, request: Any) -> Any:
        """The first broker that answers; it waits up to the request's timeout for the controller, so the call's
        deadline leaves it room to say REQUEST_TIMED_OUT itself."""
        problems = []
        for address in self.servers:
            stub = broker_pb2_grpc.BrokerStub(self._channel(address, controller=False))
            try:
                return getattr(stub, method)(request, timeout=self.timeout_s + FORWARDING_MARGIN_S)
            except grpc.RpcError as error:
                problems.append(rpc_failure_text(address, error))
        raise no_broker_reachable(problems, plaintext=self.broker_tls is None)

    def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        configs: dict[str, str] | None = None,
        assignment: list[list[int]] | None = None,
    ) -> controller_pb2.CreateTopicsResponse.CreatableTopicResult:
        topic = controller_pb2.CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=-1 if assignment else partitions,
            replication_factor=-1 if assignment else replication_factor,
            configs=configs or {},
        )
        for index, brokers in enumerate(assignment or []):
            topic.assignments.add(partition_index=index, broker_ids=brokers)
        request = controller_pb2.CreateTopicsRequest(topics=[topic], timeout_ms=int(self.timeout_s * 1000))
        response = self._call_active_controller(lambda stub: stub.CreateTopics(request, timeout=self.timeout_s))
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        result = response.topics[0]
        if result.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(result.error_code), result.error_message or f"topic '{name}'")
        return result

    def alter_user_scram_credentials(
        self,
        deletions: Sequence[controller_pb2.AlterUserScramCredentialsRequest.Deletion],
        upsertions: Sequence[controller_pb2.AlterUserScramCredentialsRequest.Upsertion],
    ) -> list[controller_pb2.UserScramResult]:
        """Through the active controller; one result per user."""
        request = controller_pb2.AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions)
        response = self._call_active_controller(
            lambda stub: stub.AlterUserScramCredentials(request, timeout=self.timeout_s)
        )
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        return list(response.results)

    def alter_configs(
        self, request: controller_pb2.AlterConfigsRequest
    ) -> list[controller_pb2.AlterConfigsResponse.Result]:
        """IncrementalAlterConfigs (or, with `incremental` false, AlterConfigs) through the active controller, or a
        broker that forwards it when only brokers are given; one result per resource."""
        return list(self._call_partition_admin("AlterConfigs", request).results)

    def describe_dynamic_configs(
        self, resources: Sequence[tuple[int, str]]
    ) -> list[controller_pb2.DescribeDynamicConfigsResponse.Resource]:
        """The dynamic configs the metadata log holds for each (resource type, name)."""
        request = controller_pb2.DescribeDynamicConfigsRequest(
            resources=[controller_pb2.ConfigResourceRef(resource_type=t, resource_name=n) for t, n in resources]
        )
        response = self._call_active_controller(
            lambda stub: stub.DescribeDynamicConfigs(request, timeout=self.timeout_s)
        )
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        return list(response.resources)

    def describe_user_scram_credentials(
        self, users: Sequence[str] | None
    ) -> list[controller_pb2.DescribeUserScramCredentialsResponse.DescribedUser]:
        """The mechanisms and iterations of each user's credentials (every user's when `users` is None)."""
        request = controller_pb2.DescribeUserScramCredentialsRequest(all_users=users is None, users=users or ())
        response = self._call_active_controller(
            lambda stub: stub.DescribeUserScramCredentials(request, timeout=self.timeout_s)
        )
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        return list(response.results)

    def create_acls(self, bindings: Sequence[controller_pb2.AclBinding]) -> list[controller_pb2.AclOutcome]:
        """CreateAcls through the active controller; one outcome per binding, in order."""
        request = controller_pb2.CreateAclsRequest(creations=bindings)
        response = self._call_active_controller(lambda stub: stub.CreateAcls(request, timeout=self.timeout_s))
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        return list(response.results)

    def describe_acls(self, acl_filter: controller_pb2.AclBindingFilter) -> list[controller_pb2.AclBinding]:
        """The ACLs the filter matches, from the active controller's committed image."""
        request = controller_pb2.DescribeAclsRequest(filter=acl_filter)
        response = self._call_active_controller(lambda stub: stub.DescribeAcls(request, timeout=self.timeout_s))
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        return list(response.bindings)

    def delete_acls(
        self, filters: Sequence[controller_pb2.AclBindingFilter]
    ) -> list[controller_pb2.DeleteAclsResponse.FilterResult]:
        """DeleteAcls through the active controller; one result per filter with what it deleted."""
        request = controller_pb2.DeleteAclsRequest(filters=filters)
        response = self._call_active_controller(lambda stub: stub.DeleteAcls(request, timeout=self.timeout_s))
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        return list(response.filter_results)

    def delete_topic(self, name: str) -> str:
        """Delete the topic through the active controller; its id, as text, once the removal is committed."""
        request = controller_pb2.DeleteTopicsRequest(topic_names=[name], timeout_ms=int(self.timeout_s * 1000))
        response = self._call_active_controller(lambda stub: stub.DeleteTopics(request, timeout=self.timeout_s))
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        result = response.responses[0]
        if result.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(result.error_code), result.error_message or f"topic '{name}'")
        return topic_id_text(result.topic_id)

    def elect_leaders(
        self, election_type: int, partitions: Sequence[tuple[str, int]] | None
    ) -> list[tuple[str, int, ErrorCode, str]]:
        """ElectLeaders through the active controller (partitions None: all); (topic, partition, error, message)
        per partition."""
        request = controller_pb2.ElectLeadersRequest(
            election_type=election_type, all_topic_partitions=partitions is None, timeout_ms=int(self.timeout_s * 1000)
        )
        for topic, partition in partitions or ():
            request.topic_partitions.add(topic=topic, partitions=[partition])
        response = self._call_partition_admin("ElectLeaders", request)
        return [
            (topic.topic, p.partition_id, ErrorCode.of(p.error_code), p.error_message)
            for topic in response.replica_election_results
            for p in topic.partition_result
        ]

    def alter_partition_reassignments(
        self, targets: Sequence[tuple[str, int, Sequence[int] | None]]
    ) -> list[tuple[str, int, ErrorCode, str]]:
        """Start (replicas) or cancel (None) reassignments; (topic, partition, error, message) per partition."""
        request = controller_pb2.AlterPartitionReassignmentsRequest(timeout_ms=int(self.timeout_s * 1000))
        topics: dict[str, Any] = {}
        for topic, partition, replicas in targets:
            if topic not in topics:
                topics[topic] = request.topics.add(name=topic)
            entry = topics[topic].partitions.add(partition_index=partition)
            if replicas is not None:
                entry.replicas.broker_ids.extend(replicas)
        response = self._call_partition_admin("AlterPartitionReassignments", request)
        return [
            (topic.name, p.partition_index, ErrorCode.of(p.error_code), p.error_message)
            for topic in response.responses
            for p in topic.partitions
        ]

    def list_partition_reassignments(self) -> dict[tuple[str, int], dict[str, list[int]]]:
        """Reassignments in progress: {(topic, partition): {"replicas", "adding_replicas", "removing_replicas"}}."""
        request = controller_pb2.ListPartitionReassignmentsRequest(timeout_ms=int(self.timeout_s * 1000))
        response = self._call_partition_admin("ListPartitionReassignments", request)
        return {
            (topic.name, p.partition_index): {
                "replicas": list(p.replicas),
                "adding_replicas": list(p.adding_replicas),
                "removing_replicas": list(p.removing_replicas),
            }
            for topic in response.topics
            for p in topic.partitions
        }

    def wait_for_topic(self, name: str, timeout_s: float, poll_s: float = 0.05) -> TopicDescription:
        """The topic once the brokers' metadata knows it and every partition has a leader. CreateTopics answers
        when the controller committed it; brokers learn it a moment later (UNKNOWN_TOPIC_OR_PARTITION until then)."""
        deadline = time.monotonic() + timeout_s
        while (topic := self.ready_topic(name)) is None:
            if time.monotonic() >= deadline:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"topic '{name}' has no leader for every partition")
            time.sleep(poll_s)
        return topic

    def ready_topic(self, name: str, servers: Sequence[str] = ()) -> TopicDescription | None:
        """The topic if the metadata (of one of `servers`, or of any broker) knows it and every partition has a
        leader; None while it does not."""
        try:
            [topic] = self.describe_topics([name], servers)
        except KafkaError as error:
            if error.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise
            return None
        return topic if topic.partitions and all(p.leader >= 0 for p in topic.partitions) else None

    def describe_quorum(self) -> dict[str, Any]:
        response = self._call_active_controller(
            lambda stub: stub.DescribeQuorum(controller_pb2.DescribeQuorumRequest(), timeout=self.timeout_s)
        )
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)

        def replicas(items: Sequence[controller_pb2.ReplicaDescription]) -> list[dict[str, Any]]:
            return [
                {
                    "id": r.replica_id,
                    "directory_id": r.replica_directory_id,
                    "log_end_offset": r.log_end_offset,
                    "lag": max(0, response.high_watermark - r.log_end_offset),
                    "last_fetch_timestamp": r.last_fetch_timestamp,
                    "last_caught_up_timestamp": r.last_caught_up_timestamp,
                }
                for r in items
            ]

        return {
            "leader_id": response.leader_id,
            "leader_epoch": response.leader_epoch,
            "high_watermark": response.high_watermark,
            "voters": replicas(response.current_voters),
            "observers": replicas(response.observers),
            "endpoints": {n.node_id: f"{n.host}:{n.port}" for n in response.nodes},
        }

    def add_raft_voter(self, voter_id: int, directory_id: str, cluster_id: str, endpoint: str = "") -> None:
        """KIP-853 AddRaftVoter: answered once the new voter set is committed; `endpoint`: the new voter's
        controller listener (host:port; "": the leader's address book's)."""
        request = controller_pb2.AddRaftVoterRequest(
            cluster_id=cluster_id,
            voter_id=voter_id,
            voter_directory_id=directory_id,
            timeout_ms=int(self.timeout_s * 1000),
            voter_endpoint=endpoint,
        )
        self._voter_change(lambda stub: stub.AddRaftVoter(request, timeout=self.timeout_s + 5))

    def upgrade_kraft_version(self, version: int, cluster_id: str) -> None:
        """kraft.version 0 -> 1 (KIP-853): answered once the first VotersRecord is committed."""
        request = controller_pb2.UpgradeKRaftVersionRequest(cluster_id=cluster_id, kraft_version=version)
        self._voter_change(lambda stub: stub.UpgradeKRaftVersion(request, timeout=self.timeout_s + 5))

    def update_features(self, updates: Sequence[tuple[str, int, int]], validate_only: bool) -> None:
        """Kafka's UpdateFeatures at the active controller: (feature, level, upgrade type) each; all or nothing."""
        request = controller_pb2.UpdateFeaturesRequest(validate_only=validate_only)
        for feature, level, upgrade_type in updates:
            request.updates.add(feature=feature, max_version_level=level, upgrade_type=upgrade_type)
        response = self._call_active_controller(lambda stub: stub.UpdateFeatures(request, timeout=self.timeout_s))
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)

    def remove_raft_voter(self, voter_id: int, directory_id: str, cluster_id: str) -> None:
        """KIP-853 RemoveRaftVoter: answered once the new voter set is committed."""
        request = controller_pb2.RemoveRaftVoterRequest(
            cluster_id=cluster_id, voter_id=voter_id, voter_directory_id=directory_id
        )
        self._voter_change(lambda stub: stub.RemoveRaftVoter(request, timeout=self.timeout_s + 5))

    def _voter_change(
        self, call: Callable[[controller_pb2_grpc.ControllerStub], controller_pb2.RaftVoterChangeResponse]
    ) -> None:
        response = self._call_active_controller(call)
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)

    def describe_cluster(self) -> controller_pb2.DescribeClusterResponse:
        response = self._call_active_controller(
            lambda stub: stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=self.timeout_s)
        )
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(response.error_code), response.error_message)
        return response

    # ---- any broker ----

    def _brokers_from_controller(self) -> list[str]:
        """The unfenced brokers' listener addresses, as the active controller knows them (gRPC listeners first:
        the client speaks gRPC, and a Kafka listener answers it with a closed connection)."""
        brokers = [b for b in self.describe_cluster().brokers if not b.fenced]
        endpoints = sorted(
            (listener for b in brokers for listener in b.listeners), key=lambda e: e.name.upper() != "GRPC"
        )
        return [f"{e.host}:{e.port}" for e in endpoints]

    def metadata(self, topics: Sequence[str] = (), servers: Sequence[str] = ()) -> broker_pb2.MetadataResponse:
        """The first answer of `servers` (default: the bootstrap servers), asked in order."""
        if servers:
            return self._first_metadata(servers, topics)
        if not self.servers and self.controllers:
            self.servers = self._brokers_from_controller()
        if not self.servers:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, "no broker address given (use --bootstrap-server)")
        return self._first_metadata(self.servers, topics)

    def _first_metadata(self, servers: Sequence[str], topics: Sequence[str]) -> broker_pb2.MetadataResponse:
        problems = []
        for address in servers:
            stub = broker_pb2_grpc.BrokerStub(self._channel(address, controller=False))
            try:
                return stub.Metadata(broker_pb2.MetadataRequest(topics=list(topics)), timeout=self.timeout_s)
            except grpc.RpcError as error:
                problems.append(rpc_failure_text(address, error))
        raise no_broker_reachable(problems, plaintext=self.broker_tls is None)

    def describe_topics(self, names: Sequence[str] = (), servers: Sequence[str] = ()) -> list[TopicDescription]:
        response = self.metadata(names, servers)
        described = []
        for topic in response.topics:
            if topic.error_code != ErrorCode.NONE:
                raise KafkaError(ErrorCode.of(topic.error_code), f"topic '{topic.name}'")
            partitions = [
                PartitionDescription(
                    partition=p.partition_index,
                    leader=p.leader_id,
                    leader_epoch=p.leader_epoch,
                    partition_epoch=p.partition_epoch,
                    replicas=list(p.replica_nodes),
                    isr=list(p.isr_nodes),
                    elr=list(p.eligible_leader_replicas),
                    last_known_elr=list(p.last_known_elr),
                )
                for p in sorted(topic.partitions, key=lambda p: p.partition_index)
            ]
            described.append(TopicDescription(topic.name, topic_id_text(topic.topic_id), partitions))
        return sorted(described, key=lambda t: t.name)

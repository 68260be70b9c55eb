"""The pure controller a shell drives (Kafka's QuorumController minus its event queue and Raft client).

Request methods generate a ControllerResult (records to commit + the response) and never change an image.
`replay` of a committed record changes `committed`, the image everyone may read. `image`, the one requests
generate from, is `committed` plus the records this controller has proposed and not yet seen commit
(`apply_proposed`): like Kafka's active controller, the next request is generated against the outcome of the
earlier ones without waiting for their commit, and `revert_to_committed` drops them when leadership is lost. The
heartbeat soft state (last contact per broker) is updated directly by registrations and heartbeats, as in Kafka:
it is liveness, not metadata, and is never in the log.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from minikafka.common.acl import AclBinding, AclBindingFilter
from minikafka.kraft_controller.control import (
    acl_control,
    cluster_control,
    config_control,
    controller_registration,
    create_partitions,
    feature_control,
    leader_elections,
    partition_reassignment,
    producer_id_control,
    replication_control,
    scram_control,
)
from minikafka.kraft_controller.control.brokers_to_isrs import BrokersToIsrs
from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.heartbeat_manager import HeartbeatManager, ShutdownNow
from minikafka.kraft_controller.control.record_events import describe_record_event
from minikafka.kraft_controller.control.replication_control import RandomSource
from minikafka.kraft_controller.control.requests import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreateAclsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsResponse,
    DescribeClusterResponse,
    DescribeUserScramCredentialsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
)
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    TRANSACTION_VERSION,
    FeatureLevel,
    Record,
    RegisterController,
)

__all__ = ["ControllerStateMachine", "describe_record_event"]


def feature_records(image: MetadataImage, config: ControlConfig) -> list[Record]:
    """The FeatureLevel records that bring the image to this controller's eligible.leader.replicas.version, and
    on an ELR downgrade to 0 the changes that clear every ELR and LastKnownElr (the brokers read the level too). With
    the ELR on, the cluster-wide min.insync.replicas record the controller and the brokers share. transaction.version
    is bootstrapped: written once, while the log has no record of it; from then on only UpdateFeatures changes it, as
    in Kafka, where the level is chosen at format time and by kafka-features."""
    wanted = config.eligible_leader_replicas_version
    records: list[Record] = []
    if image.feature_level(ELIGIBLE_LEADER_REPLICAS_VERSION) != wanted:
        records.append(FeatureLevel(ELIGIBLE_LEADER_REPLICAS_VERSION, wanted))
        if wanted == 0:
            records += replication_control.clear_elrs(image)
    scratch = replication_control.apply_records(image, records)
    records += config_control.elr_safety_records(scratch, config.min_insync_replicas)
    if not image.feature_recorded(TRANSACTION_VERSION) and config.transaction_version > 0:
        records.append(FeatureLevel(TRANSACTION_VERSION, config.transaction_version))
    return records


class ControllerStateMachine:
    def __init__(self, config: ControlConfig, rng: RandomSource, image: MetadataImage | None = None) -> None:
        self.config = config
        self.rng = rng  # topic ids and replica placement; injected so simulations are seeded
        self.committed = image if image is not None else MetadataImage()
        self.image = self.committed
        # (offset, record, image after it) of each record applied to `image` ahead of its commit, in offset order.
        self._proposed: deque[tuple[int, Record, MetadataImage]] = deque()
        self.heartbeats = HeartbeatManager(config.session_timeout_ms)
        # When the next automatic leader rebalance is due (soft state, like the heartbeats: never in the log).
        self.next_leader_balance_ms = config.leader_imbalance_check_interval_ms
        self._isr_index: BrokersToIsrs | None = None  # `image`'s, built when first needed (the active controller)

    @property
    def isr_index(self) -> BrokersToIsrs:
        """`image`'s partitions by broker (Kafka's BrokersToIsrs): built from `image` on first use, then kept up
        with it record by record; dropped when `image` jumps (a leadership change, a snapshot)."""
        if self._isr_index is None:
            self._isr_index = BrokersToIsrs.of(self.image)
        return self._isr_index

    # ---- requests: generate records + response ----

    def register_broker(
        self, request: BrokerRegistrationRequest, now_ms: int
    ) -> ControllerResult[BrokerRegistrationResponse]:
        defaults = self.config.topic_defaults
        index = self.isr_index
        result = cluster_control.register_broker(self.image, self.heartbeats, request, now_ms, defaults, index)
        self.heartbeats = self.heartbeats.touch(request.broker_id, now_ms)
        return result

    def register_controller(self, request: RegisterController) -> ControllerResult[None]:
        return controller_registration.register_controller(self.image, request)

    def broker_heartbeat(
        self, request: BrokerHeartbeatRequest, now_ms: int
    ) -> ControllerResult[BrokerHeartbeatResponse]:
        defaults = self.config.topic_defaults
        outcome = cluster_control.broker_heartbeat(self.image, self.heartbeats, request, defaults, self.isr_index)
        if isinstance(outcome.decision, ShutdownNow):
            self.heartbeats = self.heartbeats.remove(request.broker_id)  # shut down cleanly: no session to expire
        else:
            heartbeats = self.heartbeats.touch(request.broker_id, now_ms, request.current_metadata_offset)
            self.heartbeats = heartbeats.with_controlled_shutdown_offset(
                request.broker_id, outcome.controlled_shutdown_offset
            )
        return outcome.result

    def heartbeat_without_change(self, request: BrokerHeartbeatRequest, now_ms: int) -> BrokerHeartbeatResponse | None:
        """Answer at once, apart from the event queue, a heartbeat that changes nothing and reads only committed
        state (`cluster_control.unchanged_heartbeat_response`), renewing its session; None when it must be queued.
        Queued, it would wait behind every write ahead of it and the commit of all of them (a fencing of thousands
        of partitions: seconds), and the broker's session with it."""
        response = cluster_control.unchanged_heartbeat_response(
            self.committed.broker(request.broker_id), self.image.broker(request.broker_id), request
        )
        if response is not None:  # the soft state the queued heartbeat would leave: no controlled shutdown offset
            heartbeats = self.heartbeats.touch(request.broker_id, now_ms, request.current_metadata_offset)
            self.heartbeats = heartbeats.with_controlled_shutdown_offset(request.broker_id, -1)
        return response

    def heartbeat_arrived(self, request: BrokerHeartbeatRequest, now_ms: int) -> None:
        """A heartbeat of the broker's current epoch arrived: its session is renewed from now, before it waits in
        the event queue (Kafka updates the contact time before the rest of the handling), so a tick queued ahead
        of it cannot expire a broker whose heartbeats wait behind a long write."""
        self.expired_heartbeat(request, now_ms)

    def expired_heartbeat(self, request: BrokerHeartbeatRequest, now_ms: int) -> None:
        """A heartbeat that waited in the event queue past its deadline still shows the broker alive (Kafka's
        processExpiredBrokerHeartbeat): its session is renewed from the time it arrived, nothing else changes."""
        registration = self.image.broker(request.broker_id)
        if registration is None or registration.broker_epoch != request.broker_epoch:
            return
        if request.broker_id in self.heartbeats.sessions:
            self.heartbeats = self.heartbeats.touch(request.broker_id, now_ms, request.current_metadata_offset)

    def heartbeat_awaiting_answer(self, broker_id: int) -> None:
        """A heartbeat was generated and its answer waits for earlier writes to commit: until it is answered the
        broker (one heartbeat at a time) cannot be heard, so its session does not expire."""
        self.heartbeats = self.heartbeats.answer_pending(broker_id, +1)

    def heartbeat_answered(self, request: BrokerHeartbeatRequest, now_ms: int) -> None:
        """The answer (or an error) went back: the broker's silence counts from now."""
        self.heartbeats = self.heartbeats.answer_pending(request.broker_id, -1)
        self.expired_heartbeat(request, now_ms)

    def on_deaf(self, duration_ms: int) -> None:
        """This controller could not run for `duration_ms` (its loop stalled): heartbeats sent meanwhile were not
        heard, so that silence is not held against any broker's session."""
        self.heartbeats = self.heartbeats.extended(duration_ms)

    def alter_partition(self, request: AlterPartitionRequest) -> ControllerResult[AlterPartitionResponse]:
        return replication_control.alter_partition(self.image, request, self.config)

    def create_topics(self, request: CreateTopicsRequest) -> ControllerResult[CreateTopicsResponse]:
        return replication_control.create_topics(self.image, request, self.config, self.rng)

    def create_partitions(self, request: CreatePartitionsRequest) -> ControllerResult[CreatePartitionsResponse]:
        return create_partitions.create_partitions(self.image, request, self.rng.randint(0, 1 << 16))

    def delete_topics(self, request: DeleteTopicsRequest) -> ControllerResult[DeleteTopicsResponse]:
        return replication_control.delete_topics(self.image, request)

    def elect_leaders(self, request: ElectLeadersRequest) -> ControllerResult[ElectLeadersResponse]:
        return leader_elections.elect_leaders(self.image, request, self.config.topic_defaults)

    def alter_partition_reassignments(
        self, request: AlterPartitionReassignmentsRequest
    ) -> ControllerResult[AlterPartitionReassignmentsResponse]:
        return partition_reassignment.alter_partition_reassignments(self.image, request, self.config.topic_defaults)

    def list_partition_reassignments(self) -> ListPartitionReassignmentsResponse:
        """From committed state only, as every read."""
        return partition_reassignment.list_partition_reassignments(self.committed)

    def allocate_producer_ids(
        self, request: AllocateProducerIdsRequest
    ) -> ControllerResult[AllocateProducerIdsResponse]:
        return producer_id_control.allocate_producer_ids(self.image, request)

    def alter_user_scram_credentials(
        self, request: AlterUserScramCredentialsRequest
    ) -> ControllerResult[AlterUserScramCredentialsResponse]:
        return scram_control.alter_user_scram_credentials(self.image, request)

    def describe_user_scram_credentials(self, users: tuple[str, ...] | None) -> DescribeUserScramCredentialsResponse:
        """From committed state only, as every read."""
        return scram_control.describe_user_scram_credentials(self.committed, users)

    def create_acls(self, creations: Sequence[AclBinding]) -> ControllerResult[CreateAclsResponse]:
        return acl_control.create_acls(self.image, creations, self.rng)

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> ControllerResult[DeleteAclsResponse]:
        return acl_control.delete_acls(self.image, filters)

    def describe_acls(self, acl_filter: AclBindingFilter) -> DescribeAclsResponse:
        """From committed state only, as every read."""
        return acl_control.describe_acls(self.committed, acl_filter)

    def alter_configs(
        self, request: config_control.AlterConfigsRequest
    ) -> ControllerResult[config_control.AlterConfigsResponse]:
        return config_control.alter_configs(self.image, request)

    def describe_dynamic_configs(self, resources: Sequence[tuple[int, str]]) -> list[config_control.DynamicConfigs]:
        """From committed state only, as every read."""
        return config_control.describe_dynamic_configs(self.committed, resources)

    def update_features(
        self, updates: Sequence[feature_control.FeatureUpdate], validate_only: bool
    ) -> ControllerResult[feature_control.UpdateFeaturesResponse]:
        return feature_control.update_features(self.image, updates, validate_only)

    def describe_cluster(self) -> ControllerResult[DescribeClusterResponse]:
        brokers = tuple(broker for _, broker in sorted(self.committed.brokers.items()))
        return ControllerResult((), DescribeClusterResponse(brokers, self.committed.offset))

    def tick(self, now_ms: int) -> ControllerResult[None]:
        """Fence the broker whose session timed out longest ago (Kafka: broker.session.timeout.ms without a
        heartbeat; one a tick, as Kafka's maybeFenceOneStaleBroker); every
        leader.imbalance.check.interval.seconds, with auto.leader.rebalance.enable, give preferred replicas their
        leadership back. Writes eligible.leader.replicas.version where the image's differs from this controller's,
        and bootstraps transaction.version."""
        records = feature_records(self.image, self.config)
        scratch = replication_control.apply_records(self.image, records)
        defaults = self.config.topic_defaults
        # The feature records change no partition, or only clear ELRs: the index files every broker's still.
        fencing = cluster_control.fence_one_stale_broker(scratch, self.heartbeats, now_ms, defaults, self.isr_index)
        if fencing is not None:
            return ControllerResult(tuple(records), None, later=fencing)  # the rebalance waits for the next tick
        if self.config.auto_leader_rebalance_enable and now_ms >= self.next_leader_balance_ms:
            self.next_leader_balance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
            records += leader_elections.balance_partition_leaders(scratch)
        return ControllerResult(tuple(records), None)

    # ---- committed state ----

    @property
    def proposed_records(self) -> int:
        """Records proposed here and not yet seen commit (each holds the image after it)."""
        return len(self._proposed)

    def proposed_record(self, offset: int) -> Record | None:
        """The record this active controller proposed at `offset` and has not seen commit: its commit is replayed
        from it, with no decoding."""
        return self._proposed[0][1] if self._proposed and self._proposed[0][0] == offset else None

    def replay(self, record: Record, offset: int) -> None:
        before = self.committed
        ours = bool(self._proposed) and self._proposed[0][1] is record and self._proposed[0][0] == offset
        if ours:
            # The record proposed here, committed: the image after it was built when it was proposed, from the
            # same records at the same offsets (a leadership change would have dropped it). Replaying it again
            # cost the active controller a second image per record.
            self.committed = self._proposed.popleft()[2]
        else:
            self.committed = self.committed.replay(record, offset)
        if not self._proposed or offset >= self._proposed[-1][0]:
            # Nothing proposed beyond it: the generation image is the committed one.
            if not ours:
                self._follow(record, before, self.committed)
            self.image = self.committed
            self._proposed.clear()
        elif not ours:
            self._isr_index = None  # a record not proposed here under proposals: rebuilt when next needed

    def _follow(self, record: Record, before: MetadataImage, after: MetadataImage) -> None:
        """The generation image moves from `before` to `after` by `record`: the index follows, or is dropped when it
        described another image."""
        if self._isr_index is None:
            return
        if self.image is before:
            self._isr_index.replayed(record, before, after)
        else:
            self._isr_index = None

    def load_snapshot(self, records: Iterable[Record], last_offset: int) -> None:
        self.committed = self.image = MetadataImage.from_records(records, last_offset)
        self._proposed.clear()
        self._isr_index = None

    # ---- proposed, not yet committed (the active controller only) ----

    def apply_proposed(self, records: Sequence[Record], base_offset: int) -> None:
        """Records appended to the Raft log at `base_offset`: later requests are generated as if they committed."""
        for offset, record in enumerate(records, base_offset):
            before, self.image = self.image, self.image.replay(record, offset)
            if self._isr_index is not None:
                self._isr_index.replayed(record, before, self.image)
            self._proposed.append((offset, record, self.image))

    def revert_to_committed(self) -> None:
        """Leadership changed: proposals not yet committed may be truncated, so generate from committed state."""
        if self.image is not self.committed:
            self._isr_index = None
        self.image = self.committed
        self._proposed.clear()

    def on_become_active(self, now_ms: int) -> None:
        """A new active controller has no liveness history: give every registered broker a fresh session."""
        self.heartbeats = self.heartbeats.reset_all(self.image.brokers, now_ms)
        self.next_leader_balance_ms = now_ms + self.config.leader_imbalance_check_interval_ms

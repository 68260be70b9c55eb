"""The controller process's configuration (Kafka's key names)."""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common.config import ConfigError, at_least, between, config_key
from minikafka.common.endpoints import Listener
from minikafka.common.node_config import NodeConfig


@dataclass(frozen=True)
class ControllerConfig(NodeConfig):
    election_timeout_ms: int = config_key(
        "controller.quorum.election.timeout.ms",
        1000,
        "Maximum time without a leader before a voter starts an election (randomized up to 2x).",
        at_least(1),
    )
    fetch_timeout_ms: int = config_key(
        "controller.quorum.fetch.timeout.ms",
        2000,
        "Maximum time without a successful Fetch from the leader before a voter starts an election.",
        at_least(1),
    )
    election_backoff_max_ms: int = config_key(
        "controller.quorum.election.backoff.max.ms",
        1000,
        "Maximum backoff before a failed candidate retries an election.",
        at_least(0),
    )
    request_timeout_ms: int = config_key(
        "controller.quorum.request.timeout.ms", 2000, "Timeout of one Raft RPC.", at_least(1)
    )
    raft_pre_vote_enable: bool = config_key(
        "minikafka.raft.pre.vote.enable",
        True,
        "KIP-996 pre-vote: a voter whose fetch or election timeout passes first asks the others, without raising "
        "its epoch, whether they would vote for it, and starts an election only once a majority would. A voter "
        "cut off from a healthy leader then cannot force an election when it comes back. Kafka has no switch for "
        "it (always on since Kafka 4.0); turn off only to demonstrate the disruption it prevents.",
    )
    raft_directory_id_check: bool = config_key(
        "minikafka.raft.directory.id.check",
        True,
        "KIP-853: where the controller's metadata log directory was formatted with the voter set (kraft.version 1, "
        "`cluster up --dynamic-quorum`), name each voter by id and directory id: a controller whose disk was lost "
        "comes back with a new directory and is an observer, never the voter it replaces. Kafka has no switch for "
        "it; turn off only to demonstrate the committed metadata a wiped voter can lose (voters by id only, as in "
        "Kafka before KIP-853).",
    )
    append_linger_ms: int = config_key(
        "controller.quorum.append.linger.ms",
        5,
        "How long the active controller lets writes accumulate before appending them to the metadata log in one "
        "batch (one fsync), when the batch starts behind an append still awaiting its commit; a batch starting "
        "on an idle quorum is appended at once. Kafka's default is 25 (and Kafka always waits it out); 5, "
        "measured best here as a fixed linger (benchmarks/run_all.py).",
        at_least(0),
    )
    session_timeout_ms: int = config_key(
        "broker.session.timeout.ms", 9000, "A broker that sends no heartbeat for this long is fenced.", at_least(1)
    )
    heartbeat_interval_ms: int = config_key(
        "broker.heartbeat.interval.ms",
        2000,
        "The heartbeat interval brokers are expected to use (checked against the session timeout).",
        at_least(1),
    )
    alter_partition_broker_epoch_check: bool = config_key(
        "alter.partition.broker.epoch.check",
        True,
        "KIP-903: reject an ISR member whose broker epoch is not its current registration's. Turn off only "
        "to demonstrate the data-loss bug KIP-903 fixes.",
    )
    alter_partition_partition_epoch_check: bool = config_key(
        "minikafka.alter.partition.partition.epoch.check",
        True,
        "Answer INVALID_UPDATE_VERSION to an AlterPartition whose partition epoch is older than the partition's "
        "(the ISR it proposes was computed against metadata that has changed since). Kafka has no switch for it; "
        "turn off only to demonstrate the stale ISR it keeps out.",
    )
    default_replication_factor: int = config_key(
        "default.replication.factor", 1, "Replication factor of topics created without one.", at_least(1)
    )
    num_partitions: int = config_key("num.partitions", 1, "Partition count of topics created without one.", at_least(1))
    min_insync_replicas: int = config_key(
        "min.insync.replicas",
        1,
        "A topic created without min.insync.replicas stores none, and each broker applies its own to it; the "
        "controller uses this one to decide which replicas join the Eligible Leader Replicas (KIP-966).",
        at_least(1),
    )
    eligible_leader_replicas_version: int = config_key(
        "eligible.leader.replicas.version",
        1,
        "KIP-966: 1 keeps Eligible Leader Replicas and the strict min ISR rule (the HWM advances only while the ISR "
        "has min.insync.replicas members); 0 is Kafka 3.x (the last ISR member stays and leads again after losing "
        "its unflushed tail). The active controller writes it to the metadata log.",
        between(0, 1),
    )
    transaction_version: int = config_key(
        "transaction.version",
        2,
        "The transaction.version feature level (KIP-890) the active controller bootstraps: written to the metadata "
        "log once, while it holds no level (Kafka's format-time --feature); afterwards `minikafka features upgrade|"
        "downgrade` (UpdateFeatures) changes it and this setting is not read again. Brokers "
        "advertise it in ApiVersions' finalized features and clients pick their transaction protocol from it. 2: a "
        "producer's EndTxn (v5) bumps its epoch, so an EndTxn or produce delayed from one transaction is fenced in "
        "the next; 1: flexible __transaction_state records; 0: neither.",
        between(0, 2),
    )
    auto_leader_rebalance_enable: bool = config_key(
        "auto.leader.rebalance.enable",
        True,
        "Every leader.imbalance.check.interval.seconds, the active controller moves leadership back to the preferred "
        "replica (the first one) of every partition where that replica is in the ISR and unfenced.",
    )
    leader_imbalance_check_interval_seconds: int = config_key(
        "leader.imbalance.check.interval.seconds",
        300,
        "How often the active controller checks for partitions not led by their preferred replica.",
        at_least(1),
    )
    leader_imbalance_per_broker_percentage: int = config_key(
        "leader.imbalance.per.broker.percentage",
        10,
        "Accepted for Kafka compatibility: as in Kafka's KRaft controller, every imbalanced partition is rebalanced "
        "at each check, with no per-broker threshold (that gate belonged to the ZooKeeper controller).",
        between(0, 100),
    )
    unclean_leader_election_enable: bool = config_key(
        "unclean.leader.election.enable",
        False,
        "When no eligible replica is in the ISR, let an out-of-sync live replica lead (acknowledged writes it lacks "
        "are lost); a topic's own unclean.leader.election.enable overrides it.",
    )
    metadata_log_segment_bytes: int = config_key(
        "metadata.log.segment.bytes", 8 * 1024 * 1024, "Segment size of the metadata log.", at_least(1024)
    )
    metadata_max_records_between_snapshots: int = config_key(
        "metadata.log.max.record.bytes.between.snapshots",
        20 * 1024 * 1024,
        "Bytes of new metadata records after which the controller writes a snapshot.",
        at_least(1),
    )

    controller_listener_names: str = config_key(
        "controller.listener.names",
        "",
        "The controller's listeners, by name (empty: every one in listeners). The first is the quorum's: Raft and "
        "the brokers' controller RPCs (minikafka's gRPC). Each other one serves Kafka's protocol (secured as the "
        "quorum's: PLAINTEXT, or mutual TLS under security.inter.broker.protocol=SSL) to admin clients that "
        "bootstrap from the controllers (KIP-919: kafka-metadata-quorum --bootstrap-controller): ApiVersions, "
        "DescribeCluster, DescribeQuorum, AddRaftVoter, RemoveRaftVoter, UpdateFeatures (kraft.version).",
    )

    role = "controller"

    @property
    def listener_names(self) -> list[str]:
        """controller.listener.names, else the names of listeners in order."""
        if self.controller_listener_names:
            return [name.strip().upper() for name in self.controller_listener_names.split(",") if name.strip()]
        return [listener.name for listener in self.bound_listeners]

    @property
    def listener(self) -> Listener:
        """The quorum's listener: the first of controller.listener.names."""
        first = self.listener_names[0]
        return next((li for li in self.bound_listeners if li.name == first), self.bound_listeners[0])

    @property
    def kafka_listeners(self) -> tuple[Listener, ...]:
        """The listeners serving Kafka's protocol: every controller listener but the quorum's."""
        quorum = self.listener.name
        return tuple(li for li in self.bound_listeners if li.name != quorum and li.name in self.listener_names)

    def validate(self) -> None:
        super().validate()
        bound = [listener.name for listener in self.bound_listeners]
        if self.controller_listener_names and set(self.listener_names) != set(bound):
            # Kafka: a controller-only node listens on its controller listeners alone, and on each of them.
            raise ConfigError(
                f"invalid value '{self.controller_listener_names}' for 'controller.listener.names': it must name "
                f"every listener of the controller ({', '.join(bound)}) and no other",
                "controller.listener.names",
            )
        if self.node_id not in self.voters and not self.bootstrap_servers:
            raise ConfigError(
                f"invalid value '{self.controller_quorum_voters}' for 'controller.quorum.voters': "
                f"node.id {self.node_id} is not a voter",
                "controller.quorum.voters",
            )
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                f"invalid value {self.heartbeat_interval_ms} for 'broker.heartbeat.interval.ms': must be less than "
                f"broker.session.timeout.ms ({self.session_timeout_ms})",
                "broker.heartbeat.interval.ms",
            )

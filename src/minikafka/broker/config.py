"""The broker process's configuration (Kafka's key names)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.common.compression import (
    COMPRESSION_TYPES,
    GZIP_LEVEL,
    LZ4_LEVEL,
    PRODUCER_COMPRESSION,
    ZSTD_LEVEL,
    CompressionLevels,
)
from minikafka.common.config import ConfigError, at_least, between, config_key, one_of, subset_of
from minikafka.common.endpoints import Listener
from minikafka.common.node_config import NodeConfig
from minikafka.common.topic_config import TIMESTAMP_TYPES
from minikafka.storage.log_config import LogConfig

_LONG_MAX = 2**63 - 1
_HOUR_MS = 3_600_000
KAFKA_PROTOCOL = "PLAINTEXT"  # Kafka's wire protocol, unencrypted: what unmodified Kafka clients speak
GRPC_PROTOCOL = "GRPC"  # minikafka's own protocol: its client, replication and the controllers
# Kafka's security protocols, all speaking Kafka's wire protocol: over TLS (SSL), after a SASL exchange, or both.
KAFKA_PROTOCOLS = (KAFKA_PROTOCOL, "SSL", "SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
GRPC_SSL_PROTOCOL = "GRPC_SSL"  # the same over TLS (the node's certificate; clients show none unless inter-node)
# GRPC_SSL whose calls must carry a session from a SASL exchange (SaslAuthenticate): Kafka's SASL_SSL for the gRPC
# client API. There is no GRPC_SASL_PLAINTEXT: the session token is a bearer credential and must not travel in clear.
GRPC_SASL_SSL_PROTOCOL = "GRPC_SASL_SSL"
GRPC_PROTOCOLS = (GRPC_PROTOCOL, GRPC_SSL_PROTOCOL, GRPC_SASL_SSL_PROTOCOL)
# group.consumer.assignors may name Kafka's server-side assignor classes
ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def parse_protocol_map(text: str) -> dict[str, str]:
    """`NAME:PROTOCOL,...` as {NAME: PROTOCOL}; raises ValueError with the reason."""
    mapping = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        if not sep or protocol.upper() not in (*KAFKA_PROTOCOLS, *GRPC_PROTOCOLS):
            raise ValueError(
                f"expected NAME:PROTOCOL, PROTOCOL one of {', '.join((*KAFKA_PROTOCOLS, *GRPC_PROTOCOLS))}; "
                f"got {item!r}"
            )
        mapping[name.strip().upper()] = protocol.upper()
    return mapping


def _protocol_map_ok(text: str) -> str | None:
    try:
        parse_protocol_map(text)
    except ValueError as error:
        return str(error)
    return None


def _unset_or(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """A key that may be left empty (its value then derives from another key), else checked by `check`."""
    return lambda value: None if value is None else check(value)


def _level(levels: CompressionLevels) -> Callable[[int], str | None]:
    return levels.problem


def _plain_users_ok(users: tuple[str, ...]) -> str | None:
    bad = [user for user in users if not user.partition(":")[0] or not user.partition(":")[1]]
    return f"expected NAME:PASSWORD entries, got {bad[0]!r}" if bad else None


@dataclass(frozen=True)
class BrokerConfig(NodeConfig):
    inter_broker_listener_name: str = config_key(
        "inter.broker.listener.name", "", "The listener followers fetch through; empty: the first GRPC listener."
    )
    listener_security_protocol_map: str = config_key(
        "listener.security.protocol.map",
        "PLAINTEXT:PLAINTEXT,GRPC:GRPC,BROKER:GRPC,CONTROLLER:GRPC",
        "The protocol of each listener name: PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners speak Kafka's "
        "wire protocol to Kafka clients (SSL: over TLS; SASL_*: after SASL authentication), GRPC listeners "
        "minikafka's own (its client, replication), GRPC_SSL the same over TLS with the node's certificate "
        "(minikafka.node.ssl.*), GRPC_SASL_SSL that with SASL (sasl.enabled.mechanisms; calls carry the session "
        "token of a SaslAuthenticate exchange). The inter-broker listener follows security.inter.broker.protocol.",
        _protocol_map_ok,
    )
    ssl_keystore_type: str = config_key(
        "ssl.keystore.type", "PEM", "Format of ssl.keystore.location: PEM only.", one_of("PEM")
    )
    ssl_keystore_location: str = config_key(
        "ssl.keystore.location",
        "",
        "PEM file holding the private key and certificate chain of the SSL and SASL_SSL Kafka listeners; empty: the "
        "node's own certificate and key (minikafka.node.ssl.certificate.location, minikafka.node.ssl.key.location, "
        "which cluster up issues from the run's CA).",
    )
    ssl_key_password: str = config_key(
        "ssl.key.password", "", "Password of the private key in ssl.keystore.location; empty: not encrypted."
    )
    ssl_truststore_type: str = config_key(
        "ssl.truststore.type", "PEM", "Format of ssl.truststore.location: PEM only.", one_of("PEM")
    )
    ssl_client_auth: str = config_key(
        "ssl.client.auth",
        "none",
        "Whether the SSL and SASL_SSL Kafka listeners ask Kafka clients for a certificate: none, requested, required.",
        one_of("none", "requested", "required"),
    )
    connection_failed_authentication_delay_ms: int = config_key(
        "connection.failed.authentication.delay.ms",
        100,
        "After answering a failed SASL authentication, a Kafka listener waits this long before closing the connection.",
        at_least(0),
    )
    sasl_server_max_receive_size: int = config_key(
        "sasl.server.max.receive.size",
        524288,
        "The largest frame a SASL listener reads from a client before it has authenticated.",
        at_least(1),
    )
    sasl_enabled_mechanisms: tuple[str, ...] = config_key(
        "sasl.enabled.mechanisms",
        ("SCRAM-SHA-256", "SCRAM-SHA-512"),
        "SASL mechanisms the SASL_PLAINTEXT and SASL_SSL Kafka listeners accept: PLAIN (users of sasl.plain.users), "
        "SCRAM-SHA-256 and SCRAM-SHA-512 (credentials in the cluster metadata, set by AlterUserScramCredentials).",
        subset_of(*SASL_MECHANISMS),
    )
    sasl_scram_final_nonce_match: str = config_key(
        "sasl.scram.final.nonce.match",
        "exact",
        "exact: a SCRAM client-final message must carry the server's nonce itself (RFC 5802, Kafka 4); suffix: it "
        "may only end with it, as Kafka 3.8.1 to 3.9 accepted, for librdkafka before 2.6.1 (kcat 1.7), which sends "
        "the client's nonce twice.",
        one_of("exact", "suffix"),
    )
    sasl_plain_users: tuple[str, ...] = config_key(
        "sasl.plain.users",
        (),
        'The users SASL/PLAIN accepts, NAME:PASSWORD,...: minikafka\'s stand-in for the user_NAME="PASSWORD" '
        "entries of Kafka's PlainLoginModule JAAS config (a password holds no comma).",
        _plain_users_ok,
    )
    connections_max_reauth_ms: int = config_key(
        "connections.max.reauth.ms",
        0,
        "How long a SASL session of a GRPC_SASL_SSL listener lasts before its client must authenticate again; 0: "
        "until the broker restarts. (Kafka's listeners use it for re-authentication, which minikafka's Kafka "
        "listener does not offer.)",
        at_least(0),
    )
    socket_request_max_bytes: int = config_key(
        "socket.request.max.bytes", 104857600, "Largest request frame a Kafka listener reads.", at_least(1)
    )
    connections_max_idle_ms: int = config_key(
        "connections.max.idle.ms",
        600000,
        "A Kafka client connection without a complete request (or an answer) for this long is closed, also one "
        "that is half-way through sending a frame.",
        at_least(1),
    )
    max_connections: int = config_key(
        "max.connections",
        2147483647,
        "The most Kafka client connections the broker holds at once, over all its Kafka listeners; at the limit it "
        "stops accepting until one closes. At most half of the process's open-file limit is used either way, so "
        "clients cannot take the files its logs need.",
        at_least(0),
    )
    max_connections_per_ip: int = config_key(
        "max.connections.per.ip",
        2147483647,
        "The most Kafka client connections from one IP address; a connection past it is closed at once.",
        at_least(0),
    )
    session_timeout_ms: int = config_key(
        "broker.session.timeout.ms",
        9000,
        "The controller fences a broker without a heartbeat for this long (the broker's controlled shutdown gives "
        "up after as long without an answer).",
        at_least(1),
    )
    broker_rack: str = config_key(
        "broker.rack",
        "",
        "The broker's rack, sent when it registers: Metadata and DescribeCluster show it, and the consumer groups' "
        "server-side assignors give members (client.rack) partitions with a replica in their rack. Empty: none.",
    )
    self_fencing_enable: bool = config_key(
        "broker.self.fencing.enable",
        False,
        "Stop leading partitions after broker.self.fencing.timeout.ms without a controller's answer. Off, as in "
        "KRaft: losing the controller quorum stops metadata changes, not Produce and Fetch.",
    )
    self_fencing_timeout_ms: int = config_key(
        "broker.self.fencing.timeout.ms",
        18000,
        "With broker.self.fencing.enable, how long without a controller's answer before the broker stops leading; "
        "longer than broker.session.timeout.ms, so the controller has fenced it and moved its leaderships first.",
        at_least(1),
    )
    heartbeat_interval_ms: int = config_key(
        "broker.heartbeat.interval.ms", 2000, "Interval between heartbeats to the active controller.", at_least(1)
    )
    initial_registration_timeout_ms: int = config_key(
        "initial.broker.registration.timeout.ms",
        60000,
        "A starting broker the controller quorum has not registered within this long shuts down (exit 1).",
        at_least(1),
    )
    replica_lag_time_max_ms: int = config_key(
        "replica.lag.time.max.ms",
        30000,
        "A follower that has not caught up to the leader's LEO for this long is removed from the ISR.",
        at_least(1),
    )
    replica_fetch_wait_max_ms: int = config_key(
        "replica.fetch.wait.max.ms", 500, "Long-poll wait of a follower's Fetch.", at_least(0)
    )
    replica_fetch_min_bytes: int = config_key(
        "replica.fetch.min.bytes", 1, "Bytes a follower's Fetch waits for.", at_least(1)
    )
    replica_fetch_max_bytes: int = config_key(
        "replica.fetch.max.bytes", 1048576, "Bytes per partition a follower fetches at most.", at_least(1)
    )
    replica_fetch_response_max_bytes: int = config_key(
        "replica.fetch.response.max.bytes",
        10485760,
        "Bytes a follower's whole Fetch response holds at most.",
        at_least(1),
    )
    replica_fetch_backoff_ms: int = config_key(
        "replica.fetch.backoff.ms", 1000, "Backoff after a failed follower Fetch.", at_least(0)
    )
    replication_quota_window_num: int = config_key(
        "replication.quota.window.num", 11, "Windows the replication throttles' rates are measured over.", at_least(1)
    )
    replication_quota_window_size_seconds: int = config_key(
        "replication.quota.window.size.seconds", 1, "The length of a replication throttle's window.", at_least(1)
    )
    num_replica_fetchers: int = config_key("num.replica.fetchers", 1, "Fetcher tasks per source broker.", at_least(1))
    max_incremental_fetch_session_cache_slots: int = config_key(
        "max.incremental.fetch.session.cache.slots",
        1000,
        "Incremental fetch sessions (KIP-227) the broker keeps for the brokers and clients fetching from it; 0: none.",
        at_least(0),
    )
    replica_high_watermark_checkpoint_interval_ms: int = config_key(
        "replica.high.watermark.checkpoint.interval.ms", 5000, "How often HWMs are checkpointed.", at_least(1)
    )
    auto_create_topics_enable: bool = config_key(
        "auto.create.topics.enable",
        True,
        "Create a topic a Kafka client's Metadata request names and allows to be created (with this broker's "
        "num.partitions and default.replication.factor, as Kafka's brokers ask the controller).",
    )
    num_partitions: int = config_key(
        "num.partitions", 1, "Partition count of the topics this broker auto-creates.", at_least(1)
    )
    default_replication_factor: int = config_key(
        "default.replication.factor", 1, "Replication factor of the topics this broker auto-creates.", at_least(1)
    )
    min_insync_replicas: int = config_key(
        "min.insync.replicas",
        1,
        "acks=all needs at least this many in-sync replicas (topic config overrides).",
        at_least(1),
    )
    message_max_bytes: int = config_key(
        "message.max.bytes", 1048588, "Largest record batch the broker accepts.", at_least(0)
    )
    compression_type: str = config_key(
        "compression.type",
        PRODUCER_COMPRESSION,
        "Codec a producer's batches are stored with: producer (as sent), uncompressed, gzip, snappy, lz4 or zstd "
        "(a batch of another codec is recompressed); a topic's compression.type overrides it.",
        one_of(*COMPRESSION_TYPES),
    )
    compression_gzip_level: int = config_key(
        GZIP_LEVEL.config,
        GZIP_LEVEL.default,
        "The level gzip compresses with when compression.type is gzip: 1 to 9, or -1 (zlib's default).",
        _level(GZIP_LEVEL),
    )
    compression_lz4_level: int = config_key(
        LZ4_LEVEL.config,
        LZ4_LEVEL.default,
        "The level lz4 compresses with when compression.type is lz4: 1 to 17.",
        _level(LZ4_LEVEL),
    )
    compression_zstd_level: int = config_key(
        ZSTD_LEVEL.config,
        ZSTD_LEVEL.default,
        "The level zstd compresses with when compression.type is zstd: -131072 to 22.",
        _level(ZSTD_LEVEL),
    )
    log_message_timestamp_type: str = config_key(
        "log.message.timestamp.type",
        "CreateTime",
        "Whose time a record keeps: CreateTime (its producer's) or LogAppendTime (the leader's, set on each batch "
        "it appends); a topic's message.timestamp.type overrides it.",
        one_of(*TIMESTAMP_TYPES),
    )
    log_message_timestamp_before_max_ms: int = config_key(
        "log.message.timestamp.before.max.ms",
        _LONG_MAX,
        "How far before the leader's clock a record's CreateTime timestamp may be (INVALID_TIMESTAMP beyond it).",
        at_least(0),
    )
    log_message_timestamp_after_max_ms: int = config_key(
        "log.message.timestamp.after.max.ms",
        3600000,
        "How far after the leader's clock a record's CreateTime timestamp may be (INVALID_TIMESTAMP beyond it).",
        at_least(0),
    )
    request_timeout_ms: int = config_key(
        "request.timeout.ms", 30000, "Timeout of the broker's requests to the controller.", at_least(1)
    )
    log_segment_bytes: int = config_key(
        "log.segment.bytes", 1073741824, "Segment size before a new segment is rolled.", at_least(14)
    )
    log_roll_ms: int | None = config_key(
        "log.roll.ms", None, "Age after which a new segment is rolled; empty: log.roll.hours.", _unset_or(at_least(1))
    )
    log_roll_hours: int = config_key(
        "log.roll.hours",
        168,
        "Age in hours after which a new segment is rolled, unless log.roll.ms is set.",
        at_least(1),
    )
    log_roll_jitter_ms: int | None = config_key(
        "log.roll.jitter.ms",
        None,
        "Up to how much earlier than its age limit each segment rolls (drawn per segment, so that partitions "
        "created together do not all roll at once); empty: log.roll.jitter.hours.",
        _unset_or(at_least(0)),
    )
    log_roll_jitter_hours: int = config_key(
        "log.roll.jitter.hours", 0, "log.roll.jitter.ms in hours, unless that is set.", at_least(0)
    )
    log_retention_bytes: int = config_key(
        "log.retention.bytes", -1, "Partition size above which old segments are deleted; -1: no limit."
    )
    log_retention_ms: int | None = config_key(
        "log.retention.ms",
        None,
        "Age after which old segments are deleted; -1: no limit; empty: log.retention.minutes, else "
        "log.retention.hours.",
    )
    log_retention_minutes: int | None = config_key(
        "log.retention.minutes", None, "log.retention.ms in minutes, unless that is set; empty: log.retention.hours."
    )
    log_retention_hours: int = config_key(
        "log.retention.hours", 168, "log.retention.ms in hours, unless it or log.retention.minutes is set."
    )
    log_segment_delete_delay_ms: int = config_key(
        "log.segment.delete.delay.ms",
        60000,
        "Kafka keeps a deleted segment's files this long for the reads still under way on them; here every read "
        "copies its bytes before the next step runs, so segments are deleted at once and the value changes nothing.",
        at_least(0),
    )
    log_local_retention_ms: int = config_key(
        "log.local.retention.ms",
        -2,
        "Tiered storage's local retention (-2: retention.ms); kept, and without effect: there is no remote storage.",
        at_least(-2),
    )
    log_local_retention_bytes: int = config_key(
        "log.local.retention.bytes",
        -2,
        "Tiered storage's local retention (-2: retention.bytes); kept, and without effect: there is no remote storage.",
        at_least(-2),
    )
    remote_log_storage_system_enable: bool = config_key(
        "remote.log.storage.system.enable",
        False,
        "Tiered storage: minikafka has no remote storage, so false only; a topic's remote.storage.enable=true is "
        "refused, as Kafka refuses it with this false.",
        lambda enabled: None if enabled is False else "must be false: there is no remote storage",
    )
    log_preallocate: bool = config_key(
        "log.preallocate",
        False,
        "Kafka creates a new segment's file at full size when set; here files grow as written, and the value "
        "changes nothing.",
    )
    log_index_size_max_bytes: int = config_key(
        "log.index.size.max.bytes",
        10485760,
        "The largest offset index of a segment (8 bytes an entry): a segment whose index is full rolls.",
        at_least(4),
    )
    log_retention_check_interval_ms: int = config_key(
        "log.retention.check.interval.ms",
        300000,
        "How often segments are checked for deletion by retention.",
        at_least(1),
    )
    log_cleanup_policy: tuple[str, ...] = config_key(
        "log.cleanup.policy",
        ("delete",),
        "What happens to old segments: delete (retention.ms / retention.bytes), compact (the latest record per key "
        "is kept), or both; a topic's cleanup.policy overrides it.",
        subset_of("compact", "delete"),
    )
    log_cleaner_enable: bool = config_key(
        "log.cleaner.enable", True, "Run the log cleaner, which compacts the logs of compacted topics."
    )
    log_cleaner_backoff_ms: int = config_key(
        "log.cleaner.backoff.ms", 15000, "How long the cleaner sleeps when no log is cleanable.", at_least(0)
    )
    log_cleaner_min_cleanable_ratio: float = config_key(
        "log.cleaner.min.cleanable.ratio",
        0.5,
        "Dirty bytes over all bytes of a log above which it is cleaned (min.cleanable.dirty.ratio).",
        between(0.0, 1.0),
    )
    log_cleaner_min_compaction_lag_ms: int = config_key(
        "log.cleaner.min.compaction.lag.ms", 0, "Records younger than this are not compacted.", at_least(0)
    )
    log_cleaner_max_compaction_lag_ms: int = config_key(
        "log.cleaner.max.compaction.lag.ms",
        _LONG_MAX,
        "A record older than this is compacted whatever the dirty ratio (and the active segment rolls by it).",
        at_least(1),
    )
    log_cleaner_delete_retention_ms: int = config_key(
        "log.cleaner.delete.retention.ms",
        86400000,
        "How long a tombstone is kept once it is the latest record of its key (delete.retention.ms).",
        at_least(0),
    )
    log_cleaner_dedupe_buffer_size: int = config_key(
        "log.cleaner.dedupe.buffer.size",
        33554432,
        "Memory for the cleaner's map of keys to their latest offsets (about 128 bytes a key here, 24 in Kafka, "
        "whose default is 128 MiB); a dirty section with more keys is cleaned in several passes.",
        at_least(1024),
    )
    log_index_interval_bytes: int = config_key(
        "log.index.interval.bytes", 4096, "Bytes between entries of the sparse offset index.", at_least(0)
    )
    log_flush_interval_messages: int = config_key(
        "log.flush.interval.messages", _LONG_MAX, "Records appended before the log is fsynced.", at_least(1)
    )
    log_flush_interval_ms: int | None = config_key(
        "log.flush.interval.ms", None, "Maximum time a record stays unflushed; empty: no time-based flush."
    )
    log_flush_offset_checkpoint_interval_ms: int = config_key(
        "log.flush.offset.checkpoint.interval.ms",
        60000,
        "How often the recovery point (the offset below which the log was fsynced) is checkpointed; a later crash "
        "rescans the log past the checkpointed point.",
        at_least(0),
    )
    log_flush_scheduler_interval_ms: int = config_key(
        "log.flush.scheduler.interval.ms", 1000, "How often the time-based flush policy is checked.", at_least(1)
    )
    log_simulate_page_cache: bool = config_key(
        "log.simulate.page.cache",
        False,
        "Keep unflushed bytes in process memory until flush, so SIGKILL loses them as a power cut would.",
    )
    log_max_open_files: int = config_key(
        "minikafka.log.max.open.files",
        1000,
        "Most segment files (.log and .index) the broker keeps open: each opens when first read or written and the "
        "least recently used close beyond this, so a broker's descriptors do not grow with its partitions (capped "
        "at a quarter of the process's open-file limit). Kafka has no such bound: it keeps every segment's files "
        "open.",
        at_least(1),
    )
    stray_partition_check_enable: bool = config_key(
        "minikafka.stray.partition.check.enable",
        True,
        "At start-up, once the metadata caught up, delete the partition logs whose topic id the metadata does not "
        "know or that it no longer assigns to this broker (stray partitions). Turn off only to demonstrate the "
        "stale logs it removes: off, each is logged (stray_partition_kept) and stays. Kafka has no switch for it.",
    )
    produce_idempotent_write_check_enable: bool = config_key(
        "minikafka.produce.idempotent.write.check.enable",
        True,
        "With an authorizer: a Produce whose batches carry a producer id needs IDEMPOTENT_WRITE on the cluster (Kafka "
        "before 3.0), so a principal that may write a topic cannot continue another's producer id there. false: "
        "Kafka 3.0 and later's rule (KIP-679), WRITE on the topic is enough. Kafka has no switch for it.",
    )
    offsets_topic_num_partitions: int = config_key(
        "offsets.topic.num.partitions",
        5,
        "Partitions of __consumer_offsets, created on the first FindCoordinator (Kafka's default is 50; a local "
        "cluster of Python brokers replicates 5 more cheaply).",
        at_least(1),
    )
    offsets_topic_replication_factor: int = config_key(
        "offsets.topic.replication.factor", 3, "Replication factor of __consumer_offsets.", at_least(1)
    )
    offsets_topic_segment_bytes: int = config_key(
        "offsets.topic.segment.bytes",
        104857600,
        "Segment size of __consumer_offsets (compacted: smaller segments are cleaned sooner).",
        at_least(1),
    )
    offsets_commit_timeout_ms: int = config_key(
        "offsets.commit.timeout.ms",
        5000,
        "An offset commit or group metadata write waits this long for every in-sync replica.",
        at_least(1),
    )
    offset_metadata_max_bytes: int = config_key(
        "offset.metadata.max.bytes", 4096, "Largest metadata string of an offset commit.", at_least(0)
    )
    offsets_retention_minutes: int = config_key(
        "offsets.retention.minutes",
        10080,
        "A group's committed offsets are kept this long once it is empty (from their commit for a group that only "
        "stores offsets, or for a stable consumer group's offsets of topics it no longer subscribes to); then they "
        "get tombstones, and an empty group left with no offsets goes.",
        at_least(1),
    )
    offsets_retention_check_interval_ms: int = config_key(
        "offsets.retention.check.interval.ms", 600000, "How often the group coordinator expires offsets.", at_least(1)
    )
    group_min_session_timeout_ms: int = config_key(
        "group.min.session.timeout.ms", 6000, "Smallest session timeout a group member may ask for.", at_least(1)
    )
    group_max_session_timeout_ms: int = config_key(
        "group.max.session.timeout.ms", 1800000, "Largest session timeout a group member may ask for.", at_least(1)
    )
    group_initial_rebalance_delay_ms: int = config_key(
        "group.initial.rebalance.delay.ms",
        3000,
        "An empty group's first rebalance waits this long for more members (extended while they keep coming).",
        at_least(0),
    )
    group_max_size: int = config_key("group.max.size", 2147483647, "Most members of one group.", at_least(1))
    group_coordinator_rebalance_protocols: tuple[str, ...] = config_key(
        "group.coordinator.rebalance.protocols",
        ("classic", "consumer"),
        "Group protocols the coordinator serves: classic (JoinGroup/SyncGroup) and consumer (KIP-848's "
        "ConsumerGroupHeartbeat, advertised in ApiVersions only when listed). Kafka 4.0's default.",
        subset_of("classic", "consumer"),
    )
    group_consumer_session_timeout_ms: int = config_key(
        "group.consumer.session.timeout.ms",
        45000,
        "A consumer-protocol member silent this long is fenced and its partitions reassigned.",
        at_least(1),
    )
    group_consumer_heartbeat_interval_ms: int = config_key(
        "group.consumer.heartbeat.interval.ms",
        5000,
        "How often a consumer-protocol member is told to heartbeat.",
        at_least(1),
    )
    group_consumer_max_size: int = config_key(
        "group.consumer.max.size",
        2147483647,
        "Most members of one consumer-protocol group (GROUP_MAX_SIZE_REACHED past it).",
        at_least(1),
    )
    group_consumer_migration_policy: str = config_key(
        "group.consumer.migration.policy",
        "bidirectional",
        "Online conversion between classic and consumer groups: a classic group becomes a consumer group when a "
        "consumer-protocol member joins it (upgrade), and back when its last consumer-protocol member leaves "
        "(downgrade).",
        one_of("bidirectional", "upgrade", "downgrade", "disabled"),
    )
    transaction_state_log_num_partitions: int = config_key(
        "transaction.state.log.num.partitions",
        5,
        "Partitions of __transaction_state, created on the first FindCoordinator for a transactional id (Kafka's "
        "default is 50; a local cluster of Python brokers replicates 5 more cheaply).",
        at_least(1),
    )
    transaction_state_log_replication_factor: int = config_key(
        "transaction.state.log.replication.factor", 3, "Replication factor of __transaction_state.", at_least(1)
    )
    transaction_state_log_min_isr: int = config_key(
        "transaction.state.log.min.isr",
        2,
        "min.insync.replicas of __transaction_state: a transaction's state is written with acks=all.",
        at_least(1),
    )
    transaction_state_log_segment_bytes: int = config_key(
        "transaction.state.log.segment.bytes",
        104857600,
        "Segment size of __transaction_state (compacted: smaller segments are cleaned sooner).",
        at_least(1),
    )
    transaction_max_timeout_ms: int = config_key(
        "transaction.max.timeout.ms",
        900000,
        "Largest transaction timeout a producer may ask for (INVALID_TRANSACTION_TIMEOUT past it).",
        at_least(1),
    )
    producer_id_expiration_ms: int = config_key(
        "producer.id.expiration.ms",
        86400000,
        "A partition forgets an idempotent producer that wrote nothing to it for this long and has no transaction "
        "open (its next batch then counts as a new producer's). Dynamic: a per-broker or cluster-wide value set "
        "with kafka-configs --entity-type brokers takes effect at the next check.",
        at_least(1),
    )
    producer_id_expiration_check_interval_ms: int = config_key(
        "producer.id.expiration.check.interval.ms",
        600000,
        "How often every partition drops its expired producer ids (producer.id.expiration.ms).",
        at_least(1),
    )
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = config_key(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        10000,
        "How often the coordinator aborts the transactions open longer than their timeout.",
        at_least(1),
    )
    transactional_id_expiration_ms: int = config_key(
        "transactional.id.expiration.ms",
        604800000,
        "A transactional id with no transaction under way and no request that changed its state for this long is "
        "expired: a tombstone in __transaction_state (acks=all), then it is forgotten (its next InitProducerId gets "
        "a new producer id).",
        at_least(1),
    )
    transaction_remove_expired_transaction_cleanup_interval_ms: int = config_key(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        3600000,
        "How often the coordinator expires transactional ids (transactional.id.expiration.ms).",
        at_least(1),
    )
    transaction_partition_verification_enable: bool = config_key(
        "transaction.partition.verification.enable",
        True,
        "KIP-890 part 1: before appending a producer's first transactional batch to a partition, the leader asks "
        "the transaction coordinator whether the partition is in the producer's ongoing transaction, and refuses "
        "the batch (INVALID_TXN_STATE) if it is not. Off, a late write can open a transaction that never ends.",
    )
    add_partitions_to_txn_retry_backoff_ms: int = config_key(
        "add.partitions.to.txn.retry.backoff.ms",
        20,
        "KIP-890 part 2: the wait before a partition leader asks the transaction coordinator again to add a "
        "partition to a producer's transaction (a transactional Produce v12) that it refused CONCURRENT_TRANSACTIONS "
        "while the producer's last transaction's markers are written.",
        at_least(1),
    )
    add_partitions_to_txn_retry_backoff_max_ms: int = config_key(
        "add.partitions.to.txn.retry.backoff.max.ms",
        100,
        "How long a partition leader keeps asking again to add a partition to a transaction (Produce v12) on "
        "CONCURRENT_TRANSACTIONS before it answers the producer NOT_ENOUGH_REPLICAS, retriable; at most "
        "request.timeout.ms. Verification (part 1) is not retried.",
        at_least(0),
    )
    group_consumer_assignors: tuple[str, ...] = config_key(
        "group.consumer.assignors",
        ("uniform", "range"),
        "Server-side assignors of consumer-protocol groups, by name or Kafka's class name; the first is used unless "
        "most members ask for another (UNSUPPORTED_ASSIGNOR for one not listed). Kafka 4.0's default.",
        subset_of("uniform", "range", *ASSIGNOR_CLASSES),
    )

    role = "broker"

    @property
    def consumer_assignors(self) -> tuple[str, ...]:
        """group.consumer.assignors by name, Kafka's class names read as their names."""
        return tuple(dict.fromkeys(ASSIGNOR_CLASSES.get(name, name) for name in self.group_consumer_assignors))

    def validate(self) -> None:
        super().validate()
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                f"invalid value {self.heartbeat_interval_ms} for 'broker.heartbeat.interval.ms': must be less than "
                f"broker.session.timeout.ms ({self.session_timeout_ms})",
                "broker.heartbeat.interval.ms",
            )
        if self.self_fencing_enable and self.self_fencing_timeout_ms <= self.session_timeout_ms:
            raise ConfigError(
                f"invalid value {self.self_fencing_timeout_ms} for 'broker.self.fencing.timeout.ms': must be greater "
                f"than broker.session.timeout.ms ({self.session_timeout_ms})",
                "broker.self.fencing.timeout.ms",
            )
        if not self.group_consumer_assignors:
            raise ConfigError(
                "invalid value for 'group.consumer.assignors': at least one assignor is needed",
                "group.consumer.assignors",
            )
        if "classic" not in self.group_coordinator_rebalance_protocols:
            raise ConfigError(
                "invalid value for 'group.coordinator.rebalance.protocols': disabling classic is not supported",
                "group.coordinator.rebalance.protocols",
            )
        if self.replica_fetch_wait_max_ms > self.replica_lag_time_max_ms:
            raise ConfigError(
                f"invalid value {self.replica_fetch_wait_max_ms} for 'replica.fetch.wait.max.ms': must be at most "
                f"replica.lag.time.max.ms ({self.replica_lag_time_max_ms})",
                "replica.fetch.wait.max.ms",
            )
        protocols = parse_protocol_map(self.listener_security_protocol_map)
        unmapped = [listener.name for listener in self.bound_listeners if listener.name not in protocols]
        if unmapped:
            raise ConfigError(
                f"invalid value '{self.listeners}' for 'listeners': listener {unmapped[0]} is not in "
                f"listener.security.protocol.map ({self.listener_security_protocol_map})",
                "listeners",
            )
        self._validate_listener_security(protocols)
        secured = [listener.name for listener in self.grpc_listeners if self.is_ssl_client_listener(listener.name)]
        if secured:
            self.require_tls_keys(f"a {protocols[secured[0]]} listener")
        names = [listener.name for listener in self.grpc_listeners]
        if self.inter_broker_listener_name and self.inter_broker_listener_name not in names:
            raise ConfigError(
                f"invalid value '{self.inter_broker_listener_name}' for 'inter.broker.listener.name': not one of "
                f"the GRPC listeners ({', '.join(names)})",
                "inter.broker.listener.name",
            )
        if self.node_id in self.voters:
            raise ConfigError(
                f"invalid value {self.node_id} for 'node.id': it is a controller in controller.quorum.voters", "node.id"
            )

    def _validate_listener_security(self, protocols: Mapping[str, str]) -> None:
        used = {protocols[listener.name] for listener in self.bound_listeners if listener.name in protocols}
        tls = sorted(used & set(TLS_PROTOCOLS))
        if tls and not self.ssl_keystore_location and not self.node_tls:
            raise ConfigError(
                f"missing value for 'ssl.keystore.location': listeners use {', '.join(tls)} and the node has no "
                "certificate (minikafka.node.ssl.certificate.location) to default to",
                "ssl.keystore.location",
            )
        if tls and self.ssl_client_auth != "none" and not self.ssl_truststore_location:
            raise ConfigError(
                f"missing value for 'ssl.truststore.location': ssl.client.auth is {self.ssl_client_auth}",
                "ssl.truststore.location",
            )
        if self.inter_broker_listener and protocols.get(self.inter_broker_listener) == GRPC_SASL_SSL_PROTOCOL:
            raise ConfigError(
                f"invalid value '{self.listener_security_protocol_map}' for 'listener.security.protocol.map': the "
                f"inter-broker listener {self.inter_broker_listener} cannot be {GRPC_SASL_SSL_PROTOCOL} (nodes "
                "authenticate with certificates: security.inter.broker.protocol)",
                "listener.security.protocol.map",
            )
        if used & {"SASL_PLAINTEXT", "SASL_SSL", GRPC_SASL_SSL_PROTOCOL} and not self.sasl_enabled_mechanisms:
            raise ConfigError(
                "invalid value '' for 'sasl.enabled.mechanisms': SASL listeners need at least one mechanism",
                "sasl.enabled.mechanisms",
            )

    def _with_protocol(self, *wanted: str) -> tuple[Listener, ...]:
        protocols = parse_protocol_map(self.listener_security_protocol_map)
        return tuple(listener for listener in self.bound_listeners if protocols.get(listener.name) in wanted)

    def listener_protocol(self, name: str) -> str:
        """The security protocol of the listener `name` (Kafka's listener.security.protocol.map)."""
        return parse_protocol_map(self.listener_security_protocol_map)[name]

    @functools.cached_property
    def plain_users(self) -> Mapping[str, str]:
        return dict(user.split(":", 1) for user in self.sasl_plain_users)

    @functools.cached_property
    def grpc_listeners(self) -> tuple[Listener, ...]:
        return self._with_protocol(*GRPC_PROTOCOLS)

    def is_ssl_client_listener(self, name: str) -> bool:
        """A GRPC_SSL or GRPC_SASL_SSL listener other than the inter-broker one (which
        security.inter.broker.protocol governs)."""
        protocol = parse_protocol_map(self.listener_security_protocol_map).get(name)
        return protocol in (GRPC_SSL_PROTOCOL, GRPC_SASL_SSL_PROTOCOL) and name != self.inter_broker_listener

    def is_sasl_client_listener(self, name: str) -> bool:
        return parse_protocol_map(self.listener_security_protocol_map).get(name) == GRPC_SASL_SSL_PROTOCOL

    @functools.cached_property
    def kafka_listeners(self) -> tuple[Listener, ...]:
        return self._with_protocol(*KAFKA_PROTOCOLS)

    @functools.cached_property  # asked on every follower fetch
    def inter_broker_listener(self) -> str:
        grpc = self.grpc_listeners
        return self.inter_broker_listener_name or (grpc[0] if grpc else self.bound_listeners[0]).name

    @property
    def roll_ms(self) -> int:
        """log.roll.ms, else log.roll.hours (Kafka's precedence)."""
        return _first_set_ms(self.log_roll_ms, None, self.log_roll_hours)

    @property
    def roll_jitter_ms(self) -> int:
        return _first_set_ms(self.log_roll_jitter_ms, None, self.log_roll_jitter_hours)

    @property
    def retention_ms(self) -> int:
        """log.retention.ms, else log.retention.minutes, else log.retention.hours; any negative value is -1 (no
        limit), as Kafka's logRetentionTimeMillis."""
        return max(-1, _first_set_ms(self.log_retention_ms, self.log_retention_minutes, self.log_retention_hours))

    def log_config(self, topic_configs: Mapping[str, str] | None = None) -> LogConfig:
        """The storage settings of a partition: broker defaults, overridden by the topic's configs (Kafka's
        topic-level names: segment.bytes, segment.ms, retention.bytes, retention.ms, flush.messages, flush.ms)."""
        overrides = topic_configs or {}

        def pick(topic_key: str, default: Any) -> Any:
            value = overrides.get(topic_key)
            return int(value) if value not in (None, "") else default

        return LogConfig(
            segment_bytes=pick("segment.bytes", self.log_segment_bytes),
            segment_ms=pick("segment.ms", self.roll_ms),
            segment_jitter_ms=pick("segment.jitter.ms", self.roll_jitter_ms),
            retention_bytes=pick("retention.bytes", self.log_retention_bytes),
            retention_ms=pick("retention.ms", self.retention_ms),
            index_interval_bytes=pick("index.interval.bytes", self.log_index_interval_bytes),
            segment_index_bytes=pick("segment.index.bytes", self.log_index_size_max_bytes),
            flush_interval_messages=pick("flush.messages", self.log_flush_interval_messages),
            flush_interval_ms=pick("flush.ms", self.log_flush_interval_ms),
            recovery_point_checkpoint_interval_ms=self.log_flush_offset_checkpoint_interval_ms,
            simulate_page_cache=self.log_simulate_page_cache,
            max_message_bytes=pick("max.message.bytes", self.message_max_bytes),
            cleanup_policy=_policy(overrides.get("cleanup.policy"), self.log_cleanup_policy),
            min_cleanable_ratio=float(
                overrides.get("min.cleanable.dirty.ratio") or self.log_cleaner_min_cleanable_ratio
            ),
            min_compaction_lag_ms=pick("min.compaction.lag.ms", self.log_cleaner_min_compaction_lag_ms),
            max_compaction_lag_ms=pick("max.compaction.lag.ms", self.log_cleaner_max_compaction_lag_ms),
            delete_retention_ms=pick("delete.retention.ms", self.log_cleaner_delete_retention_ms),
            compression_type=overrides.get("compression.type") or self.compression_type,
            compression_gzip_level=pick(GZIP_LEVEL.config, self.compression_gzip_level),
            compression_lz4_level=pick(LZ4_LEVEL.config, self.compression_lz4_level),
            compression_zstd_level=pick(ZSTD_LEVEL.config, self.compression_zstd_level),
            message_timestamp_type=overrides.get("message.timestamp.type") or self.log_message_timestamp_type,
            message_timestamp_before_max_ms=pick(
                "message.timestamp.before.max.ms", self.log_message_timestamp_before_max_ms
            ),
            message_timestamp_after_max_ms=pick(
                "message.timestamp.after.max.ms", self.log_message_timestamp_after_max_ms
            ),
        )


def _first_set_ms(millis: int | None, minutes: int | None, hours: int) -> int:
    """Kafka's precedence among a duration's keys in milliseconds, minutes and hours: the first one set."""
    if millis is not None:
        return millis
    return minutes * 60_000 if minutes is not None else hours * _HOUR_MS


def _policy(value: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """A cleanup.policy list value (validated where it was set)."""
    if not value:
        return default
    return tuple(item.strip() for item in value.split(",") if item.strip())

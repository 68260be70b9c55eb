"""The broker process: metadata observer, lifecycle, partition logs, replicas and fetchers behind gRPC servers
(one per listener)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import resource
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from minikafka.broker.clean_shutdown import NO_PREVIOUS_BROKER_EPOCH, record_clean_shutdown, take_previous_broker_epoch
from minikafka.broker.client_authorizer import ClientAuthorizer
from minikafka.broker.config import BrokerConfig
from minikafka.broker.fetch_session import MAX_SESSION_ID, FetchSessionCache
from minikafka.broker.group.coordinator import GroupCoordinator, coordinator_config
from minikafka.broker.grpc_sasl.authenticator import GrpcSaslAuthenticator, GrpcSaslSettings
from minikafka.broker.grpc_sasl.interceptor import SaslSessionInterceptor
from minikafka.broker.kafka_wire import apis, group_apis
from minikafka.broker.kafka_wire.connection_quotas import ConnectionQuotas, effective_max_connections
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.listener import KafkaListener, ListenerConnections, ListenerLimits
from minikafka.broker.kafka_wire.listener_security import listener_security
from minikafka.broker.lifecycle_manager import LifecycleManager
from minikafka.broker.log_cleaner import LogCleaner
from minikafka.broker.log_manager import LogManager, effective_max_open_files
from minikafka.broker.metadata_listener import MetadataDelta, MetadataListener
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.replication_throttles import ReplicationThrottles
from minikafka.broker.service import MARKER_TIMEOUT_MS, BrokerService, FaultService
from minikafka.broker.startup_gate import StartupGateInterceptor
from minikafka.broker.transaction.coordinator import TransactionCoordinator, txn_coordinator_config
from minikafka.broker.transaction.markers import MarkerChannel
from minikafka.broker.transaction.verification import ProduceVerifier
from minikafka.common.cli_support import stop_requested
from minikafka.common.clock import monotonic_ms, new_random, wall_ms
from minikafka.common.errors import ErrorCode, KafkaError, ListenerBindError
from minikafka.common.grpc_support import MAX_MESSAGE_BYTES, BoundServer, start_server
from minikafka.common.listener_security import client_security, inter_node_security
from minikafka.common.node_environment import expose
from minikafka.common.topic_config import PRODUCER_ID_EXPIRATION_MS
from minikafka.kraft_controller.raft.core import RaftConfig
from minikafka.kraft_controller.raft.driver import RaftDriver
from minikafka.storage.log_dir_failure_channel import LogDirFailureChannel

METADATA_CATCH_UP_TIMEOUT_S = 15.0


class StrayPartitionCheck:
    """Deletes the logs the metadata does not assign to this broker, once, and only against caught-up metadata."""

    def __init__(self, logs: LogManager, metadata: MetadataListener, node_id: int, delete: bool = True) -> None:
        """`delete` False (minikafka.stray.partition.check.enable=false): the strays are only reported."""
        self.logs = logs
        self.metadata = metadata
        self.node_id = node_id
        self.delete = delete
        self.done = False

    def run(self) -> bool:
        """Check now if the metadata is caught up; True once the check has run."""
        if not self.done and self.metadata.caught_up:
            self.done = True
            self.logs.delete_stray_partitions(self.metadata.image, self.node_id, self.delete)
        return self.done


async def _periodically(interval_s: float, action: Callable[[], object]) -> None:
    while True:
        await asyncio.sleep(interval_s)
        done = action()
        if inspect.isawaitable(done):  # work done off the loop: the next round starts after this one ended
            await done


async def _stop_when_no_log_dir(
    failed: asyncio.Event, failures: LogDirFailureChannel, lifecycle: LifecycleManager, stopping: asyncio.Event
) -> None:
    """Kafka's handleLogDirFailure with no online log dir left: the broker goes. It tells the controller first (a
    heartbeat carrying the offline dirs), so its leaderships move now rather than after a session timeout."""
    await failed.wait()
    offline = tuple(str(d) for d in failures.offline_dirs)
    structlog.get_logger().error(
        "broker_shutting_down", node_id=lifecycle.config.node_id, reason="no online log dir", offline_log_dirs=offline
    )
    try:
        await lifecycle.report_offline_log_dirs(offline, timeout_s=lifecycle.config.session_timeout_ms / 1000)
    finally:  # whatever the report did, a broker without a log dir never stays up
        stopping.set()


def grpc_sasl_authenticator(
    config: BrokerConfig, listener_name: str, metadata: MetadataListener
) -> GrpcSaslAuthenticator | None:
    """A GRPC_SASL_SSL client listener's SASL exchange and sessions (None for any other listener)."""
    if listener_name == config.inter_broker_listener or not config.is_sasl_client_listener(listener_name):
        return None
    settings = GrpcSaslSettings(
        listener_name,
        config.sasl_enabled_mechanisms,
        config.plain_users,
        config.sasl_scram_final_nonce_match == "suffix",
        config.connections_max_reauth_ms,
        config.connection_failed_authentication_delay_ms,
        config.sasl_server_max_receive_size,
    )
    # SCRAM credentials come from this broker's image, as its Kafka listeners read them.
    return GrpcSaslAuthenticator(settings, lambda user, mechanism: metadata.image.scram_credential(user, mechanism))


@dataclass
class Broker:
    """A broker's parts, built in order; they start and stop in the order `run_broker_process` gives."""

    config: BrokerConfig
    previous_broker_epoch: int
    metadata: MetadataListener
    stopping: asyncio.Event
    raft: RaftDriver
    dir_failed: asyncio.Event
    failures: LogDirFailureChannel
    logs: LogManager
    lifecycle: LifecycleManager
    manager: ReplicaManager
    groups: GroupCoordinator
    transactions: TransactionCoordinator
    verifier: ProduceVerifier
    fetch_sessions: FetchSessionCache  # one cache for the gRPC and the Kafka listeners' fetch sessions
    servers: list[BoundServer] = field(default_factory=list)  # the gRPC servers, one per listener
    kafka_listeners: list[KafkaListener] = field(default_factory=list)


def metadata_raft(config: BrokerConfig, voters: dict[int, str], stopping: asyncio.Event) -> RaftDriver:
    """The broker's replica of the metadata log. Its write error ends the broker as Kafka's fault handler does,
    after a stop without the controlled shutdown (its metadata could no longer follow the controller's answer)."""
    return RaftDriver(
        config.node_id,
        voters,
        config.data_dir,
        RaftConfig(),
        config.cluster_id,
        on_fatal=lambda _e: stopping.set(),
        tls=config.inter_node_tls,
        bootstrap_servers=config.bootstrap_servers,
    )


def build_broker(config: BrokerConfig) -> Broker:
    """Every part of the broker, nothing started yet."""
    previous_broker_epoch = take_previous_broker_epoch(config.data_dir)
    voters = {node_id: f"{host}:{port}" for node_id, (host, port) in config.voters.items()}
    metadata = MetadataListener()
    stopping = stop_requested()
    raft = metadata_raft(config, voters, stopping)
    raft.add_listener(metadata)
    loop = asyncio.get_running_loop()
    dir_failed = asyncio.Event()

    # Told from whichever thread saw the I/O error (checkpoints and rolled-segment fsyncs run in worker threads).
    def offline(_dir: object, _reason: str) -> None:
        loop.call_soon_threadsafe(dir_failed.set)

    failures = LogDirFailureChannel(offline)
    logs = LogManager(
        config.data_dir,
        lambda topic: config.log_config(metadata.image.topic_overrides(topic, config.node_id)),
        flush_in_background=True,
        failures=failures,
        max_open_files=segment_files_bound(config),
    )
    # A lifecycle that stops heartbeating (Exit) ends the process, as SIGTERM does.
    lifecycle = LifecycleManager(
        config, lambda: metadata.offset, on_exit=stopping.set, previous_broker_epoch=previous_broker_epoch
    )
    lifecycle.controller.follow(raft.controller_addresses)
    # Clients are answered only from metadata the controller acknowledged caught up since this start (a wiped
    # broker's image has no topics or ACLs before): the authorizer and Metadata wait for it (listeners: the unfence).
    caught_up = lifecycle.caught_up.is_set
    authorizer = ClientAuthorizer(config.authorizer_settings, lambda: metadata.image.acls, caught_up)
    manager = ReplicaManager(
        config,
        logs,
        metadata,
        lifecycle.controller,
        lambda: lifecycle.broker_epoch,
        lambda: lifecycle.serving,
        authorizer,
        caught_up,
        ReplicationThrottles.from_config(config),
    )
    logs.log_start_moved = manager.log_start_moved
    # Heartbeats report the metadata the replicas reflect, which lags the listener's while a delta is applied.
    lifecycle.metadata_offset = lambda: manager.applied_metadata_offset
    groups = GroupCoordinator(manager, lifecycle.controller, coordinator_config(config))
    markers = MarkerChannel(manager, groups.on_txn_marker, MARKER_TIMEOUT_MS)
    transactions = TransactionCoordinator(
        manager, lifecycle.controller, txn_coordinator_config(config), markers, manager.producer_ids.generate
    )
    manager.transaction_verification = config.transaction_partition_verification_enable
    verifier = ProduceVerifier(manager, transactions)
    # Session ids need only be hard to reuse by accident across restarts, as Kafka's random ones.
    fetch_sessions = FetchSessionCache(
        config.max_incremental_fetch_session_cache_slots, functools.partial(new_random().randint, 1, MAX_SESSION_ID)
    )
    return Broker(
        config,
        previous_broker_epoch,
        metadata,
        stopping,
        raft,
        dir_failed,
        failures,
        logs,
        lifecycle,
        manager,
        groups,
        transactions,
        verifier,
        fetch_sessions,
    )


async def start_grpc_servers(broker: Broker) -> None:
    """One gRPC server per gRPC listener: the inter-broker one mutual TLS, client ones as their protocol says."""
    config = broker.config
    # Recorded as each starts, so a later one's failure can stop the earlier ones.
    for listener in config.grpc_listeners:
        sasl = grpc_sasl_authenticator(config, listener.name, broker.metadata)
        client_listener = listener.name != config.inter_broker_listener
        service = BrokerService(
            broker.manager,
            listener.name,
            broker.fetch_sessions,
            sasl,
            broker.groups.on_txn_marker,
            broker.transactions,
            client_listener,
        )
        served = (
            inter_node_security(config, listener.name)
            if listener.name == config.inter_broker_listener
            else client_security(config, listener.name, config.is_ssl_client_listener(listener.name))
        )
        # No listener serves before the broker was first unfenced; then the session check: an unauthenticated caller
        # learns nothing else (as on a Kafka SASL listener).
        gate = StartupGateInterceptor(broker.lifecycle.initially_unfenced.is_set)
        interceptors = (gate, *(() if sasl is None else (SaslSessionInterceptor(sasl),)), *served.interceptors)
        registrars = [service.register, FaultService(broker.manager, broker.lifecycle).register]
        # A client listener reads no request larger than socket.request.max.bytes, as Kafka's listeners.
        inter_broker = listener.name == config.inter_broker_listener
        largest = MAX_MESSAGE_BYTES if inter_broker else config.socket_request_max_bytes
        broker.servers.append(
            await start_server(listener.host, listener.port, registrars, served.security, interceptors, largest)
        )


def segment_files_bound(config: BrokerConfig) -> int:
    """minikafka.log.max.open.files, capped to a share of the process's open-file limit."""
    open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    bound = effective_max_open_files(config.log_max_open_files, open_files)  # RLIM_INFINITY is -1: no cap
    if bound != config.log_max_open_files:
        structlog.get_logger().info(
            "log_max_open_files_capped", configured=config.log_max_open_files, effective=bound, open_files=open_files
        )
    return bound


def kafka_connection_quotas(config: BrokerConfig) -> ConnectionQuotas:
    """max.connections and max.connections.per.ip, shared by every Kafka listener of the broker."""
    open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    limit = effective_max_connections(config.max_connections, open_files)  # RLIM_INFINITY is -1: no cap
    if limit != config.max_connections:
        structlog.get_logger().info(
            "kafka_max_connections_capped", configured=config.max_connections, effective=limit, open_files=open_files
        )
    return ConnectionQuotas(limit, config.max_connections_per_ip)


async def start_kafka_listeners(broker: Broker) -> None:
    config = broker.config
    limits = ListenerLimits(
        config.socket_request_max_bytes,
        config.connections_max_idle_ms,
        config.connection_failed_authentication_delay_ms,
        config.sasl_server_max_receive_size,
    )
    connections = ListenerConnections(kafka_connection_quotas(config))
    kafka_listeners = [
        KafkaListener(
            WireContext(
                broker.manager,
                listener.name,
                broker.groups,
                fetch_sessions=broker.fetch_sessions,
                hidden_apis=group_apis.hidden_apis(config.group_coordinator_rebalance_protocols),
                transactions=broker.transactions,
                verifier=broker.verifier,
                authorizer=broker.manager.authorizer,
            ),
            apis.dispatch,
            listener.host,
            listener.port,
            limits,
            listener_security(config, listener.name),
            connections,
            accepting=broker.lifecycle.initially_unfenced,  # bound now, accepting once first unfenced
        )
        for listener in config.kafka_listeners
    ]
    for kafka_listener in kafka_listeners:
        await kafka_listener.start()
        broker.kafka_listeners.append(kafka_listener)


async def check_stray_partitions(broker: Broker) -> None:
    """Stray partitions are judged only against caught-up metadata: a partial image lacks topics created later, and
    their logs would look stray. Past the wait, the check runs on the first update that is caught up."""
    metadata = broker.metadata
    deadline = monotonic_ms() + METADATA_CATCH_UP_TIMEOUT_S * 1000
    while monotonic_ms() < deadline and not metadata.caught_up:
        await asyncio.sleep(0.05)
    config = broker.config
    stray_check = StrayPartitionCheck(broker.logs, metadata, config.node_id, config.stray_partition_check_enable)
    if not stray_check.run():
        structlog.get_logger().warning(
            "stray_partition_check_deferred",
            reason="metadata not caught up",
            metadata_offset=metadata.offset,
            high_watermark=metadata.high_watermark,
        )
        metadata.subscribe(lambda _delta: stray_check.run())


def follow_metadata(broker: Broker) -> None:
    """The replica manager acts on every metadata update from now on, starting with the whole image it has."""
    metadata, manager = broker.metadata, broker.manager
    metadata.subscribe(manager.on_metadata)
    manager.on_metadata(
        MetadataDelta(
            metadata.image,
            tuple((topic.topic_id, index) for topic, index, _ in metadata.image.partitions()),
            metadata.offset,
        )
    )


def start_background_tasks(broker: Broker) -> list[asyncio.Task[None]]:
    """ISR shrinking, flushes, retention, the log cleaner and HWM checkpoints on their intervals, and the watch on the
    log dir."""
    config, logs = broker.config, broker.logs
    flush_interval = config.log_flush_scheduler_interval_ms / 1000
    cleaner = LogCleaner(logs, config.log_cleaner_backoff_ms, config.log_cleaner_dedupe_buffer_size)
    return [
        *([asyncio.create_task(cleaner.run())] if config.log_cleaner_enable else []),
        asyncio.create_task(
            _stop_when_no_log_dir(broker.dir_failed, broker.failures, broker.lifecycle, broker.stopping)
        ),
        asyncio.create_task(
            _periodically(max(0.05, config.replica_lag_time_max_ms / 2000), broker.manager.shrink_lagging_isrs)
        ),
        asyncio.create_task(_periodically(flush_interval, lambda: logs.flush_all(monotonic_ms()))),
        asyncio.create_task(
            _periodically(config.log_retention_check_interval_ms / 1000, lambda: logs.cleanup_logs(wall_ms()))
        ),
        asyncio.create_task(
            _periodically(config.replica_high_watermark_checkpoint_interval_ms / 1000, logs.checkpoint_high_watermarks)
        ),
        asyncio.create_task(
            _periodically(
                config.producer_id_expiration_check_interval_ms / 1000,
                lambda: logs.remove_expired_producers(wall_ms(), producer_id_expiration_ms(broker)),
            )
        ),
    ]


def producer_id_expiration_ms(broker: Broker) -> int:
    """producer.id.expiration.ms as the metadata sets it now (this broker's, else the cluster's), else static."""
    dynamic = broker.manager.metadata.image.dynamic_broker_config(PRODUCER_ID_EXPIRATION_MS, broker.config.node_id)
    return int(dynamic) if dynamic is not None else broker.config.producer_id_expiration_ms


async def stop_broker(broker: Broker, tasks: list[asyncio.Task[None]]) -> None:
    """A controlled shutdown when the broker can still speak for its logs, then every part in reverse order; a clean
    stop is recorded for the next start's registration."""
    config, failures, raft, lifecycle = broker.config, broker.failures, broker.raft, broker.lifecycle
    structlog.get_logger().info("broker_stopping", node_id=config.node_id)
    if not failures.offline_dirs and raft.failure is None:  # else the controller fences us (or will, unheard)
        await lifecycle.controlled_shutdown()
    for task in tasks:
        task.cancel()
    for kafka_listener in broker.kafka_listeners:
        await kafka_listener.stop()
    await broker.groups.stop()
    await broker.transactions.stop()
    await broker.verifier.close()
    await broker.manager.stop()
    await lifecycle.stop()
    with contextlib.suppress(Exception):
        await raft.stop(resign=False)
    for server in broker.servers:
        await server.server.stop(grace=0.5)
    broker.logs.close_all(monotonic_ms())
    stopped_cleanly = not failures.offline_dirs and raft.failure is None
    clean_epoch = lifecycle.last_broker_epoch if stopped_cleanly else NO_PREVIOUS_BROKER_EPOCH
    if clean_epoch >= 0:
        record_clean_shutdown(config.data_dir, clean_epoch)
    structlog.get_logger().info("broker_stopped", node_id=config.node_id, clean_shutdown_broker_epoch=clean_epoch)


async def start_listeners(broker: Broker) -> None:
    """Every listener, or none: a port that cannot be bound stops those already listening (a grpc.aio server left
    running would fire into a closed event loop at exit) and ends the start with one line naming the address."""
    try:
        await start_grpc_servers(broker)
        await start_kafka_listeners(broker)
    except ListenerBindError as error:
        structlog.get_logger().error("listener_bind_failed", address=error.address, reason=str(error))
        for kafka_listener in broker.kafka_listeners:
            await kafka_listener.stop()
        for server in broker.servers:
            await server.server.stop(grace=None)
        raise


async def run_broker_process(config: BrokerConfig) -> None:
    config.check_tls_files()
    config.data_dir.mkdir(parents=True, exist_ok=True)
    broker = build_broker(config)
    expose(broker=broker)
    await start_listeners(broker)
    broker.raft.start()
    structlog.get_logger().info(
        "broker_starting",
        node_id=config.node_id,
        addresses=[s.address for s in broker.servers],
        kafka_addresses=[listener.address for listener in broker.kafka_listeners],
        metadata_log_end_offset=broker.raft.core.log_end_offset,
        previous_broker_epoch=broker.previous_broker_epoch,
    )
    await check_stray_partitions(broker)
    follow_metadata(broker)
    broker.lifecycle.start()
    broker.groups.start()
    broker.transactions.start()
    tasks = start_background_tasks(broker)
    await broker.stopping.wait()
    await stop_broker(broker, tasks)
    if broker.raft.failure is not None:
        storage = isinstance(broker.raft.failure, OSError)
        code = ErrorCode.KAFKA_STORAGE_ERROR if storage else ErrorCode.UNKNOWN_SERVER_ERROR
        raise KafkaError(code, f"shut down: {broker.raft.failure_reason}")
    if broker.lifecycle.registration_timed_out:
        timeout_ms = config.initial_registration_timeout_ms
        raise KafkaError(
            ErrorCode.REQUEST_TIMED_OUT,
            f"shut down: no controller registered this broker within initial.broker.registration.timeout.ms "
            f"({timeout_ms} ms)",
        )
    if broker.failures.offline_dirs:
        dirs = ", ".join(str(d) for d in broker.failures.offline_dirs)
        raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"shut down: no online log dir ({dirs} failed)")

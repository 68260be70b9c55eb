"""The controller process: Raft voter + active-controller logic behind one gRPC server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

import grpc
import structlog
from immutables import Map

from minikafka.common.acl import AclBinding
from minikafka.common.cli_support import stop_requested
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.grpc_support import start_server
from minikafka.common.listener_security import inter_node_security
from minikafka.common.node_environment import expose
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.metadata.records import RegisterController
from minikafka.kraft_controller.quorum_controller import QuorumController
from minikafka.kraft_controller.raft.bootstrap import format_controller, read_bootstrap
from minikafka.kraft_controller.raft.core import RaftConfig
from minikafka.kraft_controller.raft.driver import RaftDriver, RaftService
from minikafka.kraft_controller.service import ControllerService
from minikafka.storage.meta_properties import ensure_meta_properties


class FeatureLevel(NamedTuple):
    level: int
    epoch: int  # the offset it is known at (ApiVersions' finalized_features_epoch)


class Stoppable(Protocol):
    """A started front end: where it listens, and how it stops."""

    @property
    def addresses(self) -> list[str]: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True)
class ControllerNode:
    """What a front end of the controller (its Kafka listeners) is given: the config, where the controllers are
    now, the committed ACLs its authorizer reads, the quorum's kraft.version and high watermark (ApiVersions'
    finalized features and their epoch), the committed controller registrations (KIP-919) and the quorum's leader
    (-1: none known)."""

    config: ControllerConfig
    controller_addresses: Callable[[], Sequence[str]]
    acls: Callable[[], Map[str, AclBinding]]
    kraft_version: Callable[[], FeatureLevel] = lambda: FeatureLevel(0, -1)
    registrations: Callable[[], Mapping[int, RegisterController]] = lambda: {}
    leader_id: Callable[[], int] = lambda: -1


# Starts the controller's Kafka listeners; given by the entry point, as the Kafka wire layer is the broker's.
FrontEnd = Callable[[ControllerNode], Awaitable[Sequence[Stoppable]]]


def voter_addresses(config: ControllerConfig) -> dict[int, str]:
    return {node_id: f"{host}:{port}" for node_id, (host, port) in config.voters.items()}


@dataclass(frozen=True)
class QuorumIdentity:
    """This controller's directory and the voter set it starts from (KIP-853)."""

    directory_id: str
    voter_directories: dict[int, str] | None  # None: voters named by id only (kraft.version 0 or the check off)
    observer_only: bool  # formatted without the voter set: it never votes
    endpoints: dict[int, str] = field(default_factory=dict)  # the initial voters' endpoints it was formatted with


def quorum_identity(config: ControllerConfig, data_dir: Path) -> QuorumIdentity:
    """Read (or, on a directory never formatted, make: kraft.version 0) the directory's identity and bootstrap."""
    meta, formatted = ensure_meta_properties(data_dir, config.cluster_id, config.node_id)
    bootstrap = read_bootstrap(data_dir)
    log = structlog.get_logger()
    log.info(
        "controller_directory",
        node_id=config.node_id,
        directory_id=meta.directory_id,
        formatted=formatted,
        kraft_version=bootstrap.kraft_version,
        initial_voters=None if bootstrap.voters is None else sorted(bootstrap.voters),
        directory_id_check=config.raft_directory_id_check,
    )
    if bootstrap.kraft_version == 0 and not config.voters and config.raft_directory_id_check:
        # Only bootstrap servers: a dynamic quorum's controller to be added later (Kafka formats it with
        # --no-initial-controllers); it starts as an observer and learns the voter set from the leader.
        format_controller(data_dir, config.cluster_id, config.node_id, meta.directory_id, None)
        bootstrap = read_bootstrap(data_dir)
    if bootstrap.kraft_version == 0 or not config.raft_directory_id_check:
        return QuorumIdentity(meta.directory_id, None, False)
    if bootstrap.voters is None:
        return QuorumIdentity(meta.directory_id, {v: "" for v in config.voters}, True)
    unknown = sorted(set(bootstrap.voters) - set(config.voters))
    if unknown and config.voters:
        raise KafkaError(
            ErrorCode.INVALID_CONFIG,
            f"{data_dir} was formatted with voters {unknown} that controller.quorum.voters does not name",
        )
    return QuorumIdentity(meta.directory_id, dict(bootstrap.voters), False, bootstrap.endpoints)


def raft_driver(
    config: ControllerConfig,
    data_dir: Path | None = None,
    on_fatal: Callable[[Exception], None] = lambda _error: None,
) -> RaftDriver:
    """The voter's Raft layer over its log in `data_dir` (default `log.dirs`; the test raft server's is apart);
    `on_fatal` hears a metadata-log write error or divergence, after which the driver answers nothing."""
    log_dir = data_dir or config.data_dir
    identity = quorum_identity(config, log_dir)
    raft_config = RaftConfig(
        election_timeout_ms=config.election_timeout_ms,
        fetch_timeout_ms=config.fetch_timeout_ms,
        election_backoff_max_ms=config.election_backoff_max_ms,
        request_timeout_ms=config.request_timeout_ms,
        pre_vote_enable=config.raft_pre_vote_enable,
    )
    return RaftDriver(
        config.node_id,
        identity.endpoints | voter_addresses(config),
        log_dir,
        raft_config,
        config.cluster_id,
        config.metadata_log_segment_bytes,
        on_fatal=on_fatal,
        tls=config.inter_node_tls,
        directory_id=identity.directory_id,
        voter_directories=identity.voter_directories,
        observer_only=identity.observer_only,
        own_endpoint=own_endpoint(config),
        bootstrap_servers=config.bootstrap_servers,
    )


def own_endpoint(config: ControllerConfig) -> str:
    """Where the other nodes reach this controller: its advertised (else bound) first listener."""
    name = config.listener.name
    listener = next((a for a in config.advertised if a.name == name), config.listener)
    if listener.host in ("", "0.0.0.0", "::"):  # a wildcard reaches nobody: the address book's entry, if any
        return voter_addresses(config).get(config.node_id, "")
    return f"{listener.host}:{listener.port}"


def attach_controller(config: ControllerConfig, driver: RaftDriver) -> ControllerService:
    """The controller on top of `driver` (replaying what it commits) and the servicer its RPCs reach."""
    controller = QuorumController(config, driver)
    driver.add_listener(controller)
    return ControllerService(
        controller,
        voter_addresses(config),
        driver.describe_quorum,
        config.cluster_id,
        driver.change_voters,
        config.authorizer_settings.enabled,
        driver.core.endpoint,
    )


async def run_controller_process(config: ControllerConfig, front_end: FrontEnd | None = None) -> None:
    log = structlog.get_logger()
    config.check_tls_files()
    stopping = stop_requested()
    failed = asyncio.Event()
    driver = raft_driver(config, on_fatal=lambda _error: failed.set())
    service = attach_controller(config, driver)
    controller = service.controller
    expose(raft=driver, controller=controller)
    listener = config.listener
    served = inter_node_security(config, listener.name)
    bound = await start_server(
        listener.host,
        listener.port,
        [RaftService(driver).register, service.register],
        served.security,
        served.interceptors,
    )
    driver.start()
    controller.start()
    front_ends: Sequence[Stoppable] = ()
    if front_end is not None and config.kafka_listeners:
        node = ControllerNode(
            config,
            driver.controller_addresses,
            lambda: controller.state.committed.acls,
            lambda: FeatureLevel(driver.core.kraft_version, driver.core.high_watermark),
            lambda: controller.state.committed.controllers,
            lambda: -1 if driver.core.leader_id is None else driver.core.leader_id,
        )
        front_ends = await front_end(node)
    log.info(
        "controller_started",
        node_id=config.node_id,
        address=bound.address,
        voters=service.voter_addresses,
        epoch=driver.core.epoch,
        log_end_offset=driver.core.log_end_offset,
        kafka_addresses=[address for started in front_ends for address in started.addresses],
    )
    await _first_of(stopping, failed)
    if driver.failure is not None:
        await _halt(config, driver, bound.server)
    log.info("controller_stopping", node_id=config.node_id)
    for started in front_ends:
        await started.stop()
    await controller.stop()
    await driver.stop(resign=True)
    await bound.server.stop(grace=0.5)
    log.info("controller_stopped", node_id=config.node_id)


async def _first_of(*events: asyncio.Event) -> None:
    waits = [asyncio.create_task(event.wait()) for event in events]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for wait in waits:
        wait.cancel()


async def _halt(config: ControllerConfig, driver: RaftDriver, server: grpc.aio.Server) -> None:
    """Kafka halts a controller whose metadata log cannot be written, or whose leader asks it to truncate below its
    high watermark: no resignation, no controlled stop (each would write or answer on a log it can no longer
    trust); the process exits 1 with one line."""
    structlog.get_logger().critical("controller_halted", node_id=config.node_id, reason=str(driver.failure))
    with contextlib.suppress(Exception):
        await server.stop(grace=0)
    code = ErrorCode.KAFKA_STORAGE_ERROR if isinstance(driver.failure, OSError) else ErrorCode.UNKNOWN_SERVER_ERROR
    raise KafkaError(code, f"controller {config.node_id} halted: {driver.failure_reason} (in {config.data_dir})")

"""A local cluster of real controller and broker processes, each on a loopback address of its own.

A run directory holds everything of one cluster:

    RUN/cluster.json                 ids, roles, addresses, pids, config and data paths (a contract: tools read it)
    RUN/<label>/<role>.properties    each node's config (label: controller-<id> or broker-<id>)
    RUN/<label>/data/                its log.dirs
    RUN/<label>/stderr.log           its readable log lines
    RUN/logs/<label>.jsonl           its structured events (docs/events.md); faults go to RUN/logs/faults.jsonl
    RUN/history/                     client histories
    RUN/network/cuts.json            the network cuts in force and each node's address (docs/network-partitions.md)
    RUN/certs/                       the cluster CA and each node's (and the admin's) certificate and key
    RUN/admin-client.properties      the admin's TLS settings for tools given explicit addresses (--command-config)
    RUN/client.properties            the brokers' gRPC client listener's settings when it is secured (what the tools
                                     use with --dir; a SASL listener's PLAIN login from sasl.plain.users)
    RUN/kafka-client.properties      Kafka clients' bootstrap.servers and security settings (`kcat -F FILE`)
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from minikafka.broker.config import (
    GRPC_SASL_SSL_PROTOCOL,
    GRPC_SSL_PROTOCOL,
    KAFKA_PROTOCOLS,
    BrokerConfig,
    parse_protocol_map,
)
from minikafka.common.certificates import (
    ADMIN_NAME,
    CertificateRequest,
    ca_certificate_path,
    create_certificates,
    files_for,
)
from minikafka.common.config import ConfigError, config_keys, load_config
from minikafka.common.grpc_support import CUTS_ENV, NODE_ID_ENV
from minikafka.common.node_config import PLAINTEXT, SSL
from minikafka.common.run_dir import DEFAULT_RUNS_DIR, newest_run
from minikafka.common.tls import TlsFiles
from minikafka.deploy.network import HOST_NETWORK, Network, command_prefix, cuts_path
from minikafka.deploy.network_model import NODE_GROUP_BASE
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.raft.bootstrap import format_controller, format_initial_controllers
from minikafka.storage.meta_properties import new_directory_id

CONTROLLER_ID_BASE = 100
"""Controllers are 101, 102, ...; brokers 1, 2, ...: ISRs then read as small numbers."""

CONTROLLER_SUBNET = "127.0.1"
BROKER_SUBNET = "127.0.2"
INTER_NODE_SECURITY_KEY = "security.inter.broker.protocol"
INTER_BROKER_LISTENER = "BROKER"
"""Each node listens on an address of its own (controller 101 on 127.0.1.1, broker 1 on 127.0.2.1), so traffic
between two nodes can be told apart by address; all of 127.0.0.0/8 is loopback on Linux."""


class ClusterError(Exception):
    """A cluster operation failed; the message names the node and says why."""


@dataclass(frozen=True)
class NodeSpec:
    node_id: int
    role: str  # "controller" | "broker"
    host: str
    port: int
    run_dir: Path
    kafka_port: int = 0  # a broker's Kafka listener (PLAINTEXT), a controller's (KIP-919); 0: none
    broker_port: int = 0  # a broker's inter-broker gRPC listener (BROKER); 0: none, its one gRPC listener serves
    further_kafka_ports: tuple[tuple[str, int], ...] = ()  # a broker's other Kafka listeners: (name, port)

    @property
    def kafka_address(self) -> str | None:
        return f"{self.host}:{self.kafka_port}" if self.kafka_port else None

    @property
    def further_kafka_addresses(self) -> dict[str, str]:
        """The broker's Kafka listeners beyond PLAINTEXT (`cluster up --kafka-listener`), by listener name."""
        return {name: f"{self.host}:{port}" for name, port in self.further_kafka_ports}

    @property
    def inter_node_address(self) -> str:
        """Where other nodes (and the fault service's callers) reach it: a controller's listener, a broker's
        inter-broker listener."""
        return f"{self.host}:{self.broker_port}" if self.broker_port else self.address

    @property
    def label(self) -> str:
        return f"{self.role}-{self.node_id}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def node_dir(self) -> Path:
        return self.run_dir / self.label

    @property
    def config_path(self) -> Path:
        return self.node_dir / f"{self.role}.properties"

    @property
    def data_dir(self) -> Path:
        return self.node_dir / "data"

    @property
    def stderr_path(self) -> Path:
        return self.node_dir / "stderr.log"

    @property
    def events_path(self) -> Path:
        return self.run_dir / "logs" / f"{self.label}.jsonl"


@dataclass
class Cluster:
    run_dir: Path
    controllers: list[NodeSpec]
    brokers: list[NodeSpec]
    overrides: dict[str, str] = field(default_factory=dict)
    pids: dict[int, int] = field(default_factory=dict)
    created: str = ""
    network: Network = HOST_NETWORK
    # KIP-853 (kraft.version 1): the controllers' directories were formatted with the voter set, by directory id.
    dynamic_quorum: bool = False
    initial_controllers: int = 0  # with dynamic_quorum: the first N controllers are the voters (0: all)

    @property
    def nodes(self) -> list[NodeSpec]:
        return self.controllers + self.brokers

    @property
    def addresses(self) -> dict[int, str]:
        return {spec.node_id: spec.address for spec in self.nodes}

    def node(self, node_id: int) -> NodeSpec:
        for spec in self.nodes:
            if spec.node_id == node_id:
                return spec
        known = ", ".join(str(spec.node_id) for spec in self.nodes)
        raise ClusterError(f"no node {node_id} in {self.run_dir} (nodes: {known})")

    @property
    def inter_broker_addresses(self) -> dict[str, int]:
        """The brokers' inter-broker listeners, by address (for the network cuts file)."""
        return {b.inter_node_address: b.node_id for b in self.brokers if b.broker_port}

    @property
    def inter_node_security(self) -> str:
        """SSL (mutual TLS, the default) or PLAINTEXT, as `--set security.inter.broker.protocol=` chose."""
        return self.overrides.get(INTER_NODE_SECURITY_KEY, SSL).upper()

    @property
    def certs_dir(self) -> Path:
        return self.run_dir / "certs"

    @property
    def admin_tls(self) -> TlsFiles | None:
        """What minikafka's tools show the controllers and the fault service: the admin's certificate (super.users
        User:admin); None when node-to-node links are PLAINTEXT."""
        if self.inter_node_security != SSL:
            return None
        admin = files_for(self.certs_dir, ADMIN_NAME)
        return TlsFiles(ca_certificate_path(self.certs_dir), admin.certificate, admin.key)

    @property
    def admin_client_properties(self) -> Path:
        return self.run_dir / "admin-client.properties"

    @property
    def client_properties(self) -> Path:
        return self.run_dir / "client.properties"

    @property
    def kafka_client_properties(self) -> Path:
        return self.run_dir / "kafka-client.properties"

    @property
    def listener_protocols(self) -> dict[str, str]:
        return parse_protocol_map(self.overrides.get("listener.security.protocol.map", ""))

    @property
    def plain_login(self) -> tuple[str, str] | None:
        """(user, password) of sasl.plain.users' first user when PLAIN is enabled: the login the run was made with."""
        mechanisms = self.overrides.get("sasl.enabled.mechanisms", "").upper().replace(" ", "").split(",")
        users = [u for u in self.overrides.get("sasl.plain.users", "").split(",") if ":" in u]
        if "PLAIN" not in mechanisms or not users:
            return None
        user, _, password = users[0].strip().partition(":")
        return user, password

    @property
    def voters(self) -> str:
        return ",".join(f"{c.node_id}@{c.address}" for c in self.controllers)

    @property
    def bootstrap_servers(self) -> list[str]:
        return [b.address for b in self.brokers]

    @property
    def kafka_bootstrap_servers(self) -> str:
        """Kafka clients' `bootstrap.servers`: every broker's Kafka listener."""
        return ",".join(b.kafka_address for b in self.brokers if b.kafka_address)

    @property
    def further_kafka_bootstrap(self) -> dict[str, str]:
        """`bootstrap.servers` of each further Kafka listener (`cluster up --kafka-listener`), by listener name: every
        broker has the same ones."""
        names = [name for name, _ in self.brokers[0].further_kafka_ports] if self.brokers else []
        return {name: ",".join(b.further_kafka_addresses[name] for b in self.brokers) for name in names}

    @property
    def bootstrap_controllers(self) -> list[str]:
        return [c.address for c in self.controllers]

    # ---- cluster.json ----

    def to_json(self) -> dict:
        def describe(spec: NodeSpec) -> dict:
            return {
                "id": spec.node_id,
                "role": spec.role,
                "address": spec.address,
                **({"kafka_address": spec.kafka_address} if spec.kafka_address else {}),
                **({"inter_broker_address": spec.inter_node_address} if spec.broker_port else {}),
                **({"kafka_listeners": spec.further_kafka_addresses} if spec.further_kafka_ports else {}),
                "pid": self.pids.get(spec.node_id),
                "config": str(spec.config_path),
                "data_dir": str(spec.data_dir),
                "log": str(spec.events_path),
                "stderr": str(spec.stderr_path),
            }

        return {
            "run_dir": str(self.run_dir),
            "created": self.created,
            "overrides": self.overrides,
            "network": self.network.to_json(),
            "dynamic_quorum": self.dynamic_quorum,
            "initial_controllers": self.initial_controllers,
            "security": self.security_json(),
            "controllers": [describe(c) for c in self.controllers],
            "brokers": [describe(b) for b in self.brokers],
        }

    def security_json(self) -> dict:
        """Which listeners are secured and how (`cluster status --json` shows it too)."""
        mutual_tls = "SSL (mutual TLS, certificates of the run's CA)"
        inter_node = mutual_tls if self.inter_node_security == SSL else PLAINTEXT
        protocols = self.listener_protocols
        mechanisms = self.overrides.get("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512")
        keystore = self.overrides.get("ssl.keystore.location") or "the run's CA"
        client = {
            GRPC_SSL_PROTOCOL: "SSL (server TLS, the run's CA)",
            GRPC_SASL_SSL_PROTOCOL: f"SASL_SSL (server TLS, the run's CA; SASL {mechanisms})",
        }.get(protocols.get("GRPC", ""), PLAINTEXT)
        kafka = {
            "SSL": f"SSL (server TLS, {keystore})",
            "SASL_PLAINTEXT": f"SASL_PLAINTEXT (SASL {mechanisms})",
            "SASL_SSL": f"SASL_SSL (server TLS, {keystore}; SASL {mechanisms})",
        }
        return {
            "inter_node": self.inter_node_security,
            "listeners": {
                "CONTROLLER (controllers)": inter_node,
                f"{INTER_BROKER_LISTENER} (brokers, inter-broker and fault service)": inter_node,
                "GRPC (brokers, minikafka clients)": client,
                **{
                    f"{name} (brokers, Kafka clients)": kafka.get(protocols.get(name, ""), PLAINTEXT)
                    for name in ("PLAINTEXT", *self.further_kafka_bootstrap)
                },
            },
            **({"admin_tls": tls.to_json()} if (tls := self.admin_tls) is not None else {}),
            # What tools given --dir read: the client listener's protocol and, where cluster up wrote one, the file
            # with the settings (and login) to reach it.
            "client_listener": protocols.get("GRPC", "GRPC"),
            **({"client_properties": str(self.client_properties)} if self.client_properties.exists() else {}),
            "kafka_client_properties": str(self.kafka_client_properties),
        }

    def save(self) -> None:
        path = self.run_dir / "cluster.json"
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        os.replace(temporary, path)

    @classmethod
    def load(cls, run_dir: Path) -> Cluster:
        path = run_dir / "cluster.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ClusterError(f"no cluster in {run_dir} (missing cluster.json)") from None
        except json.JSONDecodeError as error:
            raise ClusterError(f"{path} is not valid JSON: {error}") from None

        def spec(entry: dict) -> NodeSpec:
            host, _, port = entry["address"].rpartition(":")
            kafka_port = int(entry["kafka_address"].rpartition(":")[2]) if entry.get("kafka_address") else 0
            broker = entry.get("inter_broker_address")
            broker_port = int(broker.rpartition(":")[2]) if broker else 0
            further = tuple(
                (name, int(address.rpartition(":")[2])) for name, address in entry.get("kafka_listeners", {}).items()
            )
            return NodeSpec(entry["id"], entry["role"], host, int(port), run_dir, kafka_port, broker_port, further)

        cluster = cls(
            run_dir=run_dir,
            controllers=[spec(e) for e in data["controllers"]],
            brokers=[spec(e) for e in data["brokers"]],
            overrides=dict(data.get("overrides", {})),
            created=data.get("created", ""),
            network=Network.from_json(data.get("network")),
            dynamic_quorum=bool(data.get("dynamic_quorum", False)),
            initial_controllers=int(data.get("initial_controllers", 0)),
        )
        cluster.pids = {e["id"]: e["pid"] for e in data["controllers"] + data["brokers"] if e.get("pid")}
        return cluster


# ---- run directories ----


def new_run_dir(base: Path = DEFAULT_RUNS_DIR) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    candidate = base / stamp
    suffix = 1
    while candidate.exists():
        suffix += 1
        candidate = base / f"{stamp}-{suffix}"
    return candidate.resolve()


def resolve_run_dir(explicit: str | None, base: Path = DEFAULT_RUNS_DIR) -> Path:
    """`--dir RUN`, or the newest run under ./runs/ holding a cluster.json."""
    if explicit:
        return Path(explicit).resolve()
    run = newest_run(base)
    if run is None:
        raise ClusterError(f"no run under {base.resolve()}; start one with `minikafka cluster up` or pass --dir")
    return run


# ---- ports and configs ----


PORT_RANGE_ENV = "MINIKAFKA_PORT_RANGE"


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """Ports the OS considers free now (all held open together so they are distinct). With MINIKAFKA_PORT_RANGE
    (`low-high`) they come from that range only: processes planning clusters at once (a test run's workers) each
    get a range of their own, so none can take a port another has planned but not yet bound."""
    low_high = os.environ.get(PORT_RANGE_ENV)
    candidates = _ports_in_range(low_high) if low_high else itertools.repeat(0, count * 10)  # 0: the OS picks
    sockets: list[socket.socket] = []
    try:
        for port in candidates:
            if len(sockets) == count:
                break
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                sock.close()
                continue
            sockets.append(sock)
        if len(sockets) < count:
            raise ClusterError(f"fewer than {count} free ports on {host} in {PORT_RANGE_ENV}={low_high}")
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _ports_in_range(low_high: str) -> Iterator[int]:
    """Every port of `low-high` once, from a random one on (a stopped cluster's ports are not the next ones)."""
    try:
        low, high = (int(part) for part in low_high.split("-"))
    except ValueError:
        raise ClusterError(f"{PORT_RANGE_ENV} must be low-high, got {low_high!r}") from None
    span = high - low + 1
    start = random.randrange(span)
    return (low + (start + i) % span for i in range(span))


def node_host(role: str, index: int) -> str:
    """The loopback address of the `index`-th (from 0) node of `role`."""
    if index > 253:
        raise ClusterError(f"at most 254 {role}s per run")
    return f"{CONTROLLER_SUBNET if role == 'controller' else BROKER_SUBNET}.{index + 1}"


def plan_cluster(
    run_dir: Path,
    controllers: int,
    brokers: int,
    overrides: Mapping[str, str] | None = None,
    network: Network = HOST_NETWORK,
    broker_ids: Sequence[int] | None = None,
    dynamic_quorum: bool = False,
    initial_controllers: int = 0,
    kafka_listeners: Sequence[str] = (),
) -> Cluster:
    """`broker_ids`: the brokers' node ids (default 1..N; Kafka's docker images number them from 0);
    `initial_controllers`: with `dynamic_quorum`, how many controllers are formatted as voters (0: all);
    `kafka_listeners`: every broker's Kafka listeners beyond PLAINTEXT, by name, each on a port of its own."""
    if initial_controllers and (not dynamic_quorum or not 1 <= initial_controllers <= controllers):
        raise ClusterError(f"--initial-controllers needs --dynamic-quorum and 1..{controllers} controllers")
    if controllers < 1:
        raise ClusterError("a cluster needs at least one controller")
    if brokers < 0:
        raise ClusterError("--brokers must not be negative")
    controller_ids = [CONTROLLER_ID_BASE + i + 1 for i in range(controllers)]
    ids = check_broker_ids(broker_ids, brokers, controller_ids)
    further = check_kafka_listeners(kafka_listeners, overrides or {})

    def spec(node_id: int, role: str, index: int) -> NodeSpec:
        host = node_host(role, index)
        if role == "broker":  # client and inter-broker gRPC ports and a Kafka listener port, on its own address
            grpc_port, kafka_port, broker_port, *more = free_ports(3 + len(further), host)
            ports = tuple(zip(further, more, strict=True))
            return NodeSpec(node_id, role, host, grpc_port, run_dir, kafka_port, broker_port, ports)
        quorum_port, kafka_port = free_ports(2, host)  # the quorum's gRPC listener and a Kafka one (KIP-919)
        return NodeSpec(node_id, role, host, quorum_port, run_dir, kafka_port)

    controller_specs = [spec(node_id, "controller", i) for i, node_id in enumerate(controller_ids)]
    broker_specs = [spec(node_id, "broker", i) for i, node_id in enumerate(ids)]
    return Cluster(
        run_dir,
        controller_specs,
        broker_specs,
        dict(overrides or {}),
        created=datetime.now(UTC).isoformat(),
        network=network,
        dynamic_quorum=dynamic_quorum,
        initial_controllers=initial_controllers,
    )


def check_kafka_listeners(names: Sequence[str], overrides: Mapping[str, str]) -> list[str]:
    """The further Kafka listeners' names, upper-cased: distinct, none of the listeners cluster up names itself, each
    mapped to a Kafka security protocol by the run's listener.security.protocol.map (as Kafka requires of a name)."""
    wanted = [name.strip().upper() for name in names]
    reserved = {"PLAINTEXT", "GRPC", INTER_BROKER_LISTENER, "CONTROLLER"}
    if len(set(wanted)) != len(wanted) or reserved & set(wanted):
        raise ClusterError(f"--kafka-listener names must be distinct and none of {sorted(reserved)}, got {wanted}")
    try:
        protocols = parse_protocol_map(overrides.get("listener.security.protocol.map", ""))
    except ValueError as error:
        raise ClusterError(f"listener.security.protocol.map: {error}") from None
    for name in wanted:
        if protocols.get(name) not in KAFKA_PROTOCOLS:
            raise ClusterError(
                f"--kafka-listener {name}: listener.security.protocol.map (--set) must map it to one of "
                f"{', '.join(KAFKA_PROTOCOLS)}, e.g. {name}:SSL"
            )
    return wanted


def check_broker_ids(broker_ids: Sequence[int] | None, brokers: int, controller_ids: Sequence[int]) -> list[int]:
    """The brokers' node ids: as given (one per broker, distinct, not a controller's), else 1..`brokers`."""
    if broker_ids is None:
        return [i + 1 for i in range(brokers)]
    ids = list(broker_ids)
    if len(ids) != brokers:
        raise ClusterError(f"--broker-ids names {len(ids)} broker(s) but --brokers is {brokers}")
    if len(set(ids)) != len(ids) or any(i < 0 for i in ids):
        raise ClusterError(f"--broker-ids must be distinct non-negative ids, got {ids}")
    taken = sorted(set(ids) & set(controller_ids))
    if taken:
        raise ClusterError(f"--broker-ids {taken} are the controllers' node ids ({min(controller_ids)} and up)")
    return ids


def node_properties(cluster: Cluster, spec: NodeSpec) -> dict[str, str]:
    """A node's config: its identity and paths, then the run's `--set` overrides the node's role accepts."""
    listeners = f"CONTROLLER://{spec.address}" if spec.role == "controller" else f"GRPC://{spec.address}"
    if spec.kafka_address:
        listeners += f",PLAINTEXT://{spec.kafka_address}"
    listeners += "".join(f",{name}://{address}" for name, address in spec.further_kafka_addresses.items())
    props = {
        "node.id": str(spec.node_id),
        "process.roles": spec.role,
        "listeners": listeners,
        "controller.quorum.voters": cluster.voters,
        "log.dirs": str(spec.data_dir),
        "minikafka.event.log.dir": str(cluster.run_dir / "logs"),
        "fault.injection.enable": "true",
    }
    if spec.role == "controller" and spec.kafka_address:
        props["controller.listener.names"] = "CONTROLLER,PLAINTEXT"  # the quorum's first
    if spec.broker_port:
        props["listeners"] += f",{INTER_BROKER_LISTENER}://{spec.inter_node_address}"
        props["inter.broker.listener.name"] = INTER_BROKER_LISTENER
    if spec.role == "broker":
        # Written out, as Kafka's own server.properties and images do: a broker then describes it as
        # STATIC_BROKER_CONFIG, which clients' suites check of a Kafka 4 broker.
        props["advertised.listeners"] = props["listeners"]
    if cluster.inter_node_security == SSL:
        own = files_for(cluster.certs_dir, spec.label)
        props[INTER_NODE_SECURITY_KEY] = SSL
        props["ssl.truststore.location"] = str(ca_certificate_path(cluster.certs_dir))
        props["minikafka.node.ssl.certificate.location"] = str(own.certificate)
        props["minikafka.node.ssl.key.location"] = str(own.key)
    accepted = _accepted_keys(spec.role)
    props.update({k: v for k, v in cluster.overrides.items() if k in accepted})
    return props


def config_class(role: str) -> type[ControllerConfig] | type[BrokerConfig]:
    """The config dataclass a node of `role` loads its .properties into."""
    return ControllerConfig if role == "controller" else BrokerConfig


def _accepted_keys(role: str) -> set[str]:
    return {key.name for _, key in config_keys(config_class(role))}


def validate_overrides(overrides: Mapping[str, str]) -> None:
    """Every `--set` key must belong to the controllers' or the brokers' config."""
    known = _accepted_keys("controller") | _accepted_keys("broker")
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ClusterError(f"unknown config key '{unknown[0]}' in --set")


def create_cluster_certificates(cluster: Cluster) -> None:
    """The run's CA, a certificate per node (its CN its label, its name its loopback address) and the admin's."""
    requests = [CertificateRequest(spec.label, (spec.host,)) for spec in cluster.nodes]
    create_certificates(cluster.certs_dir, [*requests, CertificateRequest(ADMIN_NAME)])


def write_admin_client_properties(cluster: Cluster) -> None:
    """Kafka clients' keys for the admin certificate: `--command-config RUN/admin-client.properties`."""
    tls = cluster.admin_tls
    assert tls is not None and tls.certificate is not None and tls.key is not None
    cluster.admin_client_properties.write_text(
        f"security.protocol=SSL\nssl.ca.location={tls.ca}\nssl.certificate.location={tls.certificate}\n"
        f"ssl.key.location={tls.key}\n"
    )


def _security_lines(protocol: str, cluster: Cluster) -> list[str]:
    """librdkafka's keys for a listener of `protocol` (SSL, SASL_SSL, SASL_PLAINTEXT) with the run's CA and its
    PLAIN login; the login lines are absent when the run has none."""
    lines = [f"security.protocol={protocol}"]
    if "SSL" in protocol:
        lines.append(f"ssl.ca.location={ca_certificate_path(cluster.certs_dir)}")
    if protocol.startswith("SASL") and (login := cluster.plain_login) is not None:
        lines += ["sasl.mechanism=PLAIN", f"sasl.username={login[0]}", f"sasl.password={login[1]}"]
    return lines


def _write_private(path: Path, lines: list[str]) -> None:
    """A file that may hold a password: readable by its owner only, as the run's keys are."""
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text("".join(f"{line}\n" for line in lines))


def write_client_properties(cluster: Cluster) -> None:
    """RUN/client.properties for a secured gRPC client listener (a SASL one only with a PLAIN login to put in it),
    and RUN/kafka-client.properties for Kafka clients (`kcat -F`), each with librdkafka's names."""
    protocols = cluster.listener_protocols
    grpc = {GRPC_SSL_PROTOCOL: "SSL", GRPC_SASL_SSL_PROTOCOL: "SASL_SSL"}.get(protocols.get("GRPC", ""))
    if grpc is not None and (grpc == "SSL" or cluster.plain_login is not None):
        _write_private(cluster.client_properties, _security_lines(grpc, cluster))
    kafka = protocols.get("PLAINTEXT", PLAINTEXT)
    security = _security_lines(kafka, cluster) if kafka != PLAINTEXT else []
    _write_private(cluster.kafka_client_properties, [f"bootstrap.servers={cluster.kafka_bootstrap_servers}", *security])


def write_configs(cluster: Cluster) -> None:
    if cluster.inter_node_security == SSL:
        create_cluster_certificates(cluster)
        write_admin_client_properties(cluster)
    write_client_properties(cluster)
    for spec in cluster.nodes:
        spec.node_dir.mkdir(parents=True, exist_ok=True)
        spec.data_dir.mkdir(parents=True, exist_ok=True)
        props = node_properties(cluster, spec)
        try:
            load_config(config_class(spec.role), props, str(spec.config_path))
        except ConfigError as error:
            raise ClusterError(str(error)) from None
        spec.config_path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    if cluster.dynamic_quorum:
        voters = cluster.controllers[: cluster.initial_controllers or len(cluster.controllers)]
        format_initial_controllers({c.node_id: c.data_dir for c in voters}, cluster_id(cluster))
        for spec in cluster.controllers[len(voters) :]:
            format_joining_controller(cluster, spec)
    (cluster.run_dir / "logs").mkdir(parents=True, exist_ok=True)
    (cluster.run_dir / "history").mkdir(parents=True, exist_ok=True)


def cluster_id(cluster: Cluster) -> str:
    return cluster.overrides.get("cluster.id", ControllerConfig.cluster_id)


def format_joining_controller(cluster: Cluster, spec: NodeSpec) -> None:
    """Format an empty controller directory as a new replica (`kafka-storage format --no-initial-controllers`):
    a new directory id and no voter set, so it joins as an observer."""
    format_controller(spec.data_dir, cluster_id(cluster), spec.node_id, new_directory_id(), None)


# ---- processes ----


def spawn(spec: NodeSpec, network: Network = HOST_NETWORK) -> int:
    """Start a node's process detached from the caller (it outlives `cluster up`); returns its pid.

    In a namespace it runs inside it (`ip netns exec` execs the node in place, so the pid is the node's) with a
    group id of its own, by which the kernel rules give its connections its address. On the host its transport
    reads the run's cuts file.
    """
    spec.node_dir.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, NODE_ID_ENV: str(spec.node_id)}
    group = None
    if network.mode == "netns":
        group = NODE_GROUP_BASE + spec.node_id
    else:
        environment[CUTS_ENV] = str(cuts_path(spec.run_dir))
    command = [sys.executable, "-m", "minikafka.launcher", spec.role, "--config", str(spec.config_path)]
    with spec.stderr_path.open("ab") as stderr:
        process = subprocess.Popen(
            [*command_prefix(network), *command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            cwd=spec.run_dir,
            env=environment,
            group=group,
        )
    _CHILDREN[process.pid] = process
    return process.pid


# Popen objects of processes this Python process started, so their exit can be reaped (no zombies in tests).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def is_alive(pid: int | None) -> bool:
    if not pid:
        return False
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def is_paused(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "T"
    except (FileNotFoundError, IndexError):
        return False


def send_signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait_exit(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_alive(pid):
            child = _CHILDREN.pop(pid, None)
            if child is not None:
                child.wait()
            return True
        time.sleep(0.02)
    return False


def kill(pid: int) -> None:
    send_signal(pid, signal.SIGKILL)
    if not wait_exit(pid, 10):
        raise ClusterError(f"process {pid} did not die after SIGKILL")


def terminate(pid: int) -> None:
    """SIGTERM (a broker's controlled shutdown), resuming a paused process first so it can handle it."""
    send_signal(pid, signal.SIGCONT)
    send_signal(pid, signal.SIGTERM)


def last_lines(path: Path, count: int = 8) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-count:]
    except FileNotFoundError:
        return []


def wait_until(condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.05) -> bool:
    """Poll `condition` until it holds or the deadline passes (a condition with a deadline, never a bare sleep)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)

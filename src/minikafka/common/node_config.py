"""The config keys every minikafka process has (controllers and brokers alike)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from minikafka.common.authorizer import DEFAULT_MAPPING_RULES, AuthorizerConfig, parse_mapping_rules, parse_super_users
from minikafka.common.config import ConfigError, at_least, config_key, one_of, subset_of
from minikafka.common.endpoints import Listener, parse_host_port, parse_listeners, parse_voters
from minikafka.common.standard_authorizer import STANDARD_AUTHORIZER, AuthorizerSettings
from minikafka.common.tls import TlsFiles

PLAINTEXT = "PLAINTEXT"
SSL = "SSL"


def _listeners_ok(text: str) -> str | None:
    try:
        parse_listeners(text)
    except ValueError as error:
        return str(error)
    return None


def _super_users_ok(text: str) -> str | None:
    try:
        parse_super_users(text)
    except ValueError as error:
        return str(error)
    return None


def _mapping_rules_ok(text: str) -> str | None:
    try:
        parse_mapping_rules(text)
    except ValueError as error:
        return str(error)
    return None


def _bootstrap_ok(text: str) -> str | None:
    try:
        for item in text.split(","):
            parse_host_port(item.strip())
    except ValueError as error:
        return str(error)
    return None


def _voters_ok(text: str) -> str | None:
    try:
        parse_voters(text)
    except ValueError as error:
        return str(error)
    return None


@dataclass(frozen=True)
class NodeConfig:
    node_id: int = config_key(
        "node.id", doc="The id of this node, unique across controllers and brokers.", validator=at_least(0)
    )
    process_roles: tuple[str, ...] = config_key(
        "process.roles",
        doc="The roles of this process: broker or controller.",
        validator=subset_of("broker", "controller"),
    )
    listeners: str = config_key(
        "listeners",
        doc="Where this node's gRPC server listens, e.g. PLAINTEXT://127.0.0.1:9092.",
        validator=_listeners_ok,
    )
    log_dirs: str = config_key("log.dirs", doc="The directory holding this node's data (metadata and partition logs).")
    controller_quorum_voters: str = config_key(
        "controller.quorum.voters",
        "",
        "The controller quorum: id@host:port,... (a static quorum's voters, a dynamic quorum's address book); "
        "empty: controller.quorum.bootstrap.servers finds the quorum.",
        lambda text: _voters_ok(text) if text else None,
    )
    controller_quorum_bootstrap_servers: str = config_key(
        "controller.quorum.bootstrap.servers",
        "",
        "KIP-853: host:port,... of controllers to ask for the quorum's leader when controller.quorum.voters is "
        "empty; the voters and their endpoints are then learned from the metadata log's VotersRecords.",
        lambda text: _bootstrap_ok(text) if text else None,
    )
    advertised_listeners: str = config_key(
        "advertised.listeners",
        "",
        "The addresses other nodes and clients use to reach this node, by listener name; empty: listeners.",
        lambda text: _listeners_ok(text) if text else None,
    )
    cluster_id: str = config_key("cluster.id", "minikafka", "The cluster id every request carries.")
    log_level: str = config_key(
        "log.level", "info", "The lowest structured-log level written.", one_of("debug", "info", "warning", "error")
    )
    event_log_dir: str = config_key(
        "minikafka.event.log.dir", "", "Where the JSON-lines event log <node>.jsonl goes; empty: <log.dirs>/../logs."
    )
    node_name: str = config_key(
        "minikafka.node.name", "", "The node label in logs; empty: controller-<id> or broker-<id>."
    )

    security_inter_broker_protocol: str = config_key(
        "security.inter.broker.protocol",
        PLAINTEXT,
        "The security of every node-to-node gRPC link (the controller listener, the inter-broker listener and this "
        "node's calls to them): SSL is mutual TLS, each end showing a certificate of the cluster CA whose CN names "
        "it (broker-<id>, controller-<id>), and a node may then act only as itself; PLAINTEXT authenticates no one.",
        one_of(PLAINTEXT, SSL),
    )
    ssl_truststore_location: str = config_key(
        "ssl.truststore.location",
        "",
        "The cluster CA's certificate (PEM) every TLS peer's certificate is checked against: nodes on gRPC, and "
        "Kafka clients on SSL and SASL_SSL listeners when ssl.client.auth asks for one.",
    )
    node_ssl_certificate_location: str = config_key(
        "minikafka.node.ssl.certificate.location",
        "",
        "This node's certificate (PEM, signed by the cluster CA, CN broker-<id> or controller-<id>), shown on "
        "node-to-node links.",
    )
    node_ssl_key_location: str = config_key(
        "minikafka.node.ssl.key.location", "", "The private key (PEM) of minikafka.node.ssl.certificate.location."
    )
    super_users: str = config_key(
        "super.users",
        "User:admin",
        "Principals (User:<name>, ';'-separated) allowed to call the fault service and, with an authorizer "
        "(authorizer.class.name), to do everything on the client listeners whatever the ACLs: a certificate's CN "
        "or a SASL user.",
        _super_users_ok,
    )
    ssl_principal_mapping_rules: str = config_key(
        "ssl.principal.mapping.rules",
        DEFAULT_MAPPING_RULES,
        "How a TLS peer's certificate subject becomes its principal's name: rules RULE:pattern/replacement/[LU] "
        "and DEFAULT (the subject as it is), the first that matches wins. Kafka's default is DEFAULT; here the CN "
        "comes first, as node identities (broker-<id>, controller-<id>) and super.users are CNs.",
        _mapping_rules_ok,
    )
    authorizer_class_name: str = config_key(
        "authorizer.class.name",
        "",
        "Empty: no authorization, every authenticated client may do everything (Kafka's default). "
        f"{STANDARD_AUTHORIZER}: the ACLs of the metadata log (CreateAcls, minikafka acls) decide every request "
        "of the client listeners.",
        one_of("", STANDARD_AUTHORIZER),
    )
    allow_everyone_if_no_acl_found: bool = config_key(
        "allow.everyone.if.no.acl.found",
        False,
        "With an authorizer: whether a resource no ACL covers may be used by everyone (Kafka's default: no).",
    )
    fault_injection_enable: bool = config_key(
        "fault.injection.enable",
        False,
        "Serve the fault service (hold AlterPartition, disk faults) to super users on the inter-node listener.",
    )
    # Not a config key: the keys the properties and --set gave (load_config fills it), which DescribeConfigs
    # reports as STATIC_BROKER_CONFIG, the others as DEFAULT_CONFIG, even when a given value equals the default.
    set_keys: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    role = "node"

    def validate(self) -> None:
        self._validate_security()
        if self.role not in self.process_roles:
            raise ConfigError(
                f"invalid value '{','.join(self.process_roles)}' for 'process.roles': this command runs a {self.role}",
                "process.roles",
            )
        bound = {listener.name for listener in self.bound_listeners}
        unknown = sorted({listener.name for listener in self.advertised} - bound)
        if unknown:
            raise ConfigError(
                f"invalid value '{self.advertised_listeners}' for 'advertised.listeners': listener "
                f"{unknown[0]} is not in listeners",
                "advertised.listeners",
            )
        if not self.controller_quorum_voters and not self.controller_quorum_bootstrap_servers:
            raise ConfigError(
                "missing value for 'controller.quorum.voters': it or controller.quorum.bootstrap.servers must "
                "name the controllers",
                "controller.quorum.voters",
            )
        if len(self.process_roles) != 1:
            raise ConfigError(
                "invalid value for 'process.roles': combined mode (broker,controller) is not "
                "supported; run one process per role",
                "process.roles",
            )

    def _validate_security(self) -> None:
        if self.security_inter_broker_protocol == SSL:
            self.require_tls_keys("security.inter.broker.protocol=SSL")

    def require_tls_keys(self, needed_by: str) -> None:
        for key, value in (
            ("ssl.truststore.location", self.ssl_truststore_location),
            ("minikafka.node.ssl.certificate.location", self.node_ssl_certificate_location),
            ("minikafka.node.ssl.key.location", self.node_ssl_key_location),
        ):
            if not value:
                raise ConfigError(f"missing value for '{key}': {needed_by} needs it", key)

    def check_tls_files(self) -> None:
        """At start-up (a config may name files of another machine, as a container's): the TLS files exist."""
        tls = self.node_tls
        if tls is None:
            return
        for key, path in (
            ("ssl.truststore.location", tls.ca),
            ("minikafka.node.ssl.certificate.location", tls.certificate),
            ("minikafka.node.ssl.key.location", tls.key),
        ):
            if path is None or not path.is_file():
                raise ConfigError(f"invalid value '{path}' for '{key}': no such file", key)

    @property
    def inter_node_tls(self) -> TlsFiles | None:
        """The TLS material of node-to-node links; None when they are PLAINTEXT."""
        return self.node_tls if self.security_inter_broker_protocol == SSL else None

    @property
    def node_tls(self) -> TlsFiles | None:
        """This node's CA, certificate and key, when configured."""
        if not (self.ssl_truststore_location and self.node_ssl_certificate_location and self.node_ssl_key_location):
            return None
        return TlsFiles(
            Path(self.ssl_truststore_location),
            Path(self.node_ssl_certificate_location),
            Path(self.node_ssl_key_location),
        )

    @property
    def authorizer_config(self) -> AuthorizerConfig:
        return AuthorizerConfig(
            parse_super_users(self.super_users),
            self.fault_injection_enable,
            parse_mapping_rules(self.ssl_principal_mapping_rules),
        )

    @property
    def authorizer_settings(self) -> AuthorizerSettings:
        """The StandardAuthorizer's settings: on with authorizer.class.name, super users by their principal."""
        return AuthorizerSettings(
            enabled=self.authorizer_class_name == STANDARD_AUTHORIZER,
            super_users=frozenset(str(p) for p in parse_super_users(self.super_users)),
            allow_everyone_if_no_acl_found=self.allow_everyone_if_no_acl_found,
        )

    @property
    def listener(self) -> Listener:
        """The first listener: the one inter-node traffic uses unless a role chooses otherwise."""
        return parse_listeners(self.listeners)[0]

    @property
    def bound_listeners(self) -> tuple[Listener, ...]:
        return parse_listeners(self.listeners)

    @property
    def advertised(self) -> tuple[Listener, ...]:
        """What this node tells others, per listener name (defaults to where it listens)."""
        return parse_listeners(self.advertised_listeners) if self.advertised_listeners else self.bound_listeners

    @property
    def voters(self) -> dict[int, tuple[str, int]]:
        return parse_voters(self.controller_quorum_voters) if self.controller_quorum_voters else {}

    @property
    def bootstrap_servers(self) -> list[str]:
        """controller.quorum.bootstrap.servers as host:port strings."""
        text = self.controller_quorum_bootstrap_servers
        return [f"{h}:{p}" for h, p in (parse_host_port(i.strip()) for i in text.split(","))] if text else []

    @property
    def data_dir(self) -> Path:
        return Path(self.log_dirs.split(",")[0])

    @property
    def label(self) -> str:
        return self.node_name or f"{self.role}-{self.node_id}"

    @property
    def events_dir(self) -> Path:
        return Path(self.event_log_dir) if self.event_log_dir else self.data_dir.parent / "logs"

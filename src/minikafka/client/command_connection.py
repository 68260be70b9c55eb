"""How a client command reaches the cluster: the connection arguments every command takes, the addresses they
name (or the run directory's cluster.json) and the TLS and SASL material for the controllers and the brokers."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from minikafka.common.cli_support import CliError
from minikafka.common.run_dir import newest_run

if TYPE_CHECKING:  # imported lazily where used: grpc's start-up is slow for commands that need none
    from minikafka.client.admin import AdminClient
    from minikafka.client.sasl_exchange import SaslLogin
    from minikafka.common.tls import TlsFiles


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", metavar="RUN", help="the run directory (default: the newest under ./runs/)")
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="any broker's address")
    parser.add_argument("--bootstrap-controller", metavar="HOST:PORT", help="any controller's address")
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties (security.protocol=SSL or SASL_SSL, ssl.ca.location, ssl.certificate.location, "
        "ssl.key.location, sasl.mechanism, sasl.username, sasl.password) for the controllers' listener when the "
        "command has controllers, else for the brokers' gRPC listener; default with --dir: the run's admin "
        "certificate for the controllers (RUN/admin-client.properties holds it) and, to the brokers, plaintext or "
        "RUN/client.properties when their gRPC listener is secured",
    )


def resolve_addresses(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(controllers, brokers) from --bootstrap-controller/--bootstrap-server, else from RUN/cluster.json.

    The client reads cluster.json itself (a documented file contract) rather than importing deploy code.
    """
    controllers = [a for a in (args.bootstrap_controller or "").split(",") if a]
    brokers = [a for a in (args.bootstrap_server or "").split(",") if a]
    if controllers or brokers:
        return controllers, brokers
    run = Path(args.dir) if args.dir else newest_run()
    if run is None:
        raise CliError("no cluster given: pass --bootstrap-server/--bootstrap-controller or --dir RUN")
    try:
        data = json.loads((run / "cluster.json").read_text())
    except FileNotFoundError:
        raise CliError(f"no cluster in {run} (missing cluster.json)") from None
    return [c["address"] for c in data["controllers"]], [b["address"] for b in data["brokers"]]


def controller_kafka_addresses(args: argparse.Namespace) -> list[str]:
    """The controllers' Kafka listeners (KIP-919): --bootstrap-controller, else cluster.json's kafka_address."""
    given = [a for a in (args.bootstrap_controller or "").split(",") if a]
    if given:
        return given
    run = Path(args.dir) if args.dir else newest_run()
    if run is None:
        raise CliError("no cluster given: pass --bootstrap-controller or --dir RUN")
    try:
        data = json.loads((run / "cluster.json").read_text())
    except FileNotFoundError:
        raise CliError(f"no cluster in {run} (missing cluster.json)") from None
    found = [c["kafka_address"] for c in data["controllers"] if c.get("kafka_address")]
    if not found:
        raise CliError(f"the controllers of {run} have no Kafka listener (cluster.json names no kafka_address)")
    return found


def admin_tls(args: argparse.Namespace) -> TlsFiles | None:
    """The TLS material shown to the controllers: --command-config's, else (without explicit addresses) the run
    directory's admin certificate when its node-to-node links are SSL."""
    from minikafka.common.tls import TlsFiles

    if getattr(args, "command_config", None):
        return client_tls_from_properties(Path(args.command_config))
    if args.bootstrap_controller or args.bootstrap_server:
        return None
    run = Path(args.dir) if args.dir else newest_run()
    try:
        data = json.loads((run / "cluster.json").read_text()) if run is not None else {}
    except FileNotFoundError:
        return None
    files = data.get("security", {}).get("admin_tls")
    return TlsFiles.from_json(files) if files else None


def admin_broker_tls(args: argparse.Namespace, controllers: list[str]) -> TlsFiles | None:
    """An admin command's TLS to the brokers' client listener (see broker_security)."""
    return broker_security(args, bool(controllers)).tls


def admin_broker_sasl(args: argparse.Namespace, controllers: list[str]) -> SaslLogin | None:
    """An admin command's SASL login on the brokers' client listener (see broker_security)."""
    return broker_security(args, bool(controllers)).sasl


def client_tls(args: argparse.Namespace) -> TlsFiles | None:
    """The TLS material for the brokers' gRPC client listener (see broker_security)."""
    return broker_security(args).tls


def client_sasl(args: argparse.Namespace) -> SaslLogin | None:
    """The SASL login for a GRPC_SASL_SSL client listener (see broker_security)."""
    return broker_security(args).sasl


def broker_security(args: argparse.Namespace, has_controllers: bool = False) -> ClientSecurity:
    """How to reach the brokers' gRPC client listener: --command-config's when it is the brokers' file (a command
    without controllers); else, given explicit addresses, plaintext; else the run's own settings (run_security)."""
    if getattr(args, "command_config", None) and not has_controllers:
        return client_security_from_properties(Path(args.command_config))
    if args.bootstrap_server or args.bootstrap_controller:
        return ClientSecurity(None, None)
    return run_security(Path(args.dir) if args.dir else newest_run())


def run_security(run: Path | None) -> ClientSecurity:
    """A run's brokers' client listener as cluster.json's `security` describes it: plaintext, or the settings of
    the RUN/client.properties `cluster up` wrote; a secured listener without that file is named with what is
    missing, rather than left to fail as an unreachable broker."""
    try:
        security = json.loads((run / "cluster.json").read_text()).get("security", {}) if run is not None else {}
    except FileNotFoundError:
        return ClientSecurity(None, None)
    listener = security.get("client_listener", "GRPC")
    if listener == "GRPC":
        return ClientSecurity(None, None)
    if "client_properties" in security:
        return client_security_from_properties(Path(security["client_properties"]))
    raise CliError(
        f"the brokers' gRPC client listener of {run} is {listener} and the run has no login for it (cluster up "
        "writes RUN/client.properties only from a PLAIN user of sasl.plain.users): give --command-config FILE with "
        f"security.protocol=SASL_SSL, ssl.ca.location={run}/certs/ca.pem, sasl.mechanism, sasl.username and "
        "sasl.password"
    )


def client_tls_from_properties(path: Path) -> TlsFiles | None:
    """Kafka clients' (librdkafka's) names: security.protocol, ssl.ca.location, ssl.certificate.location,
    ssl.key.location."""
    return client_security_from_properties(path).tls


@dataclass(frozen=True)
class ClientSecurity:
    """What --command-config says about the brokers' gRPC client listener."""

    tls: TlsFiles | None
    sasl: SaslLogin | None


def client_security_from_properties(path: Path) -> ClientSecurity:
    """--command-config with librdkafka's names: security.protocol (PLAINTEXT, SSL, SASL_SSL), ssl.ca.location,
    ssl.certificate.location, ssl.key.location, sasl.mechanism (or sasl.mechanisms), sasl.username,
    sasl.password."""
    from minikafka.common.config import ConfigError, parse_properties
    from minikafka.common.tls import TlsFiles

    try:
        props = parse_properties(path.read_text(), str(path))
    except (OSError, ConfigError) as error:
        raise CliError(f"cannot read --command-config {path}: {error}") from None
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol == "PLAINTEXT":
        return ClientSecurity(None, None)
    if protocol not in ("SSL", "SASL_SSL"):
        raise CliError(
            f"invalid value '{protocol}' for 'security.protocol' in {path}: must be PLAINTEXT, SSL or SASL_SSL "
            "(minikafka's gRPC listeners take SASL over TLS only)"
        )
    if "ssl.ca.location" not in props:
        raise CliError(f"missing value for 'ssl.ca.location' in {path}: security.protocol={protocol} needs it")
    certificate, key = props.get("ssl.certificate.location"), props.get("ssl.key.location")
    tls = TlsFiles(
        Path(props["ssl.ca.location"]), Path(certificate) if certificate else None, Path(key) if key else None
    )
    return ClientSecurity(tls, _sasl_login(props, path) if protocol == "SASL_SSL" else None)


def _sasl_login(props: dict[str, str], path: Path) -> SaslLogin:
    from minikafka.client.sasl_exchange import MECHANISMS, SaslLogin

    mechanism = props.get("sasl.mechanism") or props.get("sasl.mechanisms")  # librdkafka takes both names
    if not mechanism:
        raise CliError(f"missing value for 'sasl.mechanism' in {path}: security.protocol=SASL_SSL needs it")
    if mechanism.upper() not in MECHANISMS:
        raise CliError(
            f"invalid value '{mechanism}' for 'sasl.mechanism' in {path}: must be one of {', '.join(MECHANISMS)}"
        )
    for key in ("sasl.username", "sasl.password"):
        if not props.get(key):
            raise CliError(f"missing value for '{key}' in {path}: sasl.mechanism={mechanism} needs it")
    return SaslLogin(mechanism.upper(), props["sasl.username"], props["sasl.password"])


def admin_client(args: argparse.Namespace) -> AdminClient:
    from minikafka.client.admin import AdminClient

    controllers, brokers = resolve_addresses(args)
    return AdminClient(
        controllers,
        brokers,
        tls=admin_tls(args),
        broker_tls=admin_broker_tls(args, controllers),
        broker_sasl=admin_broker_sasl(args, controllers),
    )

"""Which TLS material a tool shows: --command-config (Kafka clients' key names), else the run's admin certificate."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from minikafka.client.command_connection import (
    ClientSecurity,
    admin_broker_sasl,
    admin_broker_tls,
    admin_tls,
    client_sasl,
    client_security_from_properties,
    client_tls,
    client_tls_from_properties,
)
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.cli_support import CliError
from minikafka.common.tls import TlsFiles


def args(**given: str | None) -> argparse.Namespace:
    values = {"dir": None, "bootstrap_controller": None, "bootstrap_server": None, "command_config": None}
    return argparse.Namespace(**{**values, **given})


def test_a_run_directory_gives_its_admin_certificate_for_the_controllers(tmp_path: Path) -> None:
    files = TlsFiles(tmp_path / "ca.pem", tmp_path / "admin.pem", tmp_path / "admin.key")
    (tmp_path / "cluster.json").write_text(json.dumps({"security": {"admin_tls": files.to_json()}}))
    assert admin_tls(args(dir=str(tmp_path))) == files
    assert admin_tls(args(dir=str(tmp_path), bootstrap_controller="127.0.0.1:1")) is None  # explicit: say how
    (tmp_path / "cluster.json").write_text(json.dumps({"security": {"inter_node": "PLAINTEXT"}}))
    assert admin_tls(args(dir=str(tmp_path))) is None


def test_command_config_takes_kafka_clients_names_and_goes_to_the_controllers_first(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SSL\nssl.ca.location=/c/ca.pem\nssl.certificate.location=/c/a.pem\n")
    given = args(bootstrap_controller="127.0.0.1:1", command_config=str(config))
    assert admin_tls(given) == TlsFiles(Path("/c/ca.pem"), Path("/c/a.pem"), None)
    assert admin_broker_tls(given, ["127.0.0.1:1"]) is None
    assert admin_broker_tls(args(bootstrap_server="127.0.0.1:2", command_config=str(config)), []) is not None
    config.write_text("security.protocol=PLAINTEXT\n")
    assert client_tls_from_properties(config) is None


def test_sasl_ssl_takes_librdkafkas_sasl_names(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\nssl.ca.location=/c/ca.pem\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.username=alice\nsasl.password=alice-secret\n"
    )
    security = client_security_from_properties(config)
    assert security == ClientSecurity(TlsFiles(Path("/c/ca.pem")), SaslLogin("SCRAM-SHA-512", "alice", "alice-secret"))
    given = args(bootstrap_server="127.0.0.1:2", command_config=str(config))
    assert client_sasl(given) == security.sasl and admin_broker_sasl(given, []) == security.sasl
    assert admin_broker_sasl(given, ["127.0.0.1:1"]) is None  # with controllers the file is theirs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("security.protocol=SASL_PLAINTEXT\n", "must be PLAINTEXT, SSL or SASL_SSL"),
        ("security.protocol=SSL\n", "missing value for 'ssl.ca.location'"),
        ("security.protocol=SASL_SSL\nssl.ca.location=/c/ca.pem\n", "missing value for 'sasl.mechanism'"),
        (
            "security.protocol=SASL_SSL\nssl.ca.location=/c/ca.pem\nsasl.mechanism=GSSAPI\n",
            "invalid value 'GSSAPI' for 'sasl.mechanism'",
        ),
        (
            "security.protocol=SASL_SSL\nssl.ca.location=/c/ca.pem\nsasl.mechanisms=PLAIN\nsasl.username=a\n",
            "missing value for 'sasl.password'",
        ),
    ],
)
def test_bad_command_configs_get_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "client.properties"
    config.write_text(text)
    with pytest.raises(CliError, match=message):
        client_tls_from_properties(config)
    with pytest.raises(CliError, match="cannot read --command-config"):
        client_tls_from_properties(tmp_path / "missing.properties")


SECURE_OVERRIDES = {
    "listener.security.protocol.map": "PLAINTEXT:SASL_SSL,GRPC:GRPC_SASL_SSL,BROKER:GRPC,CONTROLLER:GRPC",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "sasl.plain.users": "admin:admin-secret,bob:b",
}


def _planned_run(tmp_path: Path, overrides: dict[str, str]) -> Path:
    """A run directory as `cluster up` leaves it (configs, certificates, cluster.json), with no process started."""
    from minikafka.deploy.local_cluster import plan_cluster, write_configs

    cluster = plan_cluster(tmp_path / "run", 1, 1, overrides)
    write_configs(cluster)
    cluster.save()
    return cluster.run_dir


def test_a_secured_runs_tools_given_dir_log_in_as_the_run_was_made(tmp_path: Path) -> None:
    run = _planned_run(tmp_path, SECURE_OVERRIDES)
    login = SaslLogin("PLAIN", "admin", "admin-secret")
    assert client_sasl(args(dir=str(run))) == login
    assert client_tls(args(dir=str(run))) == TlsFiles(run / "certs" / "ca.pem")
    assert admin_broker_sasl(args(dir=str(run)), ["127.0.1.1:1"]) == login  # topics create: brokers too
    assert (run / "client.properties").stat().st_mode & 0o077 == 0  # it holds a password
    kafka = (run / "kafka-client.properties").read_text()
    assert "bootstrap.servers=127.0.2.1:" in kafka and "security.protocol=SASL_SSL" in kafka
    assert client_sasl(args(dir=str(run), bootstrap_server="127.0.2.1:1")) is None  # explicit addresses: say how


def test_a_sasl_run_without_a_plain_user_says_what_is_missing(tmp_path: Path) -> None:
    run = _planned_run(tmp_path, {**SECURE_OVERRIDES, "sasl.enabled.mechanisms": "SCRAM-SHA-512"})
    assert not (run / "client.properties").exists()
    with pytest.raises(CliError, match=r"GRPC_SASL_SSL .* no login .* sasl.mechanism, sasl.username"):
        client_sasl(args(dir=str(run)))
    config = tmp_path / "alice.properties"
    config.write_text(f"security.protocol=SASL_SSL\nssl.ca.location={run}/certs/ca.pem\nsasl.mechanism=PLAIN\n")
    config.write_text(config.read_text() + "sasl.username=alice\nsasl.password=a\n")
    assert client_sasl(args(dir=str(run), command_config=str(config))) == SaslLogin("PLAIN", "alice", "a")


def test_a_plaintext_run_needs_no_client_properties(tmp_path: Path) -> None:
    run = _planned_run(tmp_path, {})
    assert not (run / "client.properties").exists()
    assert client_sasl(args(dir=str(run))) is None and client_tls(args(dir=str(run))) is None


def test_a_plaintext_client_refused_everywhere_is_told_a_tls_listener_refuses_it_too() -> None:
    from minikafka.client.unreachable import no_broker_reachable

    refused = ["127.0.2.1:1: UNAVAILABLE", "127.0.2.2:1: UNAVAILABLE"]
    assert "--command-config" in str(no_broker_reachable(refused, plaintext=True))
    assert "--command-config" not in str(no_broker_reachable(refused, plaintext=False))
    assert "--command-config" not in str(no_broker_reachable([*refused, "127.0.2.3:1: DEADLINE_EXCEEDED"], True))

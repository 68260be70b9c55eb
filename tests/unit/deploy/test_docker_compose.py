"""docker-compose.yml checked statically against the CLI and the config loader (no Docker engine runs here)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from minikafka.broker.config import BrokerConfig
from minikafka.cli import build_parser
from minikafka.common.config import load_config_file
from minikafka.common.endpoints import parse_host_port
from minikafka.deploy.local_cluster import config_class
from minikafka.kraft_controller.config import ControllerConfig

REPO = Path(__file__).resolve().parents[3]
CONFIG_DIR_IN_IMAGE = "/etc/minikafka/"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def local_config(path_in_image: str) -> Path:
    assert path_in_image.startswith(CONFIG_DIR_IN_IMAGE)
    return REPO / "deploy" / "docker" / path_in_image.removeprefix(CONFIG_DIR_IN_IMAGE)


CERTS = "/var/lib/minikafka/certs"


def nodes(compose: dict) -> dict[str, dict]:
    """The controller and broker services (not the one-shot `certs`)."""
    return {name: service for name, service in compose["services"].items() if name != "certs"}


def test_three_controllers_and_three_brokers(compose: dict) -> None:
    assert sorted(nodes(compose)) == [
        "broker-1",
        "broker-2",
        "broker-3",
        "controller-101",
        "controller-102",
        "controller-103",
    ]


def test_certs_service_makes_every_nodes_certificate_once_before_any_node_starts(compose: dict) -> None:
    command = compose["services"]["certs"]["command"]
    args = build_parser().parse_args(command[1:])
    assert (args.command, args.dir, args.if_missing) == ("certs", CERTS, True)
    labels = {f"controller-{i}" for i in args.controllers} | {f"broker-{i}" for i in args.brokers}
    assert labels == set(nodes(compose)) and "localhost" in args.host
    for name, service in nodes(compose).items():
        assert service["depends_on"]["certs"] == {"condition": "service_completed_successfully"}, name
        assert f"certs:{CERTS}:ro" in service["volumes"], name


def test_the_cas_key_stays_in_a_volume_only_the_certs_service_mounts(compose: dict) -> None:
    certs = compose["services"]["certs"]
    args = build_parser().parse_args(certs["command"][1:])
    assert f"ca:{args.ca_dir}" in certs["volumes"] and args.ca_dir != args.dir
    for name, service in nodes(compose).items():
        assert not [v for v in service["volumes"] if v.split(":")[0] == "ca"], name


def test_node_to_node_links_are_mutual_tls_with_the_nodes_own_certificate_and_no_fault_service(compose: dict) -> None:
    for name, service in nodes(compose).items():
        config = load_config_file(config_class(name.split("-")[0]), local_config(service["command"][-1]))
        tls = config.inter_node_tls
        assert tls is not None and str(tls.ca) == f"{CERTS}/ca.pem", name
        assert (str(tls.certificate), str(tls.key)) == (f"{CERTS}/{name}.pem", f"{CERTS}/{name}.key")
        assert config.fault_injection_enable is False


def test_published_ports_are_on_loopback_and_the_image_runs_unprivileged(compose: dict) -> None:
    for name, service in nodes(compose).items():
        assert all(mapping.startswith("127.0.0.1:") for mapping in service["ports"]), name
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text()
    assert re.search(r"^USER minikafka$", dockerfile, re.M)
    assert "chown -R minikafka:minikafka /var/lib/minikafka" in dockerfile


def test_every_command_is_a_real_subcommand_with_a_valid_config(compose: dict) -> None:
    for name, service in nodes(compose).items():
        command = service["command"]
        assert command[0] == "minikafka"
        args = build_parser().parse_args(command[1:])
        role = name.split("-")[0]
        assert args.command == role
        config = load_config_file(config_class(role), local_config(args.config))
        assert config.node_id == int(name.split("-")[1])
        assert config.data_dir == Path("/var/lib/minikafka/data")
        assert str(config.events_dir) == "/var/lib/minikafka/logs"


def test_voters_name_the_controller_services_and_their_listener_ports(compose: dict) -> None:
    services = nodes(compose)
    for name, service in services.items():
        config = load_config_file(config_class(name.split("-")[0]), local_config(service["command"][-1]))
        for voter_id, (host, port) in config.voters.items():
            assert host == f"controller-{voter_id}"
            controller = services[host]
            controller_config = load_config_file(ControllerConfig, local_config(controller["command"][-1]))
            assert controller_config.listener.port == port
            assert controller["hostname"] == host


def test_published_ports_match_listeners_and_advertised_addresses(compose: dict) -> None:
    seen_host_ports: set[int] = set()
    for name, service in nodes(compose).items():
        config = load_config_file(config_class(name.split("-")[0]), local_config(service["command"][-1]))
        bound_ports = {listener.port for listener in config.bound_listeners}
        for mapping in service["ports"]:
            host_port, container_port = (int(p) for p in mapping.split(":")[-2:])
            assert container_port in bound_ports, f"{name}: {mapping} publishes no listener"
            assert host_port not in seen_host_ports
            seen_host_ports.add(host_port)
        for listener in config.advertised:
            if listener.host == "localhost":  # the host-facing listener: reachable through a published port
                assert any(m.endswith(f":{listener.port}:{listener.port}") for m in service["ports"]), name
            else:
                assert listener.host == service["hostname"], name
        if isinstance(config, BrokerConfig):
            internal = next(x for x in config.advertised if x.name == config.inter_broker_listener)
            assert internal.host == service["hostname"]
            # Kafka's own clients reach every broker from the host (kcat -b localhost:29091 -L).
            assert [x.host for x in config.advertised if x.name in {k.name for k in config.kafka_listeners}] == [
                "localhost"
            ], name


def test_volumes_and_healthchecks(compose: dict) -> None:
    declared = set(compose["volumes"])
    for name, service in nodes(compose).items():
        mounts = dict(volume.split(":")[:2] for volume in service["volumes"])
        assert mounts.get(f"{name}-data") == "/var/lib/minikafka/data"
        assert mounts.get("logs") == "/var/lib/minikafka/logs"
        assert set(mounts) <= declared
        test = service["healthcheck"]["test"]
        config = load_config_file(config_class(name.split("-")[0]), local_config(service["command"][-1]))
        if name.startswith("controller"):  # the controllers' listener is mutual TLS: the admin's certificate
            assert test[:2] == ["CMD", "minikafka"]
            args = build_parser().parse_args(test[2:])
            assert parse_host_port(args.bootstrap_controller)[0] == name
            assert local_config(args.command_config).is_file()
        else:  # registered and unfenced, asked on its plaintext client listener, not its mutual-TLS inter-broker one
            assert test[:4] == ["CMD", "python", "-m", "minikafka.deploy.compose_health"]
            assert int(test[4]) == config.node_id
            host, port = parse_host_port(test[5])
            assert host == name
            assert port != next(x.port for x in config.bound_listeners if x.name == config.inter_broker_listener)


def test_dockerfile_builds_the_image_the_services_use(compose: dict) -> None:
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text()
    assert re.search(r"^COPY deploy/docker/\*\.properties /etc/minikafka/$", dockerfile, re.M)
    assert "pip install" in dockerfile
    builders = [s for s in compose["services"].values() if "build" in s]
    assert builders and all(s["build"]["dockerfile"] == "deploy/Dockerfile" for s in builders)
    assert all(s["image"] == "minikafka:latest" for s in compose["services"].values())


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose is not installed")
def test_docker_compose_config_accepts_the_file() -> None:
    result = subprocess.run(
        ["docker-compose", "-f", str(REPO / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_the_build_context_leaves_out_the_venv_runs_git_and_copied_certificates() -> None:
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines() if line.strip()}
    assert {".venv", "runs", ".git", "compose-certs"} <= ignored


def test_the_image_declares_no_volume_that_would_be_left_behind_anonymous() -> None:
    assert not re.search(r"^VOLUME", (REPO / "deploy" / "Dockerfile").read_text(), re.M)


def test_the_host_side_client_properties_name_the_copied_certificates() -> None:
    from minikafka.client.command_connection import client_security_from_properties

    tls = client_security_from_properties(REPO / "compose-client.properties").tls
    assert tls is not None
    assert (str(tls.ca), str(tls.certificate), str(tls.key)) == (
        "compose-certs/ca.pem", "compose-certs/admin.pem", "compose-certs/admin.key",
    )  # fmt: skip


def test_dependencies_install_before_the_source_is_copied_and_there_is_a_cmd() -> None:
    lines = [line.strip() for line in (REPO / "deploy" / "Dockerfile").read_text().splitlines()]
    copy_source = lines.index("COPY src ./src")
    first_install = next(i for i, line in enumerate(lines) if "pip install" in line)
    assert first_install < copy_source  # a source edit reuses the dependency layer
    assert any("--no-deps" in line for line in lines[copy_source:])
    # the C record walk is built in the image: setup.py is copied with the source, and a compiler is there
    assert lines.index("COPY README.md setup.py ./") < copy_source
    assert any("apt-get install" in line and " gcc " in line for line in lines[copy_source:])
    assert any("import minikafka.common._record_walk" in line for line in lines[copy_source:])
    assert any(line.startswith("CMD [") for line in lines)


def test_nodes_need_no_spark_and_the_analysis_is_an_extra() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith(("pyspark", "matplotlib"))]
    analysis = project["optional-dependencies"]["analysis"]
    assert any(d.startswith("pyspark") for d in analysis) and any(d.startswith("matplotlib") for d in analysis)
    assert '".[dev,analysis]"' in (REPO / "Makefile").read_text()  # make test and make demo install it


def test_the_smoke_script_runs_this_compose_file_and_tears_it_down() -> None:
    script = (REPO / "deploy" / "compose-smoke.sh").read_text()
    assert "-f docker-compose.yml" in script and "down -v" in script
    assert subprocess.run(["bash", "-n", str(REPO / "deploy" / "compose-smoke.sh")]).returncode == 0


def test_fault_stop_waits_as_long_as_the_compose_file_lets_a_node_stop(compose: dict) -> None:
    from minikafka.deploy.compose_faults import STOP_GRACE_S

    assert compose["x-node"]["stop_grace_period"] == f"{STOP_GRACE_S}s"


def test_the_compose_stop_grace_lets_a_broker_finish_its_controlled_shutdown() -> None:
    from minikafka.deploy.compose_faults import STOP_GRACE_S
    from minikafka.deploy.graceful_stop import BROKER_STOP_TIMEOUT_S

    assert STOP_GRACE_S >= BROKER_STOP_TIMEOUT_S

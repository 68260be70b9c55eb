"""`cluster up` gives every broker a Kafka listener beside its gRPC ones (client and inter-broker), and every
controller one beside its quorum listener, and records them in cluster.json; `--kafka-listener NAME` gives every
broker another, on a port of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.common.config import load_config
from minikafka.deploy.local_cluster import (
    Cluster,
    ClusterError,
    create_cluster_certificates,
    node_properties,
    plan_cluster,
)
from minikafka.kraft_controller.config import ControllerConfig


def test_brokers_get_a_plaintext_listener_on_their_own_port(tmp_path: Path) -> None:
    cluster = plan_cluster(tmp_path, controllers=1, brokers=3)
    create_cluster_certificates(cluster)
    ports = [spec.port for spec in cluster.nodes] + [p for s in cluster.brokers for p in (s.kafka_port, s.broker_port)]
    assert len(set(ports)) == len(ports) and all(ports)
    for spec in cluster.brokers:
        config = load_config(BrokerConfig, node_properties(cluster, spec), "test")
        assert [listener.address for listener in config.kafka_listeners] == [spec.kafka_address]
        assert [listener.address for listener in config.grpc_listeners] == [spec.address, spec.inter_node_address]
        assert config.inter_broker_listener == "BROKER"
        assert config.advertised == config.bound_listeners  # written out, as Kafka's server.properties do
        assert (
            config.inter_node_tls is not None and config.inter_node_tls.certificate.name == f"broker-{spec.node_id}.pem"
        )
    controller = cluster.controllers[0]  # the quorum's gRPC listener first, then a Kafka one (KIP-919)
    config = load_config(ControllerConfig, node_properties(cluster, controller), "test")
    assert config.listener.address == controller.address and controller.kafka_address
    assert [listener.address for listener in config.kafka_listeners] == [controller.kafka_address]
    assert cluster.kafka_bootstrap_servers == ",".join(spec.kafka_address or "" for spec in cluster.brokers)


def test_cluster_json_keeps_the_kafka_addresses(tmp_path: Path) -> None:
    cluster = plan_cluster(tmp_path, controllers=1, brokers=2)
    cluster.save()
    loaded = Cluster.load(tmp_path)
    assert [b.kafka_address for b in loaded.brokers] == [b.kafka_address for b in cluster.brokers]
    assert [b.inter_node_address for b in loaded.brokers] == [b.inter_node_address for b in cluster.brokers]
    assert all("kafka_address" in entry for entry in cluster.to_json()["brokers"])


MAP = (
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,GRPC:GRPC,BROKER:GRPC,CONTROLLER:GRPC"
)


def test_further_kafka_listeners_get_ports_of_their_own_and_survive_cluster_json(tmp_path: Path) -> None:
    key, _, value = MAP.partition("=")
    cluster = plan_cluster(tmp_path, 1, 2, {key: value}, kafka_listeners=["ssl", "SASL_SSL"])
    create_cluster_certificates(cluster)
    for spec in cluster.brokers:
        config = load_config(BrokerConfig, node_properties(cluster, spec), "test")
        assert [(listener.name, listener.address) for listener in config.kafka_listeners] == [
            ("PLAINTEXT", spec.kafka_address),
            *spec.further_kafka_addresses.items(),
        ]
        assert list(spec.further_kafka_addresses) == ["SSL", "SASL_SSL"]
    ports = [
        p for s in cluster.nodes for p in (s.port, s.kafka_port, s.broker_port, *dict(s.further_kafka_ports).values())
    ]
    assert len({p for p in ports if p}) == len([p for p in ports if p])
    cluster.save()
    loaded = Cluster.load(tmp_path)
    assert [b.further_kafka_ports for b in loaded.brokers] == [b.further_kafka_ports for b in cluster.brokers]
    assert cluster.further_kafka_bootstrap == {
        name: ",".join(b.further_kafka_addresses[name] for b in cluster.brokers) for name in ("SSL", "SASL_SSL")
    }
    listeners = cluster.security_json()["listeners"]
    assert listeners["SASL_SSL (brokers, Kafka clients)"].startswith("SASL_SSL (server TLS")


@pytest.mark.parametrize(
    ("names", "overrides", "problem"),
    [
        (["SSL"], {}, "must map it"),
        (["GRPC"], {}, "none of"),
        (["SSL", "ssl"], {"listener.security.protocol.map": MAP.partition("=")[2]}, "distinct"),
        (["EXTERNAL"], {"listener.security.protocol.map": "EXTERNAL:GRPC"}, "must map it"),
    ],
)
def test_a_further_kafka_listener_needs_a_kafka_protocol_and_a_name_of_its_own(
    tmp_path: Path, names: list[str], overrides: dict[str, str], problem: str
) -> None:
    with pytest.raises(ClusterError, match=problem):
        plan_cluster(tmp_path, 1, 1, overrides, kafka_listeners=names)

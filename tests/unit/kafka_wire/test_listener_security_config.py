"""The Kafka listener security keys: SSL/SASL protocols in the map, what each needs, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.kafka_wire.listener_security import listener_security
from minikafka.common.config import ConfigError, load_config

BASE = {
    "node.id": "1",
    "process.roles": "broker",
    "controller.quorum.voters": "101@127.0.0.1:9093",
    "log.dirs": "/tmp/unused",
    "listeners": "SECURE://127.0.0.1:9094,GRPC://127.0.0.1:9192",
}


def _load(**props: str) -> BrokerConfig:
    return load_config(BrokerConfig, {**BASE, **props}, "test")


@pytest.mark.parametrize("protocol", ["SSL", "SASL_PLAINTEXT", "SASL_SSL"])
def test_secured_listeners_speak_kafka(protocol: str) -> None:
    config = _load(**{"listener.security.protocol.map": f"SECURE:{protocol},GRPC:GRPC", "ssl.keystore.location": "k"})
    assert [listener.name for listener in config.kafka_listeners] == ["SECURE"]
    assert config.listener_protocol("SECURE") == protocol


def test_tls_needs_a_keystore_and_client_auth_a_truststore() -> None:
    with pytest.raises(ConfigError, match="'ssl.keystore.location'"):
        _load(**{"listener.security.protocol.map": "SECURE:SASL_SSL,GRPC:GRPC"})
    with pytest.raises(ConfigError, match="'ssl.truststore.location'"):
        _load(
            **{
                "listener.security.protocol.map": "SECURE:SSL,GRPC:GRPC",
                "ssl.keystore.location": "k",
                "ssl.client.auth": "required",
            }
        )
    _load(**{"listener.security.protocol.map": "SECURE:SASL_PLAINTEXT,GRPC:GRPC"})  # no TLS: no keystore needed


def test_mechanisms_users_and_keystore_type_are_checked() -> None:
    secure = {"listener.security.protocol.map": "SECURE:SASL_PLAINTEXT,GRPC:GRPC"}
    with pytest.raises(ConfigError, match="'sasl.enabled.mechanisms'"):
        _load(**secure, **{"sasl.enabled.mechanisms": "GSSAPI"})
    with pytest.raises(ConfigError, match="'sasl.plain.users'"):
        _load(**secure, **{"sasl.plain.users": "alice"})
    with pytest.raises(ConfigError, match="'ssl.keystore.type'"):
        _load(**secure, **{"ssl.keystore.type": "JKS"})
    config = _load(**secure, **{"sasl.plain.users": "alice:a:b,bob:secret", "sasl.enabled.mechanisms": "PLAIN"})
    assert config.plain_users == {"alice": "a:b", "bob": "secret"}
    assert listener_security(config, "SECURE").mechanisms == ("PLAIN",)
    assert listener_security(config, "SECURE").ssl_context is None


def test_an_unreadable_keystore_is_one_line_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-keystore.pem"
    bad.write_text("nothing here\n")
    for path in (bad, tmp_path / "missing.pem"):
        config = _load(**{"listener.security.protocol.map": "SECURE:SSL,GRPC:GRPC", "ssl.keystore.location": str(path)})
        with pytest.raises(ConfigError, match="'ssl.keystore.location'") as raised:
            listener_security(config, "SECURE")
        assert "\n" not in str(raised.value)


def test_without_a_keystore_the_listener_shows_the_nodes_certificate(tmp_path: Path) -> None:
    """What `cluster up` gives: a TLS Kafka listener defaults to the node's certificate from the cluster CA."""
    from minikafka.common.certificates import CertificateRequest, ca_certificate_path, create_certificates

    (own,) = create_certificates(tmp_path, [CertificateRequest("broker-1", ("127.0.0.1",))])
    node = {
        "ssl.truststore.location": str(ca_certificate_path(tmp_path)),
        "minikafka.node.ssl.certificate.location": str(own.certificate),
        "minikafka.node.ssl.key.location": str(own.key),
    }
    config = _load(**{"listener.security.protocol.map": "SECURE:SASL_SSL,GRPC:GRPC"}, **node)
    context = listener_security(config, "SECURE").ssl_context
    assert context is not None  # the node's certificate and key loaded (a bad pair raises, below)
    own.key.write_text("not a key\n")
    with pytest.raises(ConfigError, match="'minikafka.node.ssl.certificate.location'") as raised:
        listener_security(config, "SECURE")
    assert "\n" not in str(raised.value)

"""How one Kafka listener is secured (its protocol in listener.security.protocol.map): TLS from the ssl.* keys for
SSL and SASL_SSL, SASL from sasl.enabled.mechanisms for SASL_PLAINTEXT and SASL_SSL."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from minikafka.broker.config import TLS_PROTOCOLS, BrokerConfig
from minikafka.common.config import ConfigError


@dataclass(frozen=True)
class ListenerSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False)
    mechanisms: tuple[str, ...] = ()
    scram_nonce_suffix_ok: bool = False  # sasl.scram.final.nonce.match=suffix

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


PLAINTEXT = ListenerSecurity()


def listener_security(config: BrokerConfig, listener_name: str) -> ListenerSecurity:
    """Raises ConfigError (one line, naming the key) when a key or certificate file cannot be used."""
    protocol = config.listener_protocol(listener_name)
    context = server_ssl_context(config) if protocol in TLS_PROTOCOLS else None
    mechanisms = config.sasl_enabled_mechanisms if protocol.startswith("SASL_") else ()
    return ListenerSecurity(protocol, context, mechanisms, config.sasl_scram_final_nonce_match == "suffix")


@dataclass(frozen=True)
class Keystore:
    """Where a TLS Kafka listener's certificate chain and key come from, and the config key that named them."""

    certificate: str
    key: str | None  # None: in the certificate's file (Kafka's PEM keystore)
    key_name: str


def _keystore(config: BrokerConfig) -> Keystore:
    """ssl.keystore.location, else the node's own certificate from the cluster CA (what `cluster up` issues), so a
    local run's Kafka listener can be SSL or SASL_SSL without a hand-made keystore."""
    if config.ssl_keystore_location:
        return Keystore(config.ssl_keystore_location, None, "ssl.keystore.location")
    return Keystore(
        config.node_ssl_certificate_location,
        config.node_ssl_key_location,
        "minikafka.node.ssl.certificate.location",
    )


def server_ssl_context(config: BrokerConfig) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    keystore = _keystore(config)
    try:
        context.load_cert_chain(keystore.certificate, keystore.key, password=config.ssl_key_password or None)
    except OSError as error:  # ssl.SSLError is one too
        raise ConfigError(
            f"invalid value '{keystore.certificate}' for '{keystore.key_name}': "
            f"{_why(error, 'a PEM private key and certificate chain')}",
            keystore.key_name,
        ) from None
    if config.ssl_client_auth != "none":
        context.verify_mode = ssl.CERT_REQUIRED if config.ssl_client_auth == "required" else ssl.CERT_OPTIONAL
        try:
            context.load_verify_locations(cafile=config.ssl_truststore_location)
        except OSError as error:  # ssl.SSLError is one too
            raise ConfigError(
                f"invalid value '{config.ssl_truststore_location}' for 'ssl.truststore.location': "
                f"{_why(error, 'PEM CA certificates')}",
                "ssl.truststore.location",
            ) from None
    return context


def _why(error: OSError, expected: str) -> str:
    if isinstance(error, ssl.SSLError):  # OpenSSL's reason ("PEM lib", "KEY_VALUES_MISMATCH") names no file
        return f"not {expected} ({error.reason or error})"
    return error.strerror or str(error)

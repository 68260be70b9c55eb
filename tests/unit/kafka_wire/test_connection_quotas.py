"""max.connections and max.connections.per.ip as Kafka counts them, and the cap from the open-file limit."""

from __future__ import annotations

from minikafka.broker.kafka_wire.connection_quotas import (
    Admitted,
    ConnectionQuotas,
    TooManyFromIp,
    effective_max_connections,
)


def test_per_ip_limit_refuses_only_that_ip_and_frees_on_release() -> None:
    quotas = ConnectionQuotas(max_connections=10, max_connections_per_ip=2)
    assert quotas.admit("10.0.0.1") == Admitted()
    assert quotas.admit("10.0.0.1") == Admitted()
    assert quotas.admit("10.0.0.1") == TooManyFromIp("10.0.0.1", 2)
    assert quotas.admit("10.0.0.2") == Admitted()
    assert quotas.total == 3
    quotas.release("10.0.0.1")
    assert quotas.admit("10.0.0.1") == Admitted()


def test_the_broker_wide_limit_is_a_slot_count() -> None:
    quotas = ConnectionQuotas(max_connections=2, max_connections_per_ip=10)
    quotas.admit("a")
    assert quotas.has_slot()
    quotas.admit("b")
    assert not quotas.has_slot()
    quotas.release("a")
    assert quotas.has_slot() and quotas.by_ip == {"b": 1}


def test_clients_get_at_most_half_the_open_file_limit() -> None:
    assert effective_max_connections(2**31 - 1, 20000) == 10000
    assert effective_max_connections(500, 20000) == 500
    assert effective_max_connections(2**31 - 1, -1) == 2**31 - 1  # unlimited files

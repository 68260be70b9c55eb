from __future__ import annotations

from minikafka.common.errors import ErrorCode
from minikafka.pb import common_pb2


def test_proto_enum_mirrors_python_enum() -> None:
    proto = {value.name: value.number for value in common_pb2.DESCRIPTOR.enum_types_by_name["ErrorCode"].values}
    assert proto == {member.name: int(member) for member in ErrorCode}


def test_kafka_numbers() -> None:
    # Spot checks against Kafka's Errors table.
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6
    assert ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND == 20
    assert ErrorCode.NOT_CONTROLLER == 41
    assert ErrorCode.FENCED_LEADER_EPOCH == 74
    assert ErrorCode.STALE_BROKER_EPOCH == 77
    assert ErrorCode.INVALID_UPDATE_VERSION == 95
    assert ErrorCode.DUPLICATE_BROKER_REGISTRATION == 101
    assert ErrorCode.INELIGIBLE_REPLICA == 107
    assert ErrorCode.of(9999) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert ErrorCode.NOT_ENOUGH_REPLICAS.retriable and not ErrorCode.INELIGIBLE_REPLICA.retriable

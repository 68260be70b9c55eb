"""Kafka's error codes, one enum for every per-partition and per-request error.

The numeric values are Kafka's (org.apache.kafka.common.protocol.Errors) so that
logs, tools and tests read the same as they would against a real cluster. The
proto `ErrorCode` enum mirrors this one; a unit test keeps them identical.
"""

from __future__ import annotations

import os
from enum import IntEnum
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from minikafka.pb import common_pb2


class ErrorCode(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128

    @property
    def retriable(self) -> bool:
        """Whether a client should retry (Kafka's RetriableException subclasses)."""
        return self in _RETRIABLE

    @classmethod
    def of(cls, code: int) -> ErrorCode:
        """The enum member for a wire code; unknown codes map to UNKNOWN_SERVER_ERROR as Kafka does."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


_RETRIABLE = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)


class KafkaError(Exception):
    """A whole-request error carrying its Kafka code (rule 4: per-partition errors are values)."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(f"{code.name} ({int(code)}): {message}" if message else f"{code.name} ({int(code)})")
        self.code = code
        self.message = message


class ListenerBindError(Exception):
    """A listener's port could not be bound (Kafka: "Socket server failed to bind to host:port"): the node does not
    start, and says which address, rather than a storage or internal error."""

    def __init__(self, address: str, error: OSError) -> None:
        reason = os.strerror(error.errno) if error.errno else str(error)
        super().__init__(f"Socket server failed to bind to {address}: {reason}")
        self.address = address


def wire_code(code: int) -> common_pb2.ErrorCode:
    """`code` for a message's `error_code` field: protobuf takes any int for an enum field, but the generated stubs
    name only the proto enum's own type (a static view only: the value is returned as it is)."""
    return cast("common_pb2.ErrorCode", code)

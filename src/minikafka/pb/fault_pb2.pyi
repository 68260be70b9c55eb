from minikafka.pb import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InjectDiskFaultRequest(_message.Message):
    __slots__ = ("kind",)
    KIND_FIELD_NUMBER: _ClassVar[int]
    kind: str
    def __init__(self, kind: _Optional[str] = ...) -> None: ...

class InjectDiskFaultResponse(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ...) -> None: ...

class HoldAlterPartitionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HoldAlterPartitionResponse(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ...) -> None: ...

class ReleaseAlterPartitionRequest(_message.Message):
    __slots__ = ("keep_holding",)
    KEEP_HOLDING_FIELD_NUMBER: _ClassVar[int]
    keep_holding: bool
    def __init__(self, keep_holding: _Optional[bool] = ...) -> None: ...

class ReleaseAlterPartitionResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "released_requests")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RELEASED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    released_requests: int
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., released_requests: _Optional[int] = ...) -> None: ...

class DescribeStateRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PartitionReplicaState(_message.Message):
    __slots__ = ("topic", "topic_id", "partition", "is_leader", "leader_id", "leader_epoch", "partition_epoch", "isr", "maximal_isr", "log_start_offset", "log_end_offset", "high_watermark", "isr_state")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    IS_LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    MAXIMAL_ISR_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    ISR_STATE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    topic_id: bytes
    partition: int
    is_leader: bool
    leader_id: int
    leader_epoch: int
    partition_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    maximal_isr: _containers.RepeatedScalarFieldContainer[int]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    isr_state: str
    def __init__(self, topic: _Optional[str] = ..., topic_id: _Optional[bytes] = ..., partition: _Optional[int] = ..., is_leader: _Optional[bool] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., maximal_isr: _Optional[_Iterable[int]] = ..., log_start_offset: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., high_watermark: _Optional[int] = ..., isr_state: _Optional[str] = ...) -> None: ...

class DescribeStateResponse(_message.Message):
    __slots__ = ("error_code", "node_id", "process_role", "broker_epoch", "lifecycle_state", "fenced", "metadata_offset", "alter_partition_held", "held_alter_partition_requests", "partitions", "raft_leader_id", "raft_epoch", "raft_high_watermark")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PROCESS_ROLE_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LIFECYCLE_STATE_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ALTER_PARTITION_HELD_FIELD_NUMBER: _ClassVar[int]
    HELD_ALTER_PARTITION_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    RAFT_LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    RAFT_EPOCH_FIELD_NUMBER: _ClassVar[int]
    RAFT_HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    node_id: int
    process_role: str
    broker_epoch: int
    lifecycle_state: str
    fenced: bool
    metadata_offset: int
    alter_partition_held: bool
    held_alter_partition_requests: int
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionReplicaState]
    raft_leader_id: int
    raft_epoch: int
    raft_high_watermark: int
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., node_id: _Optional[int] = ..., process_role: _Optional[str] = ..., broker_epoch: _Optional[int] = ..., lifecycle_state: _Optional[str] = ..., fenced: _Optional[bool] = ..., metadata_offset: _Optional[int] = ..., alter_partition_held: _Optional[bool] = ..., held_alter_partition_requests: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[PartitionReplicaState, _Mapping]]] = ..., raft_leader_id: _Optional[int] = ..., raft_epoch: _Optional[int] = ..., raft_high_watermark: _Optional[int] = ...) -> None: ...

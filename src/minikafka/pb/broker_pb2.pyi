from minikafka.pb import common_pb2 as _common_pb2
from minikafka.pb import controller_pb2 as _controller_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VerifyTxnPartitionsRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "topics", "add_partitions")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    ADD_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersRequest.Topic]
    add_partitions: bool
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[WriteTxnMarkersRequest.Topic, _Mapping]]] = ..., add_partitions: _Optional[bool] = ...) -> None: ...

class VerifyTxnPartitionsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersResponse.TopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[WriteTxnMarkersResponse.TopicResult, _Mapping]]] = ...) -> None: ...

class WriteTxnMarkersRequest(_message.Message):
    __slots__ = ("markers",)
    class Topic(_message.Message):
        __slots__ = ("name", "partition_indexes")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEXES_FIELD_NUMBER: _ClassVar[int]
        name: str
        partition_indexes: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, name: _Optional[str] = ..., partition_indexes: _Optional[_Iterable[int]] = ...) -> None: ...
    class Marker(_message.Message):
        __slots__ = ("producer_id", "producer_epoch", "transaction_result", "topics", "coordinator_epoch", "transaction_version")
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_RESULT_FIELD_NUMBER: _ClassVar[int]
        TOPICS_FIELD_NUMBER: _ClassVar[int]
        COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_VERSION_FIELD_NUMBER: _ClassVar[int]
        producer_id: int
        producer_epoch: int
        transaction_result: bool
        topics: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersRequest.Topic]
        coordinator_epoch: int
        transaction_version: int
        def __init__(self, producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., transaction_result: _Optional[bool] = ..., topics: _Optional[_Iterable[_Union[WriteTxnMarkersRequest.Topic, _Mapping]]] = ..., coordinator_epoch: _Optional[int] = ..., transaction_version: _Optional[int] = ...) -> None: ...
    MARKERS_FIELD_NUMBER: _ClassVar[int]
    markers: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersRequest.Marker]
    def __init__(self, markers: _Optional[_Iterable[_Union[WriteTxnMarkersRequest.Marker, _Mapping]]] = ...) -> None: ...

class WriteTxnMarkersResponse(_message.Message):
    __slots__ = ("markers",)
    class PartitionResult(_message.Message):
        __slots__ = ("partition_index", "error_code")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: _common_pb2.ErrorCode
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ...) -> None: ...
    class TopicResult(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersResponse.PartitionResult]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[WriteTxnMarkersResponse.PartitionResult, _Mapping]]] = ...) -> None: ...
    class MarkerResult(_message.Message):
        __slots__ = ("producer_id", "topics")
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        TOPICS_FIELD_NUMBER: _ClassVar[int]
        producer_id: int
        topics: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersResponse.TopicResult]
        def __init__(self, producer_id: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[WriteTxnMarkersResponse.TopicResult, _Mapping]]] = ...) -> None: ...
    MARKERS_FIELD_NUMBER: _ClassVar[int]
    markers: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersResponse.MarkerResult]
    def __init__(self, markers: _Optional[_Iterable[_Union[WriteTxnMarkersResponse.MarkerResult, _Mapping]]] = ...) -> None: ...

class SaslRequest(_message.Message):
    __slots__ = ("handshake", "authenticate")
    HANDSHAKE_FIELD_NUMBER: _ClassVar[int]
    AUTHENTICATE_FIELD_NUMBER: _ClassVar[int]
    handshake: SaslHandshakeRequest
    authenticate: SaslAuthenticateRequest
    def __init__(self, handshake: _Optional[_Union[SaslHandshakeRequest, _Mapping]] = ..., authenticate: _Optional[_Union[SaslAuthenticateRequest, _Mapping]] = ...) -> None: ...

class SaslResponse(_message.Message):
    __slots__ = ("handshake", "authenticate")
    HANDSHAKE_FIELD_NUMBER: _ClassVar[int]
    AUTHENTICATE_FIELD_NUMBER: _ClassVar[int]
    handshake: SaslHandshakeResponse
    authenticate: SaslAuthenticateResponse
    def __init__(self, handshake: _Optional[_Union[SaslHandshakeResponse, _Mapping]] = ..., authenticate: _Optional[_Union[SaslAuthenticateResponse, _Mapping]] = ...) -> None: ...

class SaslHandshakeRequest(_message.Message):
    __slots__ = ("mechanism",)
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    mechanism: str
    def __init__(self, mechanism: _Optional[str] = ...) -> None: ...

class SaslHandshakeResponse(_message.Message):
    __slots__ = ("error_code", "mechanisms")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    MECHANISMS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    mechanisms: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., mechanisms: _Optional[_Iterable[str]] = ...) -> None: ...

class SaslAuthenticateRequest(_message.Message):
    __slots__ = ("auth_bytes",)
    AUTH_BYTES_FIELD_NUMBER: _ClassVar[int]
    auth_bytes: bytes
    def __init__(self, auth_bytes: _Optional[bytes] = ...) -> None: ...

class SaslAuthenticateResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "auth_bytes", "session_lifetime_ms", "session_token")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    AUTH_BYTES_FIELD_NUMBER: _ClassVar[int]
    SESSION_LIFETIME_MS_FIELD_NUMBER: _ClassVar[int]
    SESSION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    auth_bytes: bytes
    session_lifetime_ms: int
    session_token: str
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., auth_bytes: _Optional[bytes] = ..., session_lifetime_ms: _Optional[int] = ..., session_token: _Optional[str] = ...) -> None: ...

class InitProducerIdRequest(_message.Message):
    __slots__ = ("transaction_timeout_ms",)
    TRANSACTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    transaction_timeout_ms: int
    def __init__(self, transaction_timeout_ms: _Optional[int] = ...) -> None: ...

class InitProducerIdResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "producer_id", "producer_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    producer_id: int
    producer_epoch: int
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ...) -> None: ...

class ProduceRequest(_message.Message):
    __slots__ = ("acks", "timeout_ms", "topic_data")
    class TopicProduceData(_message.Message):
        __slots__ = ("name", "partition_data")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_DATA_FIELD_NUMBER: _ClassVar[int]
        name: str
        partition_data: _containers.RepeatedCompositeFieldContainer[ProduceRequest.PartitionProduceData]
        def __init__(self, name: _Optional[str] = ..., partition_data: _Optional[_Iterable[_Union[ProduceRequest.PartitionProduceData, _Mapping]]] = ...) -> None: ...
    class PartitionProduceData(_message.Message):
        __slots__ = ("index", "records")
        INDEX_FIELD_NUMBER: _ClassVar[int]
        RECORDS_FIELD_NUMBER: _ClassVar[int]
        index: int
        records: bytes
        def __init__(self, index: _Optional[int] = ..., records: _Optional[bytes] = ...) -> None: ...
    ACKS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_DATA_FIELD_NUMBER: _ClassVar[int]
    acks: int
    timeout_ms: int
    topic_data: _containers.RepeatedCompositeFieldContainer[ProduceRequest.TopicProduceData]
    def __init__(self, acks: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., topic_data: _Optional[_Iterable[_Union[ProduceRequest.TopicProduceData, _Mapping]]] = ...) -> None: ...

class ProduceResponse(_message.Message):
    __slots__ = ("responses", "throttle_time_ms")
    class TopicProduceResponse(_message.Message):
        __slots__ = ("name", "partition_responses")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_RESPONSES_FIELD_NUMBER: _ClassVar[int]
        name: str
        partition_responses: _containers.RepeatedCompositeFieldContainer[ProduceResponse.PartitionProduceResponse]
        def __init__(self, name: _Optional[str] = ..., partition_responses: _Optional[_Iterable[_Union[ProduceResponse.PartitionProduceResponse, _Mapping]]] = ...) -> None: ...
    class PartitionProduceResponse(_message.Message):
        __slots__ = ("index", "error_code", "base_offset", "log_append_time_ms", "log_start_offset", "error_message", "current_leader")
        INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        BASE_OFFSET_FIELD_NUMBER: _ClassVar[int]
        LOG_APPEND_TIME_MS_FIELD_NUMBER: _ClassVar[int]
        LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        CURRENT_LEADER_FIELD_NUMBER: _ClassVar[int]
        index: int
        error_code: _common_pb2.ErrorCode
        base_offset: int
        log_append_time_ms: int
        log_start_offset: int
        error_message: str
        current_leader: _common_pb2.LeaderIdAndEpoch
        def __init__(self, index: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., base_offset: _Optional[int] = ..., log_append_time_ms: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., error_message: _Optional[str] = ..., current_leader: _Optional[_Union[_common_pb2.LeaderIdAndEpoch, _Mapping]] = ...) -> None: ...
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    responses: _containers.RepeatedCompositeFieldContainer[ProduceResponse.TopicProduceResponse]
    throttle_time_ms: int
    def __init__(self, responses: _Optional[_Iterable[_Union[ProduceResponse.TopicProduceResponse, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class ReplicaState(_message.Message):
    __slots__ = ("replica_id", "replica_epoch")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_EPOCH_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    replica_epoch: int
    def __init__(self, replica_id: _Optional[int] = ..., replica_epoch: _Optional[int] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("replica_state", "max_wait_ms", "min_bytes", "max_bytes", "isolation_level", "topics", "session_id", "session_epoch", "forgotten_topics_data")
    class FetchTopic(_message.Message):
        __slots__ = ("topic_id", "topic", "partitions")
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic_id: bytes
        topic: str
        partitions: _containers.RepeatedCompositeFieldContainer[FetchRequest.FetchPartition]
        def __init__(self, topic_id: _Optional[bytes] = ..., topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchRequest.FetchPartition, _Mapping]]] = ...) -> None: ...
    class FetchPartition(_message.Message):
        __slots__ = ("partition", "current_leader_epoch", "fetch_offset", "last_fetched_epoch", "log_start_offset", "partition_max_bytes")
        PARTITION_FIELD_NUMBER: _ClassVar[int]
        CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
        LAST_FETCHED_EPOCH_FIELD_NUMBER: _ClassVar[int]
        LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
        PARTITION_MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
        partition: int
        current_leader_epoch: int
        fetch_offset: int
        last_fetched_epoch: int
        log_start_offset: int
        partition_max_bytes: int
        def __init__(self, partition: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., last_fetched_epoch: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., partition_max_bytes: _Optional[int] = ...) -> None: ...
    class ForgottenTopic(_message.Message):
        __slots__ = ("topic_id", "partitions")
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic_id: bytes
        partitions: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, topic_id: _Optional[bytes] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...
    REPLICA_STATE_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FORGOTTEN_TOPICS_DATA_FIELD_NUMBER: _ClassVar[int]
    replica_state: ReplicaState
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    topics: _containers.RepeatedCompositeFieldContainer[FetchRequest.FetchTopic]
    session_id: int
    session_epoch: int
    forgotten_topics_data: _containers.RepeatedCompositeFieldContainer[FetchRequest.ForgottenTopic]
    def __init__(self, replica_state: _Optional[_Union[ReplicaState, _Mapping]] = ..., max_wait_ms: _Optional[int] = ..., min_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ..., isolation_level: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[FetchRequest.FetchTopic, _Mapping]]] = ..., session_id: _Optional[int] = ..., session_epoch: _Optional[int] = ..., forgotten_topics_data: _Optional[_Iterable[_Union[FetchRequest.ForgottenTopic, _Mapping]]] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("error_code", "throttle_time_ms", "responses", "session_id")
    class FetchableTopicResponse(_message.Message):
        __slots__ = ("topic_id", "topic", "partitions")
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic_id: bytes
        topic: str
        partitions: _containers.RepeatedCompositeFieldContainer[FetchResponse.PartitionData]
        def __init__(self, topic_id: _Optional[bytes] = ..., topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchResponse.PartitionData, _Mapping]]] = ...) -> None: ...
    class PartitionData(_message.Message):
        __slots__ = ("partition_index", "error_code", "high_watermark", "last_stable_offset", "log_start_offset", "diverging_epoch", "current_leader", "records", "aborted_transactions")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
        LAST_STABLE_OFFSET_FIELD_NUMBER: _ClassVar[int]
        LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
        DIVERGING_EPOCH_FIELD_NUMBER: _ClassVar[int]
        CURRENT_LEADER_FIELD_NUMBER: _ClassVar[int]
        RECORDS_FIELD_NUMBER: _ClassVar[int]
        ABORTED_TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: _common_pb2.ErrorCode
        high_watermark: int
        last_stable_offset: int
        log_start_offset: int
        diverging_epoch: _common_pb2.EpochEndOffset
        current_leader: _common_pb2.LeaderIdAndEpoch
        records: bytes
        aborted_transactions: _containers.RepeatedCompositeFieldContainer[FetchResponse.AbortedTransaction]
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., high_watermark: _Optional[int] = ..., last_stable_offset: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., diverging_epoch: _Optional[_Union[_common_pb2.EpochEndOffset, _Mapping]] = ..., current_leader: _Optional[_Union[_common_pb2.LeaderIdAndEpoch, _Mapping]] = ..., records: _Optional[bytes] = ..., aborted_transactions: _Optional[_Iterable[_Union[FetchResponse.AbortedTransaction, _Mapping]]] = ...) -> None: ...
    class AbortedTransaction(_message.Message):
        __slots__ = ("producer_id", "first_offset")
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        FIRST_OFFSET_FIELD_NUMBER: _ClassVar[int]
        producer_id: int
        first_offset: int
        def __init__(self, producer_id: _Optional[int] = ..., first_offset: _Optional[int] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    throttle_time_ms: int
    responses: _containers.RepeatedCompositeFieldContainer[FetchResponse.FetchableTopicResponse]
    session_id: int
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., throttle_time_ms: _Optional[int] = ..., responses: _Optional[_Iterable[_Union[FetchResponse.FetchableTopicResponse, _Mapping]]] = ..., session_id: _Optional[int] = ...) -> None: ...

class ListOffsetsRequest(_message.Message):
    __slots__ = ("replica_id", "isolation_level", "topics")
    class ListOffsetsTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[ListOffsetsRequest.ListOffsetsPartition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ListOffsetsRequest.ListOffsetsPartition, _Mapping]]] = ...) -> None: ...
    class ListOffsetsPartition(_message.Message):
        __slots__ = ("partition_index", "current_leader_epoch", "timestamp")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        current_leader_epoch: int
        timestamp: int
        def __init__(self, partition_index: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., timestamp: _Optional[int] = ...) -> None: ...
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    isolation_level: int
    topics: _containers.RepeatedCompositeFieldContainer[ListOffsetsRequest.ListOffsetsTopic]
    def __init__(self, replica_id: _Optional[int] = ..., isolation_level: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[ListOffsetsRequest.ListOffsetsTopic, _Mapping]]] = ...) -> None: ...

class ListOffsetsResponse(_message.Message):
    __slots__ = ("topics",)
    class ListOffsetsTopicResponse(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[ListOffsetsResponse.ListOffsetsPartitionResponse]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ListOffsetsResponse.ListOffsetsPartitionResponse, _Mapping]]] = ...) -> None: ...
    class ListOffsetsPartitionResponse(_message.Message):
        __slots__ = ("partition_index", "error_code", "timestamp", "offset", "leader_epoch")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        OFFSET_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: _common_pb2.ErrorCode
        timestamp: int
        offset: int
        leader_epoch: int
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., timestamp: _Optional[int] = ..., offset: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[ListOffsetsResponse.ListOffsetsTopicResponse]
    def __init__(self, topics: _Optional[_Iterable[_Union[ListOffsetsResponse.ListOffsetsTopicResponse, _Mapping]]] = ...) -> None: ...

class MetadataRequest(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class MetadataResponse(_message.Message):
    __slots__ = ("brokers", "cluster_id", "controller_id", "topics", "metadata_offset")
    class MetadataResponseBroker(_message.Message):
        __slots__ = ("node_id", "host", "port", "rack")
        NODE_ID_FIELD_NUMBER: _ClassVar[int]
        HOST_FIELD_NUMBER: _ClassVar[int]
        PORT_FIELD_NUMBER: _ClassVar[int]
        RACK_FIELD_NUMBER: _ClassVar[int]
        node_id: int
        host: str
        port: int
        rack: str
        def __init__(self, node_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., rack: _Optional[str] = ...) -> None: ...
    class MetadataResponseTopic(_message.Message):
        __slots__ = ("error_code", "name", "topic_id", "partitions")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        error_code: _common_pb2.ErrorCode
        name: str
        topic_id: bytes
        partitions: _containers.RepeatedCompositeFieldContainer[MetadataResponse.MetadataResponsePartition]
        def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., name: _Optional[str] = ..., topic_id: _Optional[bytes] = ..., partitions: _Optional[_Iterable[_Union[MetadataResponse.MetadataResponsePartition, _Mapping]]] = ...) -> None: ...
    class MetadataResponsePartition(_message.Message):
        __slots__ = ("error_code", "partition_index", "leader_id", "leader_epoch", "replica_nodes", "isr_nodes", "offline_replicas", "partition_epoch", "eligible_leader_replicas", "last_known_elr")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        LEADER_ID_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        REPLICA_NODES_FIELD_NUMBER: _ClassVar[int]
        ISR_NODES_FIELD_NUMBER: _ClassVar[int]
        OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
        PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
        ELIGIBLE_LEADER_REPLICAS_FIELD_NUMBER: _ClassVar[int]
        LAST_KNOWN_ELR_FIELD_NUMBER: _ClassVar[int]
        error_code: _common_pb2.ErrorCode
        partition_index: int
        leader_id: int
        leader_epoch: int
        replica_nodes: _containers.RepeatedScalarFieldContainer[int]
        isr_nodes: _containers.RepeatedScalarFieldContainer[int]
        offline_replicas: _containers.RepeatedScalarFieldContainer[int]
        partition_epoch: int
        eligible_leader_replicas: _containers.RepeatedScalarFieldContainer[int]
        last_known_elr: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., partition_index: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replica_nodes: _Optional[_Iterable[int]] = ..., isr_nodes: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ..., eligible_leader_replicas: _Optional[_Iterable[int]] = ..., last_known_elr: _Optional[_Iterable[int]] = ...) -> None: ...
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    brokers: _containers.RepeatedCompositeFieldContainer[MetadataResponse.MetadataResponseBroker]
    cluster_id: str
    controller_id: int
    topics: _containers.RepeatedCompositeFieldContainer[MetadataResponse.MetadataResponseTopic]
    metadata_offset: int
    def __init__(self, brokers: _Optional[_Iterable[_Union[MetadataResponse.MetadataResponseBroker, _Mapping]]] = ..., cluster_id: _Optional[str] = ..., controller_id: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[MetadataResponse.MetadataResponseTopic, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class OffsetsForLeaderEpochRequest(_message.Message):
    __slots__ = ("replica_id", "topics")
    class OffsetForLeaderTopic(_message.Message):
        __slots__ = ("topic_id", "partitions")
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic_id: bytes
        partitions: _containers.RepeatedCompositeFieldContainer[OffsetsForLeaderEpochRequest.OffsetForLeaderPartition]
        def __init__(self, topic_id: _Optional[bytes] = ..., partitions: _Optional[_Iterable[_Union[OffsetsForLeaderEpochRequest.OffsetForLeaderPartition, _Mapping]]] = ...) -> None: ...
    class OffsetForLeaderPartition(_message.Message):
        __slots__ = ("partition", "current_leader_epoch", "leader_epoch")
        PARTITION_FIELD_NUMBER: _ClassVar[int]
        CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        partition: int
        current_leader_epoch: int
        leader_epoch: int
        def __init__(self, partition: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    topics: _containers.RepeatedCompositeFieldContainer[OffsetsForLeaderEpochRequest.OffsetForLeaderTopic]
    def __init__(self, replica_id: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[OffsetsForLeaderEpochRequest.OffsetForLeaderTopic, _Mapping]]] = ...) -> None: ...

class OffsetsForLeaderEpochResponse(_message.Message):
    __slots__ = ("topics",)
    class OffsetForLeaderTopicResult(_message.Message):
        __slots__ = ("topic_id", "partitions")
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic_id: bytes
        partitions: _containers.RepeatedCompositeFieldContainer[OffsetsForLeaderEpochResponse.EpochEndOffsetResult]
        def __init__(self, topic_id: _Optional[bytes] = ..., partitions: _Optional[_Iterable[_Union[OffsetsForLeaderEpochResponse.EpochEndOffsetResult, _Mapping]]] = ...) -> None: ...
    class EpochEndOffsetResult(_message.Message):
        __slots__ = ("error_code", "partition", "leader_epoch", "end_offset")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        PARTITION_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        END_OFFSET_FIELD_NUMBER: _ClassVar[int]
        error_code: _common_pb2.ErrorCode
        partition: int
        leader_epoch: int
        end_offset: int
        def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., end_offset: _Optional[int] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[OffsetsForLeaderEpochResponse.OffsetForLeaderTopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[OffsetsForLeaderEpochResponse.OffsetForLeaderTopicResult, _Mapping]]] = ...) -> None: ...

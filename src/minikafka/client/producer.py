"""The producer: batches records per partition and sends them to each partition's leader.

Kafka's semantics where it matters for replication experiments: `acks` 0/1/all, `linger.ms` and
`batch.size` batching, retries of retriable errors with a metadata refresh until `delivery.timeout.ms`, and
in-order delivery per partition while `max.in.flight.requests.per.connection` is 1 (with more in flight a
retried batch can land after a later one, as in Kafka without idempotence). Requests to a broker are pipelined
on one ProduceStream, as on a Kafka connection.

`enable.idempotence` is on by default, as in Kafka's Java client since 3.0: the producer takes a producer id
(InitProducerId) and numbers each partition's batches, so a retried batch the broker already holds is answered
with its first offsets instead of being written twice. Left unset, it is silently off when acks, retries or
max.in.flight.requests.per.connection rule it out; set to true beside them it is INVALID_CONFIG.
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import grpc

from minikafka.client.metadata_cache import MetadataCache, PartitionInfo
from minikafka.client.partitioner import partition_for_key
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.clock import client_monotonic_s, wall_ms
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.grpc_support import MAX_MESSAGE_BYTES
from minikafka.common.pipelined_stream import PipelinedStream
from minikafka.common.record_batch import HEADER_SIZE, Header, build_batch
from minikafka.common.rpc_failure import rpc_failure_text
from minikafka.common.tls import TlsFiles
from minikafka.pb import broker_pb2

# Leader moved or is being elected: refresh metadata before the retry.
_REFRESH_ON = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)


INT_MAX = 2**31 - 1
# A request travels as one gRPC message: a larger max.request.size would be refused by the transport, not the broker.
MAX_REQUEST_SIZE_LIMIT = MAX_MESSAGE_BYTES - 64 * 1024


@dataclass(frozen=True)
class RetryNotice:
    """A retriable error a batch got; the producer retries it until delivery.timeout.ms."""

    topic: str
    partition: int
    code: ErrorCode
    message: str


@dataclass(frozen=True)
class ProducerConfig:
    acks: int = -1  # 0, 1 or -1 (all)
    linger_ms: int = 5
    batch_size: int = 16384
    request_timeout_ms: int = 30000
    delivery_timeout_ms: int = 120000
    retry_backoff_ms: int = 100
    max_in_flight_requests_per_connection: int = 1
    max_request_size: int = 1048576
    retries: int = INT_MAX
    enable_idempotence: bool | None = None  # None: Kafka's default, on unless another setting rules it out
    max_block_ms: int = 60000  # how long send() waits for a topic's or partition's metadata

    def __post_init__(self) -> None:
        if self.acks not in (0, 1, -1):
            raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or all, not {self.acks}")
        for field_name, (key, low, high) in _RANGES.items():
            value = getattr(self, field_name)
            if not isinstance(value, int) or not low <= value <= high:
                bound = f"at least {low}" if high == INT_MAX else f"between {low} and {high}"
                raise KafkaError(
                    ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: must be {bound}"
                )
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise KafkaError(
                ErrorCode.INVALID_CONFIG,
                f"delivery.timeout.ms {self.delivery_timeout_ms} must be at least linger.ms + request.timeout.ms "
                f"({self.linger_ms + self.request_timeout_ms})",
            )
        if self.enable_idempotence and self._idempotence_conflict():
            raise KafkaError(
                ErrorCode.INVALID_CONFIG,
                f"enable.idempotence=true needs {self._idempotence_conflict()} (or set enable.idempotence=false)",
            )

    def _idempotence_conflict(self) -> str | None:
        """What rules idempotence out, as Kafka's ProducerConfig checks it."""
        if self.acks != -1:
            return f"acks=all, not acks={self.acks}"
        if self.max_in_flight_requests_per_connection > MAX_IN_FLIGHT_IDEMPOTENT:
            return (
                f"max.in.flight.requests.per.connection at most {MAX_IN_FLIGHT_IDEMPOTENT}, not "
                f"{self.max_in_flight_requests_per_connection}"
            )
        if self.retries == 0:
            return "retries above 0"
        return None

    @property
    def idempotent(self) -> bool:
        if self.enable_idempotence is None:
            return self._idempotence_conflict() is None
        return self.enable_idempotence


# Kafka's ProducerConfig ranges (key, minimum, maximum). request.timeout.ms starts at 1 rather than Kafka's 0: a
# request with no time at all can never be answered, and a zero gRPC deadline would wait forever.
_RANGES: dict[str, tuple[str, int, int]] = {
    "linger_ms": ("linger.ms", 0, INT_MAX),
    "batch_size": ("batch.size", 0, INT_MAX),
    "request_timeout_ms": ("request.timeout.ms", 1, INT_MAX),
    "delivery_timeout_ms": ("delivery.timeout.ms", 0, INT_MAX),
    "retry_backoff_ms": ("retry.backoff.ms", 0, INT_MAX),
    "max_in_flight_requests_per_connection": ("max.in.flight.requests.per.connection", 1, INT_MAX),
    "max_request_size": ("max.request.size", 0, MAX_REQUEST_SIZE_LIMIT),
    "retries": ("retries", 0, INT_MAX),
    "max_block_ms": ("max.block.ms", 0, INT_MAX),
}
MAX_IN_FLIGHT_IDEMPOTENT = 5  # the broker remembers a producer's last 5 batches per partition


# Refused before any append: a batch that only ever got these certainly was not written.
DEFINITE_ERRORS = frozenset(
    {
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.INVALID_REQUIRED_ACKS,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_RECORD,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        # Authorization is checked before the append, as Kafka's produce handling does.
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
)


class DeliveryFailed(KafkaError):
    """A record was not acknowledged.

    `definite`: no attempt can have been appended (every attempt was refused before the append); otherwise the
    write may exist (a timeout, a lost connection, NOT_ENOUGH_REPLICAS_AFTER_APPEND).
    """

    def __init__(self, code: ErrorCode, message: str, definite: bool) -> None:
        super().__init__(code, message)
        self.definite = definite


@dataclass(frozen=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int | None  # None with acks=0: the broker does not say
    leader_epoch: int | None = None


@dataclass(slots=True)
class _Pending:
    """A record awaiting delivery; encoded into its batch as it is (a `RecordLike`, no `Record` made per record)."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    deadline: float
    future: asyncio.Future[RecordMetadata]
    size: int  # counted against batch.size: key and value plus a record's overhead
    headers: tuple[Header, ...] = ()


_RECORD_OVERHEAD = 16  # what a record adds to its batch beyond key and value, roughly (batch.size accounting)


@dataclass(frozen=True)
class ProducerIdentity:
    """What InitProducerId gave: the id and epoch every batch of this producer carries."""

    producer_id: int
    producer_epoch: int


@dataclass(frozen=True)
class _BatchSequence:
    identity: ProducerIdentity
    base_sequence: int


@dataclass
class _PartitionQueue:
    topic: str
    partition: int
    records: deque[_Pending] = field(default_factory=deque)  # popleft: draining a long queue stays linear
    size_bytes: int = 0
    first_enqueued: float = 0.0
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    sender: asyncio.Task[None] | None = None


class Producer:
    def __init__(
        self,
        bootstrap_servers: Sequence[str],
        config: ProducerConfig | None = None,
        on_retry: Callable[[RetryNotice], None] | None = None,
        tls: TlsFiles | None = None,
        sasl: SaslLogin | None = None,
    ) -> None:
        self.config = config or ProducerConfig()
        self._on_retry = on_retry
        self._delivery_timeout_s = self.config.delivery_timeout_ms / 1000
        self.metadata = MetadataCache(bootstrap_servers, self.config.request_timeout_ms / 1000, tls, sasl)
        self._queues: dict[tuple[str, int], _PartitionQueue] = {}
        self._sticky: dict[str, int] = {}
        self._in_flight: dict[tuple[str, int], asyncio.Semaphore] = {}
        self._deliveries: set[asyncio.Task[None]] = set()
        # One ProduceStream per broker: requests pipelined on it as on a Kafka connection, answered in order.
        self._streams: dict[str, PipelinedStream[broker_pb2.ProduceRequest, broker_pb2.ProduceResponse]] = {}
        self._flushing = False
        self._closed = False
        # Idempotence: the producer id, each partition's next sequence, and the sequences not yet resolved.
        self._identity: ProducerIdentity | None = None
        self._identity_task: asyncio.Task[ProducerIdentity] | None = None
        self._next_sequence: dict[tuple[str, int], int] = {}
        self._unresolved: dict[tuple[str, int], set[int]] = {}

    async def send(
        self, topic: str, value: bytes | None, key: bytes | None = None, partition: int | None = None
    ) -> asyncio.Future[RecordMetadata]:
        """Enqueue one record; the returned future resolves when it is acknowledged (or fails)."""
        if self._closed:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "producer is closed")
        partitions = self.metadata.view.topics.get(topic)  # known: no coroutine on the per-record path
        if partitions is None or (partition is not None and partition not in partitions):
            partitions = await self._wait_on_metadata(topic, partition)
        if partition is None:
            partition = self._choose_partition(topic, key, len(partitions))
        loop = asyncio.get_running_loop()  # once a record: each lookup is a system call
        now = client_monotonic_s(loop)
        future: asyncio.Future[RecordMetadata] = loop.create_future()
        size = (len(value) if value else 0) + (len(key) if key else 0) + _RECORD_OVERHEAD
        if HEADER_SIZE + size > self.config.max_request_size:
            # As Kafka's send(): a record no request may carry fails at once instead of being retried.
            message = (
                f"the record is {HEADER_SIZE + size} bytes when serialized, more than max.request.size "
                f"{self.config.max_request_size}"
            )
            future.set_exception(DeliveryFailed(ErrorCode.MESSAGE_TOO_LARGE, message, definite=True))
            return future
        queue = self._queue(topic, partition)
        if not queue.records:
            queue.first_enqueued = now
        queue.records.append(_Pending(key, value, wall_ms(loop), now + self._delivery_timeout_s, future, size))
        queue.size_bytes += size
        queue.wake.set()
        return future

    async def _wait_on_metadata(self, topic: str, partition: int | None) -> dict[int, PartitionInfo]:
        """As Kafka's producer waits in send(): metadata refreshed until it holds the topic (and the partition
        asked for), for up to max.block.ms. Brokers learn a topic a moment after the controller commits it."""
        deadline = client_monotonic_s() + self.config.max_block_ms / 1000
        while True:
            view = await self.metadata.refresh([topic])  # no broker reachable: BROKER_NOT_AVAILABLE at once
            partitions = view.topics.get(topic)
            if partitions is not None and (partition is None or partition in partitions):
                return partitions
            code = view.topic_errors.get(topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            if not code.retriable:
                raise KafkaError(code, f"topic '{topic}'")
            if client_monotonic_s() >= deadline:
                what = f"topic '{topic}'" if partitions is None else f"partition {partition} of topic '{topic}'"
                count = "" if partitions is None else f" (it has {len(partitions)})"
                raise KafkaError(code, f"{what} not present in metadata after {self.config.max_block_ms} ms{count}")
            await asyncio.sleep(min(self.config.retry_backoff_ms / 1000, max(deadline - client_monotonic_s(), 0)))

    def _choose_partition(self, topic: str, key: bytes | None, count: int) -> int:
        if key is not None:
            return partition_for_key(key, count)
        # Sticky: keyless records fill one partition's batch, then move on (Kafka's KIP-480 idea).
        current = self._sticky.get(topic, 0) % count
        queue = self._queues.get((topic, current))
        if queue is not None and self._holds_full_batch(queue):
            current = (current + 1) % count
        self._sticky[topic] = current
        return current

    def _queue(self, topic: str, partition: int) -> _PartitionQueue:
        key = (topic, partition)
        queue = self._queues.get(key)
        if queue is None:
            queue = _PartitionQueue(topic, partition)
            self._queues[key] = queue
            self._in_flight[key] = asyncio.Semaphore(self.config.max_in_flight_requests_per_connection)
            queue.sender = asyncio.create_task(self._run_sender(queue), name=f"producer-sender-{topic}-{partition}")
        return queue

    async def _run_sender(self, queue: _PartitionQueue) -> None:
        linger = self.config.linger_ms / 1000
        semaphore = self._in_flight[(queue.topic, queue.partition)]
        while True:
            if not queue.records:
                if self._closed:
                    return
                queue.wake.clear()
                await queue.wake.wait()
                continue
            ready_at = queue.first_enqueued + linger
            full = self._holds_full_batch(queue)
            if not full and not self._flushing and not self._closed and client_monotonic_s() < ready_at:
                queue.wake.clear()
                try:
                    await asyncio.wait_for(queue.wake.wait(), max(0.0, ready_at - client_monotonic_s()))
                except TimeoutError:
                    pass
                continue
            try:
                identity = await self._producer_identity() if self.config.idempotent else None
            except KafkaError as error:
                _fail(self._drain(queue), DeliveryFailed(error.code, error.message, definite=True))
                continue
            except Exception as error:  # never leave a caller's future hanging
                _fail(self._drain(queue), DeliveryFailed(ErrorCode.UNKNOWN_SERVER_ERROR, repr(error), definite=True))
                continue
            batch = self._drain(queue)
            # Encoded before waiting for an in-flight slot, so the encoding overlaps the request in flight.
            try:
                request, sequence = self._produce_request(queue.topic, queue.partition, batch, identity)
            except Exception as error:  # never leave a caller's future hanging
                _fail(batch, DeliveryFailed(ErrorCode.UNKNOWN_SERVER_ERROR, repr(error), definite=True))
                continue
            slot_taken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            task = asyncio.create_task(
                self._deliver(queue.topic, queue.partition, batch, request, semaphore, slot_taken, sequence)
            )
            self._deliveries.add(task)  # flush() waits for these, so for this batch too
            task.add_done_callback(self._deliveries.discard)
            await slot_taken  # the next batch is drained once this one is on its way

    def _holds_full_batch(self, queue: _PartitionQueue) -> bool:
        """Whether the queued records overflow one batch: its first batch can take no more (Kafka's "full")."""
        return HEADER_SIZE + queue.size_bytes > self.config.batch_size

    def _drain(self, queue: _PartitionQueue) -> list[_Pending]:
        # As Kafka's accumulator: a record joins the batch only if the batch stays within batch.size, header
        # included; a first record larger than that goes alone.
        taken: list[_Pending] = []
        size = HEADER_SIZE
        while queue.records and (not taken or size + queue.records[0].size <= self.config.batch_size):
            record = queue.records.popleft()
            size += record.size
            taken.append(record)
        size -= HEADER_SIZE
        queue.size_bytes = max(0, queue.size_bytes - size)
        queue.first_enqueued = client_monotonic_s()
        return taken

    def _produce_request(
        self, topic: str, partition: int, pending: list[_Pending], identity: ProducerIdentity | None
    ) -> tuple[broker_pb2.ProduceRequest, _BatchSequence | None]:
        """The request for one batch; an idempotent producer numbers it (a retry resends these very bytes)."""
        request = broker_pb2.ProduceRequest(acks=self.config.acks, timeout_ms=self.config.request_timeout_ms)
        sequence = None
        if identity is None:
            records = build_batch(pending)
        else:
            key = (topic, partition)
            base = self._next_sequence.get(key, 0)
            records = build_batch(
                pending,
                producer_id=identity.producer_id,
                producer_epoch=identity.producer_epoch,
                base_sequence=base,
            )
            self._next_sequence[key] = (base + len(pending)) % (INT_MAX + 1)
            self._unresolved.setdefault(key, set()).add(base)
            sequence = _BatchSequence(identity, base)
        request.topic_data.add(name=topic).partition_data.add(index=partition, records=records)
        return request, sequence

    async def _producer_identity(self) -> ProducerIdentity:
        """The producer id, asked of a broker once (and again after a reset)."""
        if self._identity is not None:
            return self._identity
        if self._identity_task is None or self._identity_task.done():
            self._identity_task = asyncio.create_task(self._init_producer_id())
        task = self._identity_task
        identity = await task
        if self._identity_task is task:
            self._identity = identity
        return identity

    async def _init_producer_id(self) -> ProducerIdentity:
        deadline = client_monotonic_s() + self._delivery_timeout_s
        last = "no broker answered"
        attempt = 0
        while client_monotonic_s() < deadline:
            brokers = list(self.metadata.view.brokers.values()) or self.metadata.bootstrap
            address = brokers[attempt % len(brokers)]
            attempt += 1
            try:
                response = await self.metadata.stub(address).InitProducerId(
                    broker_pb2.InitProducerIdRequest(), timeout=self.config.request_timeout_ms / 1000
                )
            except grpc.RpcError as error:
                last = rpc_failure_text(address, error)
            else:
                code = ErrorCode.of(response.error_code)
                if code == ErrorCode.NONE:
                    return ProducerIdentity(response.producer_id, response.producer_epoch)
                if not code.retriable:
                    raise KafkaError(code, response.error_message)
                last = f"{code.name}: {response.error_message}"
            await self._refresh_and_back_off_any()
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"InitProducerId: {last}")

    async def _refresh_and_back_off_any(self) -> None:
        await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        try:
            await self.metadata.refresh([])
        except KafkaError:
            pass

    def _reset_producer_id(self, sequence: _BatchSequence) -> None:
        """After a failed batch its partition's sequences have a gap, or a batch of unknown fate: like Kafka's
        idempotent producer, take a new producer id, every partition's sequences from 0 (once per failure)."""
        if self._identity == sequence.identity:
            self._identity = None
            self._identity_task = None
            self._next_sequence.clear()
            self._unresolved.clear()

    async def _deliver(
        self,
        topic: str,
        partition: int,
        pending: list[_Pending],
        request: broker_pb2.ProduceRequest,
        semaphore: asyncio.Semaphore,
        slot_taken: asyncio.Future[None],
        sequence: _BatchSequence | None = None,
    ) -> None:
        # The slot is awaited here, not in the sender: the answer that frees it wakes this task first, so the
        # request leaves before that answer's records are completed (with one request in flight, every callback
        # run first is a gap on the wire: p50 from an answer to the next write 117-145 -> 68-90 us, measured).
        try:
            await semaphore.acquire()
        finally:
            slot_taken.set_result(None)
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                semaphore.release()

        try:
            await self._deliver_batch(topic, partition, pending, request, release, sequence)
        except Exception as error:  # never leave a caller's future hanging
            _fail(pending, DeliveryFailed(ErrorCode.UNKNOWN_SERVER_ERROR, repr(error), definite=False))
        finally:
            release()
            if sequence is not None:
                self._unresolved.get((topic, partition), set()).discard(sequence.base_sequence)

    async def _deliver_batch(
        self,
        topic: str,
        partition: int,
        pending: list[_Pending],
        request: broker_pb2.ProduceRequest,
        release: Callable[[], None],
        sequence: _BatchSequence | None = None,
    ) -> None:
        deadline = min(p.deadline for p in pending)
        last_error = ErrorCode.REQUEST_TIMED_OUT
        last_message = "no attempt finished"
        definite = True  # until an attempt may have reached a leader's log
        answered = False  # whether a broker has answered an attempt (last_error is its answer)
        attempts = 0
        while client_monotonic_s() < deadline and attempts <= self.config.retries:
            attempts += 1
            address = self.metadata.leader_address(topic, partition)
            if address is None:
                await self._refresh_and_back_off(topic)
                last_error, last_message = ErrorCode.LEADER_NOT_AVAILABLE, "no leader known"
                continue
            timeout = min(self.config.request_timeout_ms / 1000, max(0.001, deadline - client_monotonic_s()))
            try:
                response = await self._stream(address).call(request, timeout)
            except grpc.RpcError as error:
                definite = False
                if answered and _ran_out(error, deadline):
                    # The attempt was cut off by delivery.timeout.ms, not failed by the network: the broker's last
                    # answer says why the records failed (on a loaded machine it may be a few milliseconds late).
                    last_message += " (delivery.timeout.ms ran out during the next attempt)"
                    break
                last_error, last_message = ErrorCode.NETWORK_EXCEPTION, f"{address}: {error.code().name}"
                if self._on_retry is not None:
                    self._on_retry(RetryNotice(topic, partition, last_error, last_message))
                await self._refresh_and_back_off(topic)
                continue
            except KafkaError as error:  # a new stream's SASL login refused: nothing was sent
                last_error, last_message = error.code, error.message
                if not error.code.retriable:
                    break
                await self._refresh_and_back_off(topic)
                continue
            result = response.responses[0].partition_responses[0]
            code = ErrorCode.of(result.error_code)
            answered = True
            if code == ErrorCode.NONE:
                # The in-flight slot first: the next batch is sent before this one's callbacks run (a caller's
                # callbacks may queue more records, and with one request in flight every wait is a gap on the wire).
                release()
                _complete(pending, topic, partition, result.base_offset if self.config.acks != 0 else None)
                return
            last_error, last_message = code, result.error_message
            definite = definite and code in DEFINITE_ERRORS
            if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and self._earlier_unresolved(topic, partition, sequence):
                # An earlier batch of this partition is still being retried (another leader, a lost answer): this
                # one waits for it, as Kafka's producer requeues it behind it.
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
                continue
            if not code.retriable:
                break
            if self._on_retry is not None:
                self._on_retry(RetryNotice(topic, partition, code, result.error_message))
            if code in _REFRESH_ON:
                await self._refresh_and_back_off(topic)
            else:
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        if client_monotonic_s() >= deadline and last_error not in DEFINITE_ERRORS:
            definite = False
        if sequence is not None:  # the partition's sequence has a gap (or an unknown batch) from here on
            self._reset_producer_id(sequence)
        _fail(pending, DeliveryFailed(last_error, last_message, definite))

    def _earlier_unresolved(self, topic: str, partition: int, sequence: _BatchSequence | None) -> bool:
        if sequence is None or self._identity != sequence.identity:
            return False
        return any(base < sequence.base_sequence for base in self._unresolved.get((topic, partition), ()))

    def _stream(self, address: str) -> PipelinedStream[broker_pb2.ProduceRequest, broker_pb2.ProduceResponse]:
        if address not in self._streams:
            self._streams[address] = PipelinedStream(
                functools.partial(self.metadata.open_stream, address, lambda stub: stub.ProduceStream)
            )
        return self._streams[address]

    async def _refresh_and_back_off(self, topic: str) -> None:
        await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        try:
            await self.metadata.refresh([topic])
        except KafkaError:
            pass  # every broker unreachable right now: the next attempt tries again

    async def flush(self) -> None:
        """Send everything queued now and wait until each record is acknowledged or failed."""
        self._flushing = True
        try:
            futures = [p.future for q in self._queues.values() for p in q.records]
            for queue in self._queues.values():
                queue.wake.set()
            while futures or self._deliveries:
                await asyncio.gather(*futures, *list(self._deliveries), return_exceptions=True)
                futures = [p.future for q in self._queues.values() for p in q.records]
        finally:
            self._flushing = False

    async def close(self) -> None:
        await self.flush()
        self._closed = True
        for queue in self._queues.values():
            queue.wake.set()
        await asyncio.gather(*(q.sender for q in self._queues.values() if q.sender), return_exceptions=True)
        for stream in self._streams.values():
            await stream.close()
        await self.metadata.close()


async def delivery_outcome(
    future: asyncio.Future[RecordMetadata],
) -> tuple[RecordMetadata | None, DeliveryFailed | None]:
    """(metadata, None) once the record is acknowledged; (None, the failure) when its delivery failed."""
    try:
        return await future, None
    except DeliveryFailed as error:
        return None, error


def _complete(pending: list[_Pending], topic: str, partition: int, base_offset: int | None) -> None:
    for index, record in enumerate(pending):
        if not record.future.done():
            offset = None if base_offset is None else base_offset + index
            record.future.set_result(RecordMetadata(topic, partition, offset))


def _ran_out(error: grpc.RpcError, deadline: float) -> bool:
    """Whether a call failed because the delivery deadline it was given has passed."""
    return error.code() == grpc.StatusCode.DEADLINE_EXCEEDED and client_monotonic_s() >= deadline


def _fail(pending: list[_Pending], error: DeliveryFailed) -> None:
    for record in pending:
        if not record.future.done():
            record.future.set_exception(error)

"""The consumer: reads assigned partitions from their leaders, below the high watermark, following leader changes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from minikafka.client.metadata_cache import MetadataCache
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.clock import client_monotonic_s
from minikafka.common.control_batch import read_marker
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import RecordBatch, iter_batches
from minikafka.common.tls import TlsFiles
from minikafka.pb import broker_pb2

EARLIEST = -2
LATEST = -1


READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # Kafka's isolation levels


class AbortedProducers:
    """Kafka's consumer-side filtering of a read_committed fetch: from each aborted transaction's first offset
    until its ABORT marker, that producer's transactional batches are dropped; control batches never show."""

    def __init__(self, aborted: list[tuple[int, int]]) -> None:
        self._pending = sorted(aborted, key=lambda txn: txn[1])  # (producer id, first offset)
        self._active: set[int] = set()

    def skips(self, batch: RecordBatch) -> bool:
        while self._pending and self._pending[0][1] <= batch.last_offset:
            self._active.add(self._pending.pop(0)[0])
        if batch.is_control:
            marker = read_marker(batch)
            if marker is not None and not marker.commit:
                self._active.discard(batch.producer_id)
            return True
        return batch.is_transactional and batch.producer_id in self._active


@dataclass(frozen=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    leader_epoch: int
    timestamp_ms: int
    # The topic id the leader answered for: a topic deleted and created again under its name is another topic.
    topic_id: uuid.UUID | None = None

    def to_json(self) -> dict[str, object]:
        """The consume line (docs/events.md): values as text (the CLI writes UTF-8 with replacement)."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "key": None if self.key is None else self.key.decode("utf-8", "replace"),
            "value": None if self.value is None else self.value.decode("utf-8", "replace"),
            "leader_epoch": self.leader_epoch,
            "topic_id": None if self.topic_id is None else str(self.topic_id),
        }


@dataclass(frozen=True)
class ConsumerConfig:
    fetch_max_wait_ms: int = 500
    fetch_min_bytes: int = 1
    fetch_max_bytes: int = 52428800
    max_partition_fetch_bytes: int = 1048576
    request_timeout_ms: int = 30000
    retry_backoff_ms: int = 100
    default_api_timeout_ms: int = 60000  # how long a blocking call (finding a leader, an offset) keeps retrying
    check_crcs: bool = True  # check.crcs: a batch whose CRC does not match is never delivered
    isolation_level: int = READ_UNCOMMITTED  # isolation.level; READ_COMMITTED: below the LSO, aborted records dropped


@dataclass(frozen=True)
class ReadEnd:
    """Where a partition's read stopped: its position, the last high watermark a leader reported, and the error
    that kept it from going further (None when the last fetch succeeded)."""

    topic: str
    partition: int
    start_offset: int | None
    position: int | None
    high_watermark: int | None
    error: str | None
    # ListOffsets(LATEST) asked once the read was caught up: the leader answers it only once its HWM has reached its
    # epoch start offset, so a log end at or below the position means nothing acknowledged lies beyond it.
    log_end: int | None = None
    isolation_level: str = "read_uncommitted"  # read_committed: records of aborted transactions are not returned

    @property
    def reached(self) -> bool:
        return (
            self.error is None
            and self.position is not None
            and self.high_watermark is not None
            and self.position >= self.high_watermark
        )

    def to_json(self) -> dict[str, object]:
        """The `read_end` line `consume --json` writes after a partition's records (docs/events.md)."""
        return {
            "type": "read_end",
            "topic": self.topic,
            "partition": self.partition,
            "start_offset": self.start_offset,
            "position": self.position,
            "high_watermark": self.high_watermark,
            "reached": self.reached,
            "error": self.error,
            "log_end": self.log_end,
            "isolation_level": self.isolation_level,
        }

    @property
    def complete(self) -> bool:
        """The read reached the whole log: an acknowledged offset at or past the position is not in it."""
        return self.reached and self.log_end is not None and self.position is not None and self.log_end <= self.position


@dataclass
class _FetchState:
    start_offset: int | None = None
    high_watermark: int | None = None
    error: str | None = None
    log_end: int | None = None


class Consumer:
    """Manual assignment (no group coordinator): `assign`, then `poll` repeatedly."""

    def __init__(
        self,
        bootstrap_servers: Sequence[str],
        config: ConsumerConfig | None = None,
        tls: TlsFiles | None = None,
        sasl: SaslLogin | None = None,
    ) -> None:
        self.config = config or ConsumerConfig()
        self.metadata = MetadataCache(bootstrap_servers, self.config.request_timeout_ms / 1000, tls, sasl)
        self.positions: dict[tuple[str, int], int] = {}
        self.fetch_states: dict[tuple[str, int], _FetchState] = {}

    def _deadline(self) -> float:
        return client_monotonic_s() + self.config.default_api_timeout_ms / 1000

    async def assign(self, topic: str, partitions: Sequence[int] | None = None, start: int = EARLIEST) -> None:
        """Assign partitions (all when None) starting at `start`: an offset, EARLIEST or LATEST. Finding the topic
        and each start offset retries retriable errors for up to default.api.timeout.ms, as Kafka's consumer does."""
        known = await self._require_topic(topic, self._deadline())
        chosen = sorted(known) if partitions is None else list(partitions)
        for partition in chosen:
            if partition not in known:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{topic}' has no partition {partition}")
            self.fetch_states[(topic, partition)] = _FetchState()
        for partition in chosen:
            position = start if start >= 0 else await self.list_offset(topic, partition, start)
            self.positions[(topic, partition)] = position
            self.fetch_states[(topic, partition)].start_offset = position

    async def _require_topic(self, topic: str, deadline: float) -> dict:
        """The topic's partitions once a broker knows it (a new topic's metadata takes a moment to propagate)."""
        while True:
            try:
                return await self.metadata.require_topic(topic)
            except KafkaError as error:
                if not error.code.retriable and error.code != ErrorCode.BROKER_NOT_AVAILABLE:
                    raise
                if client_monotonic_s() >= deadline:
                    raise KafkaError(error.code, f"{error.message} (gave up after default.api.timeout.ms)") from None
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)

    def read_ends(self) -> list[ReadEnd]:
        """Where each assigned partition's read stands (after the last poll)."""
        return [
            ReadEnd(
                topic,
                partition,
                state.start_offset,
                self.positions.get((topic, partition)),
                state.high_watermark,
                state.error,
                state.log_end,
                "read_committed" if self.config.isolation_level == READ_COMMITTED else "read_uncommitted",
            )
            for (topic, partition), state in sorted(self.fetch_states.items())
        ]

    async def confirm_log_ends(self) -> None:
        """For each partition read up to its HWM, ask its leader for the latest offset (ListOffsets LATEST), which
        it answers only once its HWM covers its epoch start: read_end then says whether the read saw the whole log."""
        for end in self.read_ends():
            if not end.reached:
                continue
            state = self.fetch_states[(end.topic, end.partition)]
            try:
                state.log_end = await self.list_offset(end.topic, end.partition, LATEST)
            except KafkaError:
                state.log_end = None  # not confirmed: the analysis counts what lies beyond as unknown, not lost
            state.error = None

    def caught_up(self) -> bool:
        """Every assigned partition was read up to the high watermark its leader last reported."""
        return all(end.reached for end in self.read_ends())

    def _failed(self, topic: str, partition: int, code: ErrorCode) -> None:
        state = self.fetch_states.setdefault((topic, partition), _FetchState())
        state.error = code.name

    async def list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        """ListOffsets against the leader: EARLIEST is the log start offset, LATEST the high watermark. Retries
        retriable errors, refreshing metadata, until default.api.timeout.ms has passed."""
        deadline = self._deadline()
        while True:
            address = self.metadata.leader_address(topic, partition)
            last = ErrorCode.LEADER_NOT_AVAILABLE
            if address is not None:
                request = broker_pb2.ListOffsetsRequest(replica_id=-1)
                request.topics.add(name=topic).partitions.add(
                    partition_index=partition, timestamp=timestamp, current_leader_epoch=-1
                )
                try:
                    response = await self.metadata.stub(address).ListOffsets(
                        request, timeout=self.config.request_timeout_ms / 1000
                    )
                    result = response.topics[0].partitions[0]
                    last = ErrorCode.of(result.error_code)
                    if last == ErrorCode.NONE:
                        return result.offset
                    if not last.retriable:
                        self._failed(topic, partition, last)
                        raise KafkaError(last, f"ListOffsets {topic}-{partition}")
                except grpc.RpcError:
                    last = ErrorCode.NETWORK_EXCEPTION
            if client_monotonic_s() >= deadline:
                self._failed(topic, partition, last)
                raise KafkaError(
                    last,
                    f"no leader answered ListOffsets for {topic}-{partition} within default.api.timeout.ms "
                    f"({self.config.default_api_timeout_ms} ms)",
                )
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)
            await self._refresh(topic)

    async def poll(self) -> list[ConsumerRecord]:
        """One round of fetches (one request per leader, in parallel); records in offset order per partition."""
        by_leader: dict[str, list[tuple[str, int]]] = {}
        missing_leader = set()
        for topic, partition in self.positions:
            address = self.metadata.leader_address(topic, partition)
            if address is None:
                self._failed(topic, partition, ErrorCode.LEADER_NOT_AVAILABLE)
                missing_leader.add(topic)
            else:
                by_leader.setdefault(address, []).append((topic, partition))
        for topic in missing_leader:
            await self._refresh(topic)
        if not by_leader:
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)
            return []
        results = await asyncio.gather(*(self._fetch(address, tps) for address, tps in by_leader.items()))
        return [record for records in results for record in records]

    async def _fetch(self, address: str, partitions: list[tuple[str, int]]) -> list[ConsumerRecord]:
        request = broker_pb2.FetchRequest(
            max_wait_ms=self.config.fetch_max_wait_ms,
            min_bytes=self.config.fetch_min_bytes,
            max_bytes=self.config.fetch_max_bytes,
            isolation_level=self.config.isolation_level,
        )
        topics: dict[str, broker_pb2.FetchRequest.FetchTopic] = {}
        for topic, partition in partitions:
            if topic not in topics:
                topics[topic] = request.topics.add(topic=topic, topic_id=self.metadata.view.topic_ids.get(topic, b""))
            topics[topic].partitions.add(
                partition=partition,
                current_leader_epoch=-1,
                fetch_offset=self.positions[(topic, partition)],
                last_fetched_epoch=-1,
                partition_max_bytes=self.config.max_partition_fetch_bytes,
            )
        timeout = self.config.request_timeout_ms / 1000 + self.config.fetch_max_wait_ms / 1000
        try:
            response = await self.metadata.stub(address).Fetch(request, timeout=timeout)
        except grpc.RpcError:
            for topic, partition in partitions:
                self._failed(topic, partition, ErrorCode.NETWORK_EXCEPTION)
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)  # a dead leader refuses at once: no busy loop
            for topic in {t for t, _ in partitions}:
                await self._refresh(topic)
            return []
        records: list[ConsumerRecord] = []
        for topic_response in response.responses:
            topic = topic_response.topic
            topic_id = uuid.UUID(bytes=topic_response.topic_id) if len(topic_response.topic_id) == 16 else None
            for data in topic_response.partitions:
                records += self._handle_partition(topic, data, topic_id)
        return records

    def _handle_partition(
        self, topic: str, data: broker_pb2.FetchResponse.PartitionData, topic_id: uuid.UUID | None = None
    ) -> list[ConsumerRecord]:
        key = (topic, data.partition_index)
        code = ErrorCode.of(data.error_code)
        if code != ErrorCode.NONE:
            self._failed(topic, data.partition_index, code)
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                raise KafkaError(code, f"{topic}-{data.partition_index} offset {self.positions[key]} is out of range")
            if code.retriable:  # the leader moved or our metadata is stale: forget it, the next poll refreshes
                self.metadata.forget_leader(topic, data.partition_index)
                return []
            raise KafkaError(code, f"fetch {topic}-{data.partition_index}")
        position = self.positions[key]
        state = self.fetch_states.setdefault(key, _FetchState())
        state.high_watermark, state.error = data.high_watermark, None
        records = []
        committed = self.config.isolation_level == READ_COMMITTED
        visible_below = data.last_stable_offset if committed else data.high_watermark
        aborted = AbortedProducers([(t.producer_id, t.first_offset) for t in data.aborted_transactions])
        # Markers, aborted records and the records a cleaner removed are never delivered, but the position moves
        # past every batch read whole (Kafka's consumer fetches from the batch's next offset): a batch a cleaner
        # emptied would otherwise be fetched again and again
        past_skipped = position
        for batch in iter_batches(data.records):
            if self.config.check_crcs and not batch.is_valid():
                raise KafkaError(
                    ErrorCode.CORRUPT_MESSAGE,
                    f"record batch for {topic}-{data.partition_index} at offset {batch.base_offset} is corrupt "
                    f"(stored crc {batch.crc:#010x}, computed crc {batch.computed_crc():#010x})",
                )
            if batch.last_offset < visible_below:
                past_skipped = max(past_skipped, batch.last_offset + 1)
            if aborted.skips(batch) if committed else batch.is_control:
                continue
            for record in batch.records():
                if record.offset < position or record.offset >= visible_below:
                    continue  # a batch can start before our position; never expose data above the HWM
                records.append(
                    ConsumerRecord(
                        topic,
                        data.partition_index,
                        record.offset,
                        record.key,
                        record.value,
                        batch.partition_leader_epoch,
                        batch.timestamp_of(record),
                        topic_id,
                    )
                )
        if records or past_skipped > position:
            self.positions[key] = max(records[-1].offset + 1 if records else position, past_skipped)
        return records

    async def _refresh(self, topic: str) -> None:
        try:
            await self.metadata.refresh([topic])
        except KafkaError:
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)

    async def close(self) -> None:
        await self.metadata.close()


async def at_confirmed_log_end(consumer: Consumer) -> bool:
    """Every partition read up to its high watermark, and its leader's latest offset (ListOffsets LATEST, answered
    only once that leader's HWM covers its epoch) at or below the position: nothing acknowledged lies beyond."""
    if not consumer.caught_up():
        return False
    await consumer.confirm_log_ends()
    return all(end.log_end is not None and end.position is not None and end.position >= end.log_end
               for end in consumer.read_ends())  # fmt: skip

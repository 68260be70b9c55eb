"""The consumer: reads assigned partitions from their leaders, below the high watermark, following leader changes."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from client.metadata_cache import MetadataCache
from common.errors import ErrorCode, KafkaError
from common.record_batch import iter_batches
from minikafka_pb import broker_pb2

EARLIEST = -2
LATEST = -1


@dataclass(frozen=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    leader_epoch: int
    timestamp_ms: int

    def to_json(self) -> dict[str, object]:
        """DESIGN.md's consume line: values as text (the CLI writes UTF-8 with replacement)."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "key": None if self.key is None else self.key.decode("utf-8", "replace"),
            "value": None if self.value is None else self.value.decode("utf-8", "replace"),
            "leader_epoch": self.leader_epoch,
        }


@dataclass(frozen=True)
class ConsumerConfig:
    fetch_max_wait_ms: int = 500
    fetch_min_bytes: int = 1
    fetch_max_bytes: int = 52428800
    max_partition_fetch_bytes: int = 1048576
    request_timeout_ms: int = 30000
    retry_backoff_ms: int = 100
    check_crcs: bool = True  # check.crcs: a batch whose CRC does not match is never delivered


class Consumer:
    """Manual assignment (no group coordinator): `assign`, then `poll` repeatedly."""

    def __init__(self, bootstrap_servers: Sequence[str], config: ConsumerConfig | None = None) -> None:
        self.config = config or ConsumerConfig()
        self.metadata = MetadataCache(bootstrap_servers, self.config.request_timeout_ms / 1000)
        self.positions: dict[tuple[str, int], int] = {}

    async def assign(self, topic: str, partitions: Sequence[int] | None = None, start: int = EARLIEST) -> None:
        """Assign partitions (all when None) starting at `start`: an offset, EARLIEST or LATEST."""
        known = await self.metadata.require_topic(topic)
        chosen = sorted(known) if partitions is None else list(partitions)
        for partition in chosen:
            if partition not in known:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic '{topic}' has no partition {partition}")
            position = start if start >= 0 else await self.list_offset(topic, partition, start)
            self.positions[(topic, partition)] = position

    async def list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        """ListOffsets against the leader: EARLIEST is the log start offset, LATEST the high watermark."""
        for _attempt in range(50):
            address = self.metadata.leader_address(topic, partition)
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
                    code = ErrorCode.of(result.error_code)
                    if code == ErrorCode.NONE:
                        return result.offset
                    if not code.retriable:
                        raise KafkaError(code, f"ListOffsets {topic}-{partition}")
                except grpc.RpcError:
                    pass
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)
            await self._refresh(topic)
        raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"no leader answered ListOffsets for {topic}-{partition}")

    async def poll(self) -> list[ConsumerRecord]:
        """One round of fetches (one request per leader, in parallel); records in offset order per partition."""
        by_leader: dict[str, list[tuple[str, int]]] = {}
        missing_leader = set()
        for topic, partition in self.positions:
            address = self.metadata.leader_address(topic, partition)
            if address is None:
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
            for topic in {t for t, _ in partitions}:
                await self._refresh(topic)
            return []
        records: list[ConsumerRecord] = []
        for topic_response in response.responses:
            topic = topic_response.topic
            for data in topic_response.partitions:
                records += self._handle_partition(topic, data)
        return records

    def _handle_partition(self, topic: str, data: broker_pb2.FetchResponse.PartitionData) -> list[ConsumerRecord]:
        key = (topic, data.partition_index)
        code = ErrorCode.of(data.error_code)
        if code != ErrorCode.NONE:
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                raise KafkaError(code, f"{topic}-{data.partition_index} offset {self.positions[key]} is out of range")
            if code.retriable:  # the leader moved or our metadata is stale: forget it, the next poll refreshes
                self.metadata.view.topics.get(topic, {}).pop(data.partition_index, None)
                return []
            raise KafkaError(code, f"fetch {topic}-{data.partition_index}")
        position = self.positions[key]
        records = []
        for batch in iter_batches(data.records):
            if self.config.check_crcs and not batch.is_valid():
                raise KafkaError(
                    ErrorCode.CORRUPT_MESSAGE,
                    f"record batch for {topic}-{data.partition_index} at offset {batch.base_offset} is corrupt "
                    f"(stored crc {batch.crc:#010x}, computed crc {batch.computed_crc():#010x})",
                )
            for record in batch.records():
                if record.offset < position or record.offset >= data.high_watermark:
                    continue  # a batch can start before our position; never expose data above the HWM
                records.append(
                    ConsumerRecord(
                        topic,
                        data.partition_index,
                        record.offset,
                        record.key,
                        record.value,
                        batch.partition_leader_epoch,
                        record.timestamp_ms,
                    )
                )
        if records:
            self.positions[key] = records[-1].offset + 1
        return records

    async def _refresh(self, topic: str) -> None:
        try:
            await self.metadata.refresh([topic])
        except KafkaError:
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)

    async def close(self) -> None:
        await self.metadata.close()

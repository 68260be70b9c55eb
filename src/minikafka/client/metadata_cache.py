"""The client's view of the cluster: topics, partitions and their leaders, from any broker's Metadata."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from minikafka.client.sasl_channel import SaslChannelSession
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.client.unreachable import no_broker_reachable
from minikafka.common.clock import new_random
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.grpc_support import insecure_channel
from minikafka.common.rpc_failure import rpc_failure_text
from minikafka.common.tls import TlsFiles
from minikafka.pb import broker_pb2, broker_pb2_grpc


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass
class ClusterView:
    brokers: dict[int, str] = field(default_factory=dict)  # id -> host:port
    topics: dict[str, dict[int, PartitionInfo]] = field(default_factory=dict)
    topic_ids: dict[str, bytes] = field(default_factory=dict)
    topic_errors: dict[str, ErrorCode] = field(default_factory=dict)
    stale: set[str] = field(default_factory=set)  # topics with a partition forgotten since the last refresh


class MetadataCache:
    """Refreshes from the bootstrap brokers and then from any broker it learned of; owns the channels."""

    def __init__(
        self,
        bootstrap_servers: Sequence[str],
        request_timeout_s: float = 10.0,
        tls: TlsFiles | None = None,
        sasl: SaslLogin | None = None,
    ) -> None:
        if not bootstrap_servers:
            raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, "no bootstrap server given")
        self.bootstrap = list(bootstrap_servers)
        self.request_timeout_s = request_timeout_s
        self.tls = tls  # an SSL client listener's CA (GRPC_SSL); None: plaintext
        self.sasl = sasl  # a GRPC_SASL_SSL listener's login; None: no SASL
        self.view = ClusterView()
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[str, broker_pb2_grpc.BrokerStub] = {}
        self._sessions: dict[str, SaslChannelSession] = {}  # each SASL channel's session
        self._refresh_lock = asyncio.Lock()
        self._random = new_random()  # the order brokers are asked in (seeded in a simulation)

    def stub(self, address: str) -> broker_pb2_grpc.BrokerStub:
        if address not in self._stubs:
            self._channels[address] = self._channel(address)
            self._stubs[address] = broker_pb2_grpc.BrokerStub(self._channels[address])
        return self._stubs[address]

    async def open_stream(self, address: str, start: Callable[[broker_pb2_grpc.BrokerStub], Any]) -> Any:
        """A bidi stream call to the broker at `address`: `start` (e.g. `lambda stub: stub.ProduceStream`) is given
        its stub and returns the method to call. With SASL the call carries the channel's session token (a login
        refused raises its KafkaError)."""
        method = start(self.stub(address))
        session = self._sessions.get(address)
        return method() if session is None else await session.open_stream(method)

    def _channel(self, address: str) -> grpc.aio.Channel:
        if self.sasl is None:
            return insecure_channel(address, self.tls)
        session = SaslChannelSession(self.sasl, self.request_timeout_s)
        channel = insecure_channel(address, self.tls, session.interceptors())
        session.bind(channel)
        self._sessions[address] = session
        return channel

    def leader_address(self, topic: str, partition: int) -> str | None:
        info = self.view.topics.get(topic, {}).get(partition)
        if info is None or info.leader < 0:
            return None
        return self.view.brokers.get(info.leader)

    def partitions(self, topic: str) -> list[int]:
        return sorted(self.view.topics.get(topic, {}))

    async def refresh(self, topics: Sequence[str]) -> ClusterView:
        """Ask brokers (known ones first, in random order) until one answers."""
        async with self._refresh_lock:
            candidates = list(dict.fromkeys([*self.view.brokers.values(), *self.bootstrap]))
            self._random.shuffle(candidates)
            problems = []
            for address in candidates:
                try:
                    response = await self.stub(address).Metadata(
                        broker_pb2.MetadataRequest(topics=list(topics)), timeout=self.request_timeout_s
                    )
                except grpc.RpcError as error:
                    problems.append(rpc_failure_text(address, error))
                    continue
                self._apply(response)
                return self.view
            raise no_broker_reachable(problems, plaintext=self.tls is None)

    def _apply(self, response: broker_pb2.MetadataResponse) -> None:
        view = ClusterView(brokers={b.node_id: f"{b.host}:{b.port}" for b in response.brokers})
        for topic in response.topics:
            if topic.error_code != ErrorCode.NONE:
                view.topic_errors[topic.name] = ErrorCode.of(topic.error_code)
                continue
            view.topic_ids[topic.name] = topic.topic_id
            view.topics[topic.name] = {
                p.partition_index: PartitionInfo(
                    topic.name,
                    p.partition_index,
                    p.leader_id,
                    p.leader_epoch,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                )
                for p in topic.partitions
            }
        self.view = view

    def forget_leader(self, topic: str, partition: int) -> None:
        """The partition's leader moved (a retriable fetch error): forgotten until the next refresh, which the
        topic's next `require_topic` makes too, rather than answer with the topic short of that partition."""
        self.view.topics.get(topic, {}).pop(partition, None)
        self.view.stale.add(topic)

    async def require_topic(self, topic: str) -> dict[int, PartitionInfo]:
        """The topic's partitions; UNKNOWN_TOPIC_OR_PARTITION (a clear error) when it does not exist."""
        if topic not in self.view.topics or topic in self.view.stale:
            await self.refresh([topic])
        if topic not in self.view.topics:
            error = self.view.topic_errors.get(topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            raise KafkaError(error, f"topic '{topic}'")
        return self.view.topics[topic]

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
        self._stubs.clear()
        self._sessions.clear()

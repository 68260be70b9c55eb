"""The quorum APIs over Kafka's protocol, as kafka-metadata-quorum --bootstrap-controller asks a controller's Kafka
listener (KIP-919): DescribeQuorum, AddRaftVoter, RemoveRaftVoter. The same document and errors as the gRPC admin
client's, so `metadata-quorum` prints the same either way."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ssl
import uuid
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from minikafka.client.kafka_wire_client import KafkaConnection
from minikafka.common.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from minikafka.common.tls import TlsFiles

METADATA_TOPIC = "__cluster_metadata"
T = TypeVar("T")


def directory_uuid(directory_id: str) -> uuid.UUID | None:
    """minikafka's directory id (meta.properties' directory.id) as Kafka's Uuid; none for ""."""
    if not directory_id:
        return None
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(directory_id + "=="))
    except ValueError:  # binascii.Error is one; so is a decoding of the wrong length
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"directory id {directory_id!r} is not a Kafka Uuid") from None


def directory_name(value: uuid.UUID | None) -> str:
    return "" if value is None or value.int == 0 else base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _check(response: Any) -> None:
    code = ErrorCode.of(int(response.error_code.value))
    if code != ErrorCode.NONE:
        raise KafkaError(code, response.error_message or code.name)


class KafkaQuorumClient:
    """One controller's Kafka listener of `addresses` (the first that answers), asked one request at a time."""

    def __init__(self, addresses: list[str], timeout_s: float, tls: TlsFiles | None = None) -> None:
        if not addresses:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "no controller Kafka listener address given")
        self.addresses = addresses
        self.timeout_s = timeout_s
        self.context: ssl.SSLContext | None = None
        if tls is not None:
            self.context = ssl.create_default_context(cafile=str(tls.ca))
            if tls.certificate is not None:
                self.context.load_cert_chain(str(tls.certificate), None if tls.key is None else str(tls.key))

    def __enter__(self) -> KafkaQuorumClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        pass

    async def _send(self, body: Any) -> Any:
        failure: KafkaError | None = None
        for address in self.addresses:
            # A voter change is answered within its own timeout: the connection waits a little longer.
            connection = KafkaConnection(address, self.timeout_s + 5, self.context)
            try:
                return await connection.send(body)
            except KafkaError as error:  # not reachable: the next controller
                failure = error
            finally:
                await connection.close()
        assert failure is not None
        raise failure

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        return asyncio.run(call)

    def describe_quorum(self) -> dict[str, Any]:
        from kio.schema.describe_quorum.v2 import request as quorum_v2
        from kio.schema.types import TopicName
        from kio.static.primitive import i32

        partition = quorum_v2.PartitionData(partition_index=i32(0))
        topic = quorum_v2.TopicData(topic_name=TopicName(METADATA_TOPIC), partitions=(partition,))
        response = self._run(self._send(quorum_v2.DescribeQuorumRequest(topics=(topic,))))
        _check(response)
        data = response.topics[0].partitions[0]
        _check(data)
        high_watermark = int(data.high_watermark)

        def replicas(items: Any) -> list[dict[str, Any]]:
            return [
                {
                    "id": int(r.replica_id),
                    "directory_id": directory_name(r.replica_directory_id),
                    "log_end_offset": int(r.log_end_offset),
                    "lag": max(0, high_watermark - int(r.log_end_offset)),
                    "last_fetch_timestamp": int(r.last_fetch_timestamp),
                    "last_caught_up_timestamp": int(r.last_caught_up_timestamp),
                }
                for r in items
            ]

        return {
            "leader_id": int(data.leader_id),
            "leader_epoch": int(data.leader_epoch),
            "high_watermark": high_watermark,
            "voters": replicas(data.current_voters),
            "observers": replicas(data.observers),
            "endpoints": {int(n.node_id): f"{n.listeners[0].host}:{n.listeners[0].port}" for n in response.nodes},
        }

    def add_raft_voter(self, voter_id: int, directory_id: str, cluster_id: str, endpoint: str = "") -> None:
        """Answered once the new voter set is committed (ack_when_committed, as Kafka's tool asks)."""
        from kio.schema.add_raft_voter.v1 import request as add_v1
        from kio.static.primitive import i32, i32Timedelta, u16

        host, _, port = endpoint.rpartition(":")
        listeners = (add_v1.Listener(name="CONTROLLER", host=host, port=u16(int(port))),) if endpoint else ()
        request = add_v1.AddRaftVoterRequest(
            cluster_id=cluster_id,
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=self.timeout_s)),
            voter_id=i32(voter_id),
            voter_directory_id=directory_uuid(directory_id),
            listeners=listeners,
            ack_when_committed=True,
        )
        _check(self._run(self._send(request)))

    def remove_raft_voter(self, voter_id: int, directory_id: str, cluster_id: str) -> None:
        from kio.schema.remove_raft_voter.v0 import request as remove_v0
        from kio.static.primitive import i32

        request = remove_v0.RemoveRaftVoterRequest(
            cluster_id=cluster_id, voter_id=i32(voter_id), voter_directory_id=directory_uuid(directory_id)
        )
        _check(self._run(self._send(request)))

    def upgrade_kraft_version(self, level: int, cluster_id: str) -> None:
        """UpdateFeatures of kraft.version (Kafka's kafka-features upgrade); `cluster_id` is not carried by it."""
        from kio.schema.update_features.v1 import request as features_v1
        from kio.static.primitive import i8, i16, i32Timedelta

        key = features_v1.FeatureUpdateKey(feature="kraft.version", max_version_level=i16(level), upgrade_type=i8(1))
        request = features_v1.UpdateFeaturesRequest(
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=self.timeout_s)),
            feature_updates=(key,),
            validate_only=False,
        )
        response = self._run(self._send(request))
        _check(response)
        for result in response.results:
            _check(result)

"""A client of one principal on a broker's GRPC_SASL_SSL listener, for scenarios about authorization: raw
InitProducerId and Produce calls in its own SASL session, with the batches (producer id, epoch, sequence) the
scenario builds, so one principal can forge another's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from minikafka.client.sasl_channel import authenticate_sync
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.certificates import ca_certificate_path
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_sasl import SESSION_METADATA_KEY
from minikafka.common.grpc_support import sync_channel
from minikafka.common.tls import TlsFiles
from minikafka.pb import broker_pb2, broker_pb2_grpc

TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ProducerIdentity:
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True)
class Appended:
    error: ErrorCode
    base_offset: int  # -1 on an error


class PrincipalSession:
    """One SASL PLAIN login on one broker; close it with `close`."""

    def __init__(self, address: str, certs_dir: Path, login: SaslLogin) -> None:
        self.login = login
        self._channel = sync_channel(address, TlsFiles(ca_certificate_path(certs_dir)))
        self._stub = broker_pb2_grpc.BrokerStub(self._channel)
        token = authenticate_sync(self._channel, login, TIMEOUT_S).token
        self._metadata = ((SESSION_METADATA_KEY, token),)

    def init_producer_id(self) -> ProducerIdentity | ErrorCode:
        answer = self._stub.InitProducerId(
            broker_pb2.InitProducerIdRequest(), timeout=TIMEOUT_S, metadata=self._metadata
        )
        code = ErrorCode.of(answer.error_code)
        return ProducerIdentity(answer.producer_id, answer.producer_epoch) if code == ErrorCode.NONE else code

    def produce(self, topic: str, batch: bytes) -> Appended:
        """One batch to partition 0 with acks=all."""
        request = broker_pb2.ProduceRequest(acks=-1, timeout_ms=int(TIMEOUT_S * 1000))
        request.topic_data.add(name=topic).partition_data.add(index=0, records=batch)
        try:
            answer = self._stub.Produce(request, timeout=TIMEOUT_S + 2, metadata=self._metadata)
        except grpc.RpcError:
            return Appended(ErrorCode.NETWORK_EXCEPTION, -1)
        result = answer.responses[0].partition_responses[0]
        return Appended(ErrorCode.of(result.error_code), result.base_offset)

    def close(self) -> None:
        self._channel.close()

"""A fault call waits for the node's fault service to answer rather than failing at the first refused connection:
on a busy machine a node's listener or TLS handshake can lag behind the schedule's step."""

from __future__ import annotations

import threading
from concurrent import futures
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from minikafka.deploy import faults as faults_module
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import free_ports
from minikafka.pb import fault_pb2, fault_pb2_grpc


class _HoldingFaultService(fault_pb2_grpc.FaultServicer):
    def HoldAlterPartition(self, request: Any, context: Any) -> fault_pb2.HoldAlterPartitionResponse:
        return fault_pb2.HoldAlterPartitionResponse()


def test_a_fault_call_refused_at_first_goes_through_once_the_node_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    address = f"127.0.0.1:{free_ports(1)[0]}"
    refused = threading.Event()

    def watched_channel(target: str, tls: object) -> grpc.Channel:
        channel = grpc.insecure_channel(target)
        channel.subscribe(lambda state: state == grpc.ChannelConnectivity.TRANSIENT_FAILURE and refused.set())
        return channel

    monkeypatch.setattr(faults_module, "sync_channel", watched_channel)
    faults = Faults(SimpleNamespace(admin_tls=None))  # type: ignore[arg-type]
    spec = SimpleNamespace(inter_node_address=address)
    outcome: dict[str, object] = {}

    def call() -> None:
        request = fault_pb2.HoldAlterPartitionRequest()
        try:
            outcome["response"] = faults._fault_call(spec, lambda stub: stub.HoldAlterPartition, request)  # type: ignore[arg-type]
        except grpc.RpcError as error:
            outcome["error"] = error

    caller = threading.Thread(target=call)
    caller.start()
    assert refused.wait(timeout=10), "the first connection attempt was never refused"
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    fault_pb2_grpc.add_FaultServicer_to_server(_HoldingFaultService(), server)
    server.add_insecure_port(address)
    server.start()
    try:
        caller.join(timeout=20)
        assert not caller.is_alive()
        assert "error" not in outcome, outcome.get("error")
        assert outcome["response"] == fault_pb2.HoldAlterPartitionResponse()
    finally:
        server.stop(grace=None)

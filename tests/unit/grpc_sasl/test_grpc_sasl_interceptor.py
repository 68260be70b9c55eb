"""The shells of SASL on the gRPC client API, in process on a free port: the broker's SaslAuthenticate stream and
session interceptor in front of a Broker servicer, against the client's interceptor."""

from __future__ import annotations

import asyncio
import functools
import gc
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import structlog

from minikafka.broker.grpc_sasl.authenticator import GrpcSaslAuthenticator, GrpcSaslSettings
from minikafka.broker.grpc_sasl.interceptor import SaslSessionInterceptor
from minikafka.client.metadata_cache import MetadataCache
from minikafka.client.sasl_channel import SaslChannelSession, authenticate, intercepted_sync_channel
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.grpc_support import insecure_channel, start_server, sync_channel
from minikafka.common.pipelined_stream import PipelinedStream
from minikafka.common.scram import ScramMechanism, credential_from_salted, salted_password
from minikafka.pb import broker_pb2, broker_pb2_grpc

SHA512 = ScramMechanism.SCRAM_SHA_512
SALT = b"0123456789abcdef"
ALICE = credential_from_salted(SHA512, SALT, salted_password(SHA512, "alice-secret", SALT, 4096), 4096)
SETTINGS = GrpcSaslSettings("GRPC", ("PLAIN", "SCRAM-SHA-512"), {"carol": "carol-secret"}, False, 0, 0)
ALICE_LOGIN = SaslLogin("SCRAM-SHA-512", "alice", "alice-secret")


class Servicer(broker_pb2_grpc.BrokerServicer):
    def __init__(self, sasl: GrpcSaslAuthenticator) -> None:
        self.sasl = sasl

    async def Metadata(self, request: Any, context: Any) -> broker_pb2.MetadataResponse:
        return broker_pb2.MetadataResponse(cluster_id="c")

    async def ProduceStream(self, requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for request in requests:
            yield broker_pb2.ProduceResponse(throttle_time_ms=request.timeout_ms)

    async def SaslAuthenticate(self, requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for answer in self.sasl.exchange(requests, context):
            yield answer


@pytest.fixture
async def broker() -> AsyncIterator[tuple[str, GrpcSaslAuthenticator]]:
    sasl = GrpcSaslAuthenticator(
        SETTINGS, lambda user, mechanism: ALICE if (user, mechanism) == ("alice", SHA512) else None
    )
    bound = await start_server(
        "127.0.0.1", 0, [lambda s: broker_pb2_grpc.add_BrokerServicer_to_server(Servicer(sasl), s)],
        interceptors=[SaslSessionInterceptor(sasl)],
    )  # fmt: skip
    try:
        yield bound.address, sasl
    finally:
        await bound.server.stop(None)


def _sasl_session(address: str, login: SaslLogin) -> SaslChannelSession:
    session = SaslChannelSession(login, timeout_s=5)
    session.bind(insecure_channel(address, None, session.interceptors()))
    return session


def _sasl_channel(address: str, login: SaslLogin) -> grpc.aio.Channel:
    channel = _sasl_session(address, login).channel
    assert channel is not None
    return channel


async def test_an_unauthenticated_call_is_refused_and_logged_once(broker: tuple[str, Any]) -> None:
    address, _ = broker
    stub = broker_pb2_grpc.BrokerStub(insecure_channel(address))
    with structlog.testing.capture_logs() as logs:
        for _ in range(2):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.Metadata(broker_pb2.MetadataRequest(), timeout=5)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert refused.value.details().startswith("SASL_AUTHENTICATION_FAILED (58): no SASL session")
        forged = stub.ProduceStream(metadata=[("minikafka-sasl-session", "forged")], timeout=5)
        with pytest.raises(grpc.aio.AioRpcError, match="unknown SASL session"):
            await forged.read()
    events = [e for e in logs if e["event"] == "grpc_sasl_call_refused"]
    assert [(e["method"], e["error"]) for e in events] == [
        ("/minikafka.Broker/Metadata", "SASL_AUTHENTICATION_FAILED"),
        ("/minikafka.Broker/ProduceStream", "SASL_AUTHENTICATION_FAILED"),
    ]


async def test_scram_sha_512_then_unary_and_stream_calls(broker: tuple[str, Any]) -> None:
    address, sasl = broker
    session = _sasl_session(address, ALICE_LOGIN)
    assert session.channel is not None
    stub = broker_pb2_grpc.BrokerStub(session.channel)
    produce_stream = functools.partial(stub.ProduceStream, timeout=5)
    with structlog.testing.capture_logs() as logs:
        assert (await stub.Metadata(broker_pb2.MetadataRequest(), timeout=5)).cluster_id == "c"
        stream = await session.open_stream(produce_stream)
        await stream.write(broker_pb2.ProduceRequest(timeout_ms=7))
        assert (await stream.read()).throttle_time_ms == 7
        await stream.done_writing()
    assert [(e["principal"], e["mechanism"]) for e in logs if e["event"] == "grpc_sasl_authenticated"] == [
        ("User:alice", "SCRAM-SHA-512")
    ]
    sasl._sessions.clear()  # as a restarted broker: the next unary call authenticates again and succeeds
    assert (await stub.Metadata(broker_pb2.MetadataRequest(), timeout=5)).cluster_id == "c"
    sasl._sessions.clear()  # a refused stream fails (its caller retries), and a later one authenticates again
    refused = await session.open_stream(produce_stream)
    with pytest.raises(grpc.aio.AioRpcError, match="unknown SASL session"):
        await refused.read()
    assert await _stream_answers(session, produce_stream) == 7
    await session.channel.close()


async def _stream_answers(session: SaslChannelSession, produce_stream: Any) -> int:
    """A ProduceStream round trip, retried as the producer retries a failed stream, until a deadline."""
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        stream = await session.open_stream(produce_stream)
        try:
            await stream.write(broker_pb2.ProduceRequest(timeout_ms=7))
            return (await stream.read()).throttle_time_ms
        except grpc.aio.AioRpcError:
            if asyncio.get_running_loop().time() > deadline:
                raise


async def test_wrong_password_is_sasl_authentication_failed(broker: tuple[str, Any]) -> None:
    address, _ = broker
    stub = broker_pb2_grpc.BrokerStub(_sasl_channel(address, SaslLogin("SCRAM-SHA-512", "alice", "wrong")))
    with structlog.testing.capture_logs() as logs, pytest.raises(KafkaError) as refused:
        await stub.Metadata(broker_pb2.MetadataRequest(), timeout=5)
    assert str(refused.value) == (
        "SASL_AUTHENTICATION_FAILED (58): Authentication failed during authentication due to invalid credentials "
        "with SASL mechanism SCRAM-SHA-512"
    )
    failures = [e for e in logs if e["event"] == "grpc_sasl_authentication_failed"]
    assert [(e["mechanism"], e["error"]) for e in failures] == [("SCRAM-SHA-512", "SASL_AUTHENTICATION_FAILED")]
    assert "invalid client proof for user 'alice'" in failures[0]["reason"]


async def _exchange(address: str, *requests: broker_pb2.SaslRequest) -> list[Any]:
    call = broker_pb2_grpc.BrokerStub(insecure_channel(address)).SaslAuthenticate(timeout=5)
    answers = []
    for request in requests:
        await call.write(request)
        answers.append(await call.read())
    return answers


HANDSHAKE = broker_pb2.SaslRequest(handshake=broker_pb2.SaslHandshakeRequest(mechanism="PLAIN"))
TOKEN = broker_pb2.SaslRequest(authenticate=broker_pb2.SaslAuthenticateRequest(auth_bytes=b"\0carol\0carol-secret"))


async def test_requests_out_of_order_end_the_exchange_as_kafka_closes_the_connection(broker: tuple[str, Any]) -> None:
    address, _ = broker
    with pytest.raises(grpc.aio.AioRpcError) as early:
        await _exchange(address, TOKEN)
    assert early.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert early.value.details() == (
        "INVALID_REQUEST (42): Unexpected Kafka request of type SASL_AUTHENTICATE during SASL handshake."
    )
    with pytest.raises(grpc.aio.AioRpcError) as twice:
        await _exchange(address, HANDSHAKE, HANDSHAKE)
    assert twice.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert twice.value.details().startswith("ILLEGAL_SASL_STATE (34): Unexpected Kafka request of type SASL_HANDSHAKE")
    handshake, done = await _exchange(address, HANDSHAKE, TOKEN)
    assert handshake.handshake.error_code == ErrorCode.NONE and list(handshake.handshake.mechanisms) == [
        "PLAIN",
        "SCRAM-SHA-512",
    ]
    assert done.authenticate.error_code == ErrorCode.NONE and len(done.authenticate.session_token) > 32


async def test_plain_on_a_blocking_channel(broker: tuple[str, Any]) -> None:
    """The admin tools' blocking channel (run off the loop, which serves the broker here)."""
    address, _ = broker

    def metadata() -> str:
        channel = intercepted_sync_channel(sync_channel(address), SaslLogin("PLAIN", "carol", "carol-secret"), 5)
        try:
            return broker_pb2_grpc.BrokerStub(channel).Metadata(broker_pb2.MetadataRequest(), timeout=5).cluster_id
        finally:
            channel.close()

    assert await asyncio.to_thread(metadata) == "c"
    granted = await authenticate(insecure_channel(address), SaslLogin("PLAIN", "carol", "carol-secret"), 5)
    assert granted.lifetime_ms == 0


async def test_an_unreachable_broker_is_a_grpc_error_as_without_sasl() -> None:
    """Callers try the next broker on grpc.RpcError (MetadataCache.refresh): the login must not turn a broker that
    is down into a fatal error."""
    import socket

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{unused.getsockname()[1]}"
    stub = broker_pb2_grpc.BrokerStub(_sasl_channel(address, ALICE_LOGIN))
    with pytest.raises(grpc.aio.AioRpcError) as unreachable:
        await stub.Metadata(broker_pb2.MetadataRequest(), timeout=5)
    assert unreachable.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_session_ends_after_connections_max_reauth_ms_even_inside_a_stream() -> None:
    """Kafka closes a connection whose session expired: here its stream ends at the next request, and new calls
    are refused until the client authenticates again (the time is the test's)."""
    now = [0]
    settings = GrpcSaslSettings("GRPC", ("PLAIN",), {"carol": "carol-secret"}, False, 1000, 0)
    sasl = GrpcSaslAuthenticator(settings, lambda _user, _mechanism: None, clock=lambda: now[0])
    bound = await start_server(
        "127.0.0.1", 0, [lambda s: broker_pb2_grpc.add_BrokerServicer_to_server(Servicer(sasl), s)],
        interceptors=[SaslSessionInterceptor(sasl)],
    )  # fmt: skip
    try:
        granted = await authenticate(insecure_channel(bound.address), SaslLogin("PLAIN", "carol", "carol-secret"), 5)
        assert granted.lifetime_ms == 1000
        stub = broker_pb2_grpc.BrokerStub(insecure_channel(bound.address))
        stream = stub.ProduceStream(metadata=[("minikafka-sasl-session", granted.token)], timeout=5)
        await stream.write(broker_pb2.ProduceRequest(timeout_ms=1))
        assert (await stream.read()).throttle_time_ms == 1
        now[0] = 1000
        await stream.write(broker_pb2.ProduceRequest(timeout_ms=2))
        with pytest.raises(grpc.aio.AioRpcError, match="SASL session expired") as expired:
            await stream.read()
        assert expired.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.aio.AioRpcError, match="SASL session expired"):
            await stub.Metadata(
                broker_pb2.MetadataRequest(), metadata=[("minikafka-sasl-session", granted.token)], timeout=5
            )
    finally:
        await bound.server.stop(None)


async def _sasl_broker(port: int) -> Any:
    sasl = GrpcSaslAuthenticator(
        SETTINGS, lambda user, mechanism: ALICE if (user, mechanism) == ("alice", SHA512) else None
    )
    return await start_server(
        "127.0.0.1", port, [lambda s: broker_pb2_grpc.add_BrokerServicer_to_server(Servicer(sasl), s)],
        interceptors=[SaslSessionInterceptor(sasl)],
    )  # fmt: skip


async def test_a_produce_stream_broken_by_a_restart_leaves_no_pending_task_behind() -> None:
    """The producer's ProduceStream on a SASL channel, through a broker restart: the calls on the broken stream fail
    and a new stream logs in again. grpc.aio's stream interceptors fed a stream's writes through a task of their
    own, which the broken stream left pending: "Task was destroyed but it is pending!" and "aclose(): asynchronous
    generator is already running" reached the loop's exception handler."""
    reported: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: reported.append(context))
    bound = await _sasl_broker(0)
    cache = MetadataCache([bound.address], request_timeout_s=5, sasl=ALICE_LOGIN)
    stream = PipelinedStream(functools.partial(cache.open_stream, bound.address, lambda stub: stub.ProduceStream))
    try:
        for n in range(3):
            assert (await stream.call(broker_pb2.ProduceRequest(timeout_ms=n), timeout=5)).throttle_time_ms == n
        await bound.server.stop(None)
        bound = await _sasl_broker(bound.port)  # a new broker process: the old session is unknown to it
        answers = []
        for n in range(20):
            try:
                answers.append((await stream.call(broker_pb2.ProduceRequest(timeout_ms=n), timeout=5)).throttle_time_ms)
            except grpc.RpcError:
                await asyncio.sleep(0.05)
            if len(answers) == 2:
                break
        assert len(answers) == 2
        await stream.close()
        for _ in range(3):
            gc.collect()
            await asyncio.sleep(0.05)
        assert [context.get("message") for context in reported] == []
    finally:
        await cache.close()
        await bound.server.stop(None)


async def test_a_stream_whose_login_is_refused_raises_the_refusal(broker: tuple[str, Any]) -> None:
    """The call that needed a new stream gets the login's KafkaError (the producer fails its records with that
    error), not a network error."""
    address, _ = broker
    cache = MetadataCache([address], request_timeout_s=5, sasl=SaslLogin("SCRAM-SHA-512", "alice", "wrong"))
    stream = PipelinedStream(functools.partial(cache.open_stream, address, lambda stub: stub.ProduceStream))
    try:
        with pytest.raises(KafkaError) as refused:
            await stream.call(broker_pb2.ProduceRequest(timeout_ms=1), timeout=5)
        assert refused.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    finally:
        await stream.close()
        await cache.close()

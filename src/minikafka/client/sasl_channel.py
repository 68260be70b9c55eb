"""The shell of the client side of SASL on a GRPC_SASL_SSL listener: runs the SaslAuthenticate stream
(sasl_exchange) once per channel, and attaches its session token to every call as metadata. A call refused as
unauthenticated (the broker restarted, the session expired or was dropped) makes the next one authenticate again;
a unary call is retried once at once. A session with a lifetime is renewed before it ends, as Kafka clients
re-authenticate.

Unary calls get the token from the channel's interceptor; a stream is opened with it (`open_stream`). grpc.aio
runs an intercepted stream's writes through a task of its own, which a stream broken by a fault leaves pending:
"Task was destroyed but it is pending!" and "aclose(): asynchronous generator is already running" on stderr."""

from __future__ import annotations

import asyncio
import collections
import queue
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

from minikafka.client import sasl_exchange
from minikafka.client.sasl_exchange import Authenticated, Failed, SaslLogin
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.grpc_sasl import SESSION_METADATA_KEY
from minikafka.pb import broker_pb2_grpc

RENEW_AT_FRACTION = 0.85  # Kafka clients re-authenticate at 85-95% of the session lifetime


def _failure(state: Failed) -> KafkaError:
    return KafkaError(state.error, state.message)


def _refusal(error: grpc.RpcError) -> KafkaError | None:
    """The broker ends the stream of a request out of order with details `NAME (code): message`: Kafka's error.
    None for anything else (an unreachable broker, a deadline), which callers handle as any failed call."""
    details = error.details() or ""
    name, _, rest = details.partition(" ")
    if name not in ErrorCode.__members__ or not rest.startswith("("):
        return None
    return KafkaError(ErrorCode[name], rest.partition(": ")[2])


async def _write(call: Any, request: Any) -> None:
    try:
        await call.write(request)
    except asyncio.InvalidStateError:  # the call ended before (an unreachable broker): its status says why
        await call.read()  # raises the call's AioRpcError
        raise


async def authenticate(channel: grpc.aio.Channel, login: SaslLogin, timeout_s: float) -> Authenticated:
    """One SASL exchange on `channel`; raises KafkaError (SASL_AUTHENTICATION_FAILED, ...) when refused, and the
    call's grpc.RpcError when the broker cannot be reached."""
    step = sasl_exchange.start(login, secrets.token_urlsafe(24))
    call = broker_pb2_grpc.BrokerStub(channel).SaslAuthenticate(timeout=timeout_s)
    try:
        while step.request is not None:
            await _write(call, step.request)
            response = await call.read()
            if response is grpc.aio.EOF:
                raise KafkaError(ErrorCode.NETWORK_EXCEPTION, "the broker ended the SASL exchange unanswered")
            step = sasl_exchange.on_response(step.state, response)
    except grpc.aio.AioRpcError as error:
        refused = _refusal(error)
        if refused is None:
            raise
        raise refused from None
    finally:
        call.cancel()
    if isinstance(step.state, Failed):
        raise _failure(step.state)
    assert isinstance(step.state, Authenticated)
    return step.state


def authenticate_sync(channel: grpc.Channel, login: SaslLogin, timeout_s: float) -> Authenticated:
    """`authenticate` on a blocking channel: the requests go through a queue the responses refill."""
    step = sasl_exchange.start(login, secrets.token_urlsafe(24))
    outgoing: queue.Queue[Any] = queue.Queue()
    outgoing.put(step.request)
    responses = broker_pb2_grpc.BrokerStub(channel).SaslAuthenticate(iter(outgoing.get, None), timeout=timeout_s)
    try:
        for response in responses:
            step = sasl_exchange.on_response(step.state, response)
            if step.request is None:
                break
            outgoing.put(step.request)
    except grpc.RpcError as error:
        refused = _refusal(error)
        if refused is None:
            raise
        raise refused from None
    finally:
        outgoing.put(None)
        responses.cancel()
    if isinstance(step.state, Failed):
        raise _failure(step.state)
    if not isinstance(step.state, Authenticated):
        raise KafkaError(ErrorCode.NETWORK_EXCEPTION, "the broker ended the SASL exchange unanswered")
    return step.state


class _Session:
    """The token a channel's calls carry, and when to renew it (monotonic seconds; None: never)."""

    def __init__(self) -> None:
        self.token: str | None = None
        self.renew_at: float | None = None

    def current(self) -> str | None:
        if self.token is not None and (self.renew_at is None or time.monotonic() < self.renew_at):
            return self.token
        return None

    def take(self, granted: Authenticated) -> str:
        self.token = granted.token
        lifetime_s = granted.lifetime_ms / 1000
        self.renew_at = time.monotonic() + lifetime_s * RENEW_AT_FRACTION if granted.lifetime_ms > 0 else None
        return granted.token

    def forget(self, token: str | None) -> None:
        if token is not None and self.token == token:
            self.token = None


def _with_token(metadata: Any, token: str) -> grpc.aio.Metadata:
    kept = [(k, v) for k, v in (metadata or ()) if k != SESSION_METADATA_KEY]
    return grpc.aio.Metadata(*kept, (SESSION_METADATA_KEY, token))


class SaslChannelSession:
    """The session of one grpc.aio channel: authenticated on first use, renewed when due or refused. `bind` it to
    the channel its `interceptors` were given to before the first call."""

    def __init__(self, login: SaslLogin, timeout_s: float) -> None:
        self.login = login
        self.timeout_s = timeout_s
        self.channel: grpc.aio.Channel | None = None
        self._session = _Session()
        self._lock = asyncio.Lock()
        self._checks: set[asyncio.Future[None]] = set()  # held until done: the loop keeps only weak references

    def bind(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel

    def interceptors(self) -> tuple[grpc.aio.ClientInterceptor, ...]:
        """The unary calls' interceptor; streams are opened with `open_stream`."""
        return (_UnaryInterceptor(self),)

    async def open_stream(self, start: Callable[..., Any]) -> Any:
        """A bidi stream call (`start`, e.g. a stub's `ProduceStream`) opened with the session's token. A stream
        refused as unauthenticated makes the next call authenticate again."""
        token = await self.token()
        call = start(metadata=_with_token(None, token))
        call.add_done_callback(lambda done: self._check_after(done, token))
        return call

    def _check_after(self, call: Any, token: str) -> None:
        check = asyncio.ensure_future(self._after(call, token))
        self._checks.add(check)
        check.add_done_callback(self._checks.discard)

    async def _after(self, call: Any, token: str) -> None:
        if await call.code() == grpc.StatusCode.UNAUTHENTICATED:
            self.forget(token)

    async def token(self) -> str:
        async with self._lock:
            token = self._session.current()
            if token is None:
                assert self.channel is not None, "SaslChannelSession used before bind()"
                token = self._session.take(await authenticate(self.channel, self.login, self.timeout_s))
            return token

    def forget(self, token: str) -> None:
        self._session.forget(token)

    def details(self, details: Any, token: str) -> grpc.aio.ClientCallDetails:
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, _with_token(details.metadata, token), details.credentials,
            details.wait_for_ready,
        )  # fmt: skip


class _UnaryInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, session: SaslChannelSession) -> None:
        self.session = session

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        token = await self.session.token()
        call = await continuation(self.session.details(client_call_details, token), request)
        try:
            await call
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.UNAUTHENTICATED:
                raise
            self.session.forget(token)
            return await continuation(self.session.details(client_call_details, await self.session.token()), request)
        return call


class _CallDetails(
    collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready")),
    grpc.ClientCallDetails,
):
    pass


class SaslSyncClientInterceptor(grpc.UnaryUnaryClientInterceptor):
    """For a blocking channel (the admin tools'): authenticates on `raw`, the channel it wraps."""

    def __init__(self, raw: grpc.Channel, login: SaslLogin, timeout_s: float) -> None:
        self.raw = raw
        self.login = login
        self.timeout_s = timeout_s
        self._session = _Session()
        self._lock = threading.Lock()

    def _token(self) -> str:
        with self._lock:
            token = self._session.current()
            return token or self._session.take(authenticate_sync(self.raw, self.login, self.timeout_s))

    def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        def call(token: str) -> Any:
            d = client_call_details
            metadata = _with_token(d.metadata, token)
            return continuation(_CallDetails(d.method, d.timeout, metadata, d.credentials, d.wait_for_ready), request)

        token = self._token()
        outcome = call(token)
        if outcome.code() == grpc.StatusCode.UNAUTHENTICATED:
            self._session.forget(token)
            outcome = call(self._token())
        return outcome


def intercepted_sync_channel(raw: grpc.Channel, login: SaslLogin, timeout_s: float) -> grpc.Channel:
    return grpc.intercept_channel(raw, SaslSyncClientInterceptor(raw, login, timeout_s))

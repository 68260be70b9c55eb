"""The Kafka listener: raw asyncio streams, size-prefixed frames, requests of a connection answered in order while
later ones are already read and started (a bounded number in flight).

A frame the broker cannot answer (garbage, an oversized or short size prefix, an unknown key or version, a
truncated body, a client without a complete request for connections.max.idle.ms, also one half-way through a
frame) closes that connection with a logged `kafka_connection_closed` event; the broker and its other connections
carry on. The listener owns its accept loop: it stops accepting at max.connections, closes a connection past
max.connections.per.ip at once, and backs off when accept() fails (out of files) instead of giving up."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from minikafka.broker.client_authorizer import ANONYMOUS_PRINCIPAL, Caller
from minikafka.broker.kafka_wire import api_versions, sasl_apis, sasl_authenticator
from minikafka.broker.kafka_wire.connection_quotas import ConnectionQuotas, TooManyFromIp
from minikafka.broker.kafka_wire.context import ListenerContext
from minikafka.broker.kafka_wire.frame_reader import (
    SCRATCH_BYTES,
    FrameBudget,
    FrameReaderProtocol,
    FrameSource,
    StreamFrames,
)
from minikafka.broker.kafka_wire.framing import (
    SIZE,
    ApiHeader,
    FrameError,
    check_size,
    check_token_size,
    decode_request,
    encode_response,
    peek_header,
)
from minikafka.broker.kafka_wire.listener_security import PLAINTEXT, ListenerSecurity
from minikafka.broker.kafka_wire.sasl_authenticator import Phase, SaslCredentials, SaslSession
from minikafka.common.authorizer import principal_from_subject
from minikafka.common.errors import ErrorCode, ListenerBindError
from minikafka.common.node_environment import simulated_node
from minikafka.common.scram import ScramCredential, ScramMechanism

MAX_IN_FLIGHT = 64  # requests read ahead of the one being answered, per connection
LISTEN_BACKLOG = 1024
ACCEPT_BACKOFF_S = (0.05, 1.0)  # after a failed accept(): first wait, longest wait (doubling in between)


@dataclass(frozen=True)
class ListenerLimits:
    max_request_bytes: int  # socket.request.max.bytes
    max_idle_ms: int  # connections.max.idle.ms
    failed_authentication_delay_ms: int = 100  # connection.failed.authentication.delay.ms
    sasl_max_receive_bytes: int = 524288  # sasl.server.max.receive.size: the largest frame before authentication


@dataclass(frozen=True)
class RawToken:
    """A bare size-prefixed SASL token, the answer to one after a v0 SaslHandshake."""

    data: bytes


class ListenerConnections:
    """The broker's connection quotas over all its Kafka listeners, and a wait for a free slot."""

    def __init__(self, quotas: ConnectionQuotas) -> None:
        self.quotas = quotas
        self._freed = asyncio.Event()

    async def wait_for_slot(self) -> None:
        while not self.quotas.has_slot():
            self._freed.clear()
            await self._freed.wait()

    def release(self, ip: str) -> None:
        self.quotas.release(ip)
        self._freed.set()


# How a listener answers a frame: the broker's table of APIs, or a controller's smaller one.
Dispatch = Callable[[Any, bytes | memoryview, ApiHeader], Awaitable[Any | None]]


def unlimited_connections() -> ListenerConnections:
    return ListenerConnections(ConnectionQuotas(2**31 - 1, 2**31 - 1))


class KafkaListener:
    def __init__(
        self,
        ctx: ListenerContext,
        dispatch: Dispatch,
        host: str,
        port: int,
        limits: ListenerLimits,
        security: ListenerSecurity = PLAINTEXT,
        connections: ListenerConnections | None = None,
        accepting: asyncio.Event | None = None,
    ) -> None:
        """`accepting`: connections are accepted once it is set (they wait in the backlog until then, as at a Kafka
        broker whose acceptors start only once it was first unfenced); None: at once."""
        self.ctx = ctx
        self.dispatch = dispatch
        self.host = host
        self.port = port
        self.limits = limits
        self.security = security
        self.connections = connections or unlimited_connections()
        self.accepting = accepting
        self._socket: socket.socket | None = None
        self._acceptor: asyncio.Task[None] | None = None
        self._simulated: Any = None  # the simulated network's listener, in a simulated node
        # In the order they were accepted (a dict): stop cancels them in it, the same every run (a set's order follows
        # memory addresses, which a simulated replay does not keep).
        self._connections: dict[asyncio.Task[None], None] = {}
        self._scratch = bytearray(SCRATCH_BYTES)  # every connection's reads ahead land here first
        self._frame_budget = FrameBudget()  # frame buffers allocated before their bytes came, over all connections
        self._log = structlog.get_logger()

    async def start(self) -> None:
        node = simulated_node()
        if node is not None:  # a simulated broker listens on its simulated network
            self._simulated = node.network.listen(node.node_id, self.host, self.port, self._accept_simulated)
            return
        try:
            self._socket = socket.create_server((self.host, self.port), backlog=LISTEN_BACKLOG)
        except OSError as error:
            raise ListenerBindError(f"{self.host}:{self.port}", error) from None
        self._socket.setblocking(False)
        self.port = self._socket.getsockname()[1]
        self._acceptor = asyncio.create_task(self._accept_loop())

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def stop(self) -> None:
        if self._simulated is not None:
            self._simulated.close()
        if self._acceptor is not None:
            self._acceptor.cancel()
            await asyncio.gather(self._acceptor, return_exceptions=True)
        if self._socket is not None:
            self._socket.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*list(self._connections), return_exceptions=True)

    async def _accept_loop(self) -> None:
        assert self._socket is not None
        loop = asyncio.get_running_loop()
        backoff_s, failures = ACCEPT_BACKOFF_S[0], 0
        if self.accepting is not None:
            await self.accepting.wait()
        while True:
            await self.connections.wait_for_slot()  # at max.connections Kafka's acceptor waits, too
            try:
                sock, peer = await loop.sock_accept(self._socket)
            except OSError as error:
                # Out of files (EMFILE, ENFILE) or buffers: the pending connection stays queued; wait and retry
                # rather than let the listener, or the broker, die of it. Logged at the first failure of a run.
                if failures == 0:
                    self._log.warning("kafka_accept_failed", listener=self.ctx.listener_name, error=str(error))
                failures += 1
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, ACCEPT_BACKOFF_S[1])
                continue
            if failures:
                self._log.info("kafka_accept_recovered", listener=self.ctx.listener_name, failures=failures)
            backoff_s, failures = ACCEPT_BACKOFF_S[0], 0
            ip = peer[0] if isinstance(peer, tuple) else ""
            admission = self.connections.quotas.admit(ip)
            if isinstance(admission, TooManyFromIp):
                sock.close()
                reason = f"address already has the configured maximum of {admission.limit} connections"
                name = self.ctx.listener_name
                self._log.info("kafka_connection_refused", listener=name, peer=str(peer), reason=reason)
                continue
            task = asyncio.create_task(self._serve(sock, peer, ip))
            self._connections[task] = None

    async def _accept_simulated(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A simulated connection, admitted as the accept loop admits a socket's."""
        if self.accepting is not None:
            await self.accepting.wait()
        await self.connections.wait_for_slot()
        peer = writer.get_extra_info("peername")
        ip = peer[0] if isinstance(peer, tuple) else ""
        if isinstance(self.connections.quotas.admit(ip), TooManyFromIp):
            writer.close()
            return
        try:
            await self._accept(StreamFrames(reader), writer)
        finally:
            self.connections.release(ip)

    async def _serve(self, sock: socket.socket, peer: object, ip: str) -> None:
        try:
            streams = await self._open_streams(sock)
        except Exception as error:  # a failed TLS handshake or a client already gone: this connection only
            sock.close()
            self.connections.release(ip)
            current = asyncio.current_task()
            if current is not None:
                self._connections.pop(current, None)
            self._log.info(
                "kafka_connection_closed",
                listener=self.ctx.listener_name,
                peer=str(peer),
                reason=f"handshake failed: {type(error).__name__}: {error}",
            )
            return
        try:
            await self._accept(*streams)
        finally:
            self.connections.release(ip)

    async def _open_streams(self, sock: socket.socket) -> tuple[FrameSource, asyncio.StreamWriter]:
        loop = asyncio.get_running_loop()
        protocol = FrameReaderProtocol(loop, self._scratch, self._frame_budget)
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock, ssl=self.security.ssl_context)
        return protocol, asyncio.StreamWriter(transport, protocol, None, loop)

    async def _accept(self, reader: FrameSource, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = None
        peer = writer.get_extra_info("peername")
        try:
            ip = peer[0] if isinstance(peer, tuple) else ""
            caller = Caller(_certificate_principal(writer, self.ctx), ip, self.ctx.listener_name)
            ctx = self.ctx.for_connection(caller, f"/{ip}" if ip else "")
            reason = await Connection(ctx, self.dispatch, self.limits, reader, writer, self.security).serve()
        except asyncio.CancelledError:
            reason = "listener stopped"
        except Exception as error:  # a bug in one request must not end the listener: log it, drop the client
            reason = f"unexpected {type(error).__name__}: {error}"
        finally:
            self._connections.pop(task, None)
            writer.close()
        if reason is not None:
            self._log.info("kafka_connection_closed", listener=self.ctx.listener_name, peer=str(peer), reason=reason)


class Connection:
    """One client connection: a reader that starts requests and a writer that answers them in order."""

    def __init__(
        self,
        ctx: ListenerContext,
        dispatch: Dispatch,
        limits: ListenerLimits,
        reader: FrameSource,
        writer: asyncio.StreamWriter,
        security: ListenerSecurity = PLAINTEXT,
    ) -> None:
        self.ctx = ctx
        self.dispatch = dispatch
        self.limits = limits
        self.reader = reader
        self.writer = writer
        self.security = security
        # A SASL listener's connection serves nothing but authentication until it completes.
        self.sasl = SaslSession() if security.sasl else None
        self.authentication_failed = False
        self.pending: asyncio.Queue[tuple[int, Any] | None] = asyncio.Queue(MAX_IN_FLIGHT)
        self.loop = asyncio.get_running_loop()
        # connections.max.idle.ms counts from the last complete request read or answer written: a client that
        # sends part of a frame and stops is idle, too. A watchdog closes the socket, which ends the pending read.
        self.last_activity = self.loop.time()
        self.answers_due = 0
        self.idle_expired = False
        self._watchdog: asyncio.TimerHandle | None = None

    async def serve(self) -> str | None:
        """Serve until the client leaves (None) or must be dropped (the reason)."""
        answering = asyncio.create_task(self._answer())
        self._watch_idle()
        try:
            reason = await self._read()
            if self.idle_expired:
                reason = f"idle for connections.max.idle.ms ({self.limits.max_idle_ms})"
            await self.pending.put(None)
            failure = await answering
            if self.authentication_failed and failure is None:
                # Kafka holds the connection open a little after answering a failed authentication, so a client
                # reads the error before the close, and one retrying in a loop is slowed down.
                await asyncio.sleep(self.limits.failed_authentication_delay_ms / 1000)
            return failure or reason
        finally:
            answering.cancel()
            if self._watchdog is not None:
                self._watchdog.cancel()

    def _watch_idle(self) -> None:
        """Close the connection once it has been idle for connections.max.idle.ms (a request being answered is not
        idle); otherwise look again when it next could be."""
        idle_s = self.limits.max_idle_ms / 1000
        due = self.last_activity + idle_s
        if self.answers_due == 0 and self.loop.time() >= due:
            self.idle_expired = True
            self.writer.transport.abort()
            return
        self._watchdog = self.loop.call_at(max(due, self.loop.time() + idle_s / 10), self._watch_idle)

    async def _read(self) -> str | None:
        while True:
            try:
                prefix = await self.reader.readexactly(SIZE.size)
            except asyncio.IncompleteReadError as error:
                return None if not error.partial else "truncated size prefix"
            except ConnectionError:
                return None
            try:
                size = SIZE.unpack(prefix)[0]
                if self.sasl is not None and self.sasl.raw_tokens and self.sasl.phase is Phase.AUTHENTICATE:
                    check_token_size(size, self.limits.sasl_max_receive_bytes)
                    token = await self.reader.readexactly(size)
                    self.last_activity = self.loop.time()
                    if (reason := await self._raw_token(token)) is not None:
                        return reason
                    continue
                check_size(size, self._max_frame_bytes())
                frame = await self.reader.read_frame(size)
                self.last_activity = self.loop.time()
                header = peek_header(frame)
                if self.sasl is not None and self.sasl.phase is not Phase.COMPLETE:
                    answer, close_reason = self._authenticate(frame, header)
                    if answer is not None:
                        await self._enqueue(header.correlation_id, answer)
                    if close_reason is not None:
                        return close_reason
                    if answer is not None:
                        continue
                answer = self.dispatch(self.ctx, frame, header)
            except FrameError as error:
                return f"{error.code.name}: {error.message}"
            except asyncio.IncompleteReadError:
                return "truncated frame"
            except ConnectionError:
                return None
            await self._enqueue(header.correlation_id, answer)

    def _adopt_principal(self) -> None:
        """Once SASL authentication completes, the connection's requests are the authenticated user's."""
        if self.sasl is not None and self.sasl.phase is Phase.COMPLETE and self.sasl.principal:
            self.ctx = self.ctx.for_connection(dataclasses.replace(self.ctx.caller, principal=self.sasl.principal))

    def _max_frame_bytes(self) -> int:
        """No large frame from a client not yet authenticated (Kafka's sasl.server.max.receive.size)."""
        if self.sasl is None or self.sasl.phase is Phase.COMPLETE:
            return self.limits.max_request_bytes
        return min(self.limits.max_request_bytes, self.limits.sasl_max_receive_bytes)

    def _authenticate(self, frame: bytes | memoryview, header: ApiHeader) -> tuple[Any | None, str | None]:
        """During SASL authentication: the answer to a SaslHandshake or SaslAuthenticate frame and the reason to close
        after it, if any; (None, reason) for a frame that closes the connection unanswered; (None, None) for an
        ApiVersions, which is served as usual."""
        assert self.sasl is not None
        refused = sasl_authenticator.refusal(self.sasl, header.api_key)
        if refused is not None:
            return None, refused
        if header.api_key == sasl_authenticator.API_VERSIONS:
            return None, None
        if not api_versions.supports(header.api_key, header.api_version):
            raise FrameError(
                ErrorCode.UNSUPPORTED_VERSION, f"API key {header.api_key} version {header.api_version} is not supported"
            )
        request = decode_request(frame, header)
        if header.api_key == sasl_authenticator.SASL_HANDSHAKE:
            mechanisms = self.security.mechanisms
            outcome = sasl_authenticator.handshake(
                self.sasl, request.body.mechanism, mechanisms, header.api_version, self.security.scram_nonce_suffix_ok
            )
            response = sasl_apis.handshake_response(header.api_version, outcome, mechanisms)
        else:
            outcome = self._evaluate(request.body.auth_bytes)
            response = sasl_apis.authenticate_response(header.api_version, outcome)
        self.sasl = outcome.session
        self._adopt_principal()
        self.authentication_failed = outcome.close_reason is not None
        return _ready(response), outcome.close_reason

    async def _raw_token(self, token: bytes) -> str | None:
        """A bare token after a v0 handshake: a bare answer, or on failure a close without one, as Kafka does."""
        outcome = self._evaluate(token)
        self.sasl = outcome.session
        self._adopt_principal()
        if outcome.close_reason is not None:
            self.authentication_failed = True
            return outcome.close_reason
        await self._enqueue(-1, _ready(RawToken(outcome.auth_bytes)))
        return None

    def _evaluate(self, token: bytes) -> sasl_authenticator.SaslAnswer:
        assert self.sasl is not None
        credentials = SaslCredentials(self.ctx.plain_users, self._scram_credential)
        return sasl_authenticator.authenticate(self.sasl, token, credentials, secrets.token_urlsafe(18))

    def _scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self.ctx.scram_credential(user, mechanism)

    async def _enqueue(self, correlation_id: int, answer: Any) -> None:
        self.answers_due += 1
        await self.pending.put((correlation_id, answer))

    async def _answer(self) -> str | None:
        """Write each answer in request order. After a failure the rest are only drained, so the reader never
        blocks on a full queue, and the connection is closed to end the reader."""
        failure = None
        while (item := await self.pending.get()) is not None:
            correlation_id, answer = item
            if failure is not None:
                self.answers_due -= 1
                continue
            try:
                try:
                    response = await answer
                finally:
                    # Answered: idle from now on, also while the write waits for a client that reads nothing.
                    self.answers_due -= 1
                    self.last_activity = self.loop.time()
                if isinstance(response, RawToken):
                    self.writer.write(SIZE.pack(len(response.data)) + response.data)
                    await self.writer.drain()
                elif response is not None:  # None: acks=0, to which Kafka sends nothing back
                    self.writer.write(encode_response(correlation_id, response))
                    await self.writer.drain()
            except ConnectionError:
                failure = "connection lost"
                self.writer.close()
            except Exception as error:  # one request's bug ends this connection only
                failure = f"answering failed: {type(error).__name__}: {error}"
                self.writer.close()
        return failure


def _certificate_principal(writer: asyncio.StreamWriter, ctx: ListenerContext) -> str:
    """An SSL client's principal: its certificate's subject mapped by ssl.principal.mapping.rules (Kafka's
    SslPrincipalMapper); without a client certificate, User:ANONYMOUS."""
    peer = writer.get_extra_info("peercert")
    if not peer:
        return ANONYMOUS_PRINCIPAL
    subject = ",".join(f"{key}={value}" for rdn in reversed(peer.get("subject", ())) for key, value in rdn)
    key_names = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C"}
    for long_name, short in key_names.items():
        subject = subject.replace(f"{long_name}=", f"{short}=")
    return str(principal_from_subject(subject, ctx.mapping_rules))


def _ready(value: Any) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future

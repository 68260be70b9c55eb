"""The gRPC shell of a GRPC_SASL_SSL listener's session check: every call but SaslAuthenticate must carry the token
of a live session (metadata `minikafka-sasl-session`), else it ends with UNAUTHENTICATED whose details start with
SASL_AUTHENTICATION_FAILED (58), before its servicer sees it. Each (method, reason) is logged once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog

from minikafka.broker.grpc_sasl import session as sessions
from minikafka.broker.grpc_sasl.authenticator import GrpcSaslAuthenticator, bounded_sasl_request
from minikafka.common.grpc_sasl import SASL_AUTHENTICATE_METHOD, SESSION_METADATA_KEY
from minikafka.common.grpc_support import FirstSightings, guarded_handler


def session_token(metadata: Any) -> str | None:
    """The session token among a call's invocation metadata (None without one)."""
    for key, value in metadata or ():
        if key == SESSION_METADATA_KEY:
            return value if isinstance(value, str) else value.decode("ascii", "replace")
    return None


class SaslSessionInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, authenticator: GrpcSaslAuthenticator) -> None:
        self.authenticator = authenticator
        self._logged = FirstSightings()
        self._bounded_request = bounded_sasl_request(authenticator.settings.max_receive_bytes)

    def check(self, method: str, context: Any) -> sessions.SessionCheck:
        token = session_token(context.invocation_metadata())
        decision = sessions.check(token, self.authenticator.session_of(token), self.authenticator.clock())
        if isinstance(decision, sessions.SessionRefused) and self._logged.first((method, decision.reason)):
            structlog.get_logger().warning(
                "grpc_sasl_call_refused",
                listener=self.authenticator.settings.listener_name,
                peer=context.peer(),
                method=method,
                error=decision.error.name,
                reason=decision.reason,
            )
        return decision

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        details: Any,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(details)
        if handler is not None and details.method == SASL_AUTHENTICATE_METHOD:
            # grpc's handlers are named tuples at run time; the stubs declare only the abstract interface.
            return handler._replace(request_deserializer=self._bounded_request)  # type: ignore[attr-defined]
        if handler is None:
            return handler
        guarded = guarded_handler(handler, details.method, self._guard_unary, self._guard_stream)
        return guarded if guarded is not None else _refuse_other_kinds(details.method)

    def _guard_unary(self, method: str, behaviour: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def guarded(request: Any, context: Any) -> Any:
            decision = self.check(method, context)
            if isinstance(decision, sessions.SessionRefused):
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, _details(decision))
            return await behaviour(request, context)

        return guarded

    def _guard_stream(
        self, method: str, behaviour: Callable[..., AsyncIterator[Any]]
    ) -> Callable[..., AsyncIterator[Any]]:
        """A stream is checked when it opens, as a Kafka connection is authenticated once; a session that expires
        later ends it at its next request (Kafka closes a connection whose session expired)."""

        async def guarded(
            requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            decision = self.check(method, context)
            if isinstance(decision, sessions.SessionRefused):
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, _details(decision))
            expires_at_ms = decision.session.expires_at_ms

            async def checked() -> AsyncIterator[Any]:
                async for request in requests:
                    if expires_at_ms is not None and self.authenticator.clock() >= expires_at_ms:
                        # Past its expiry the session is refused (expired, or unknown once dropped).
                        await context.abort(grpc.StatusCode.UNAUTHENTICATED, _details(self.check(method, context)))
                    yield request

            async for response in behaviour(checked(), context):
                yield response

        return guarded


def _refuse_other_kinds(method: str) -> grpc.RpcMethodHandler[Any, Any]:
    """The Broker service has only unary and bidirectional methods; any other kind is not let through unchecked."""

    async def refused(_request: Any, context: Any) -> None:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not guarded by the SASL session check")

    return grpc.unary_unary_rpc_method_handler(refused)


def _details(decision: sessions.SessionCheck) -> str:
    assert isinstance(decision, sessions.SessionRefused)
    return f"{decision.error.name} ({int(decision.error)}): {decision.reason}"

"""The gRPC client listeners' gate until the broker's metadata caught up after start-up: every Broker call ends
with UNAVAILABLE, before its servicer (or the SASL exchange, whose credentials live in the metadata) sees it, as a
Kafka broker accepts no client connection before then. Clients take UNAVAILABLE as a broker not reachable yet and
ask another. The Fault service stays open: the tools watch a starting broker through it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from minikafka.common.grpc_support import guarded_handler

BROKER_SERVICE_PREFIX = "/minikafka.Broker/"
NOT_CAUGHT_UP = "broker starting: metadata not caught up yet"


class StartupGateInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, caught_up: Callable[[], bool]) -> None:
        self.caught_up = caught_up

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        details: Any,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(details)
        if handler is None or not details.method.startswith(BROKER_SERVICE_PREFIX) or self.caught_up():
            return handler
        return guarded_handler(handler, details.method, self._guard_unary, self._guard_stream) or handler

    def _guard_unary(self, _method: str, behaviour: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def guarded(request: Any, context: Any) -> Any:
            if not self.caught_up():
                await context.abort(grpc.StatusCode.UNAVAILABLE, NOT_CAUGHT_UP)
            return await behaviour(request, context)

        return guarded

    def _guard_stream(
        self, _method: str, behaviour: Callable[..., AsyncIterator[Any]]
    ) -> Callable[..., AsyncIterator[Any]]:
        async def guarded(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            if not self.caught_up():
                await context.abort(grpc.StatusCode.UNAVAILABLE, NOT_CAUGHT_UP)
            async for response in behaviour(requests, context):
                yield response

        return guarded

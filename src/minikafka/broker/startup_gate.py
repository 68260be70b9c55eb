"""Every gRPC listener's gate, client and inter-broker, until the controller first unfenced the broker after start-up
(Kafka's BrokerServer enables request processing on its listeners only then): every Broker call ends with
UNAVAILABLE before its servicer (or the SASL exchange, whose credentials live in the metadata) sees it. A starting
broker thus serves no follower from a log its crash cut short while its image still names it leader. Clients and
follower fetchers take UNAVAILABLE as a broker not reachable yet and retry or ask another. Once open it stays open.
The Fault service stays open: the tools watch a starting broker through it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from minikafka.common.grpc_support import guarded_handler

BROKER_SERVICE_PREFIX = "/minikafka.Broker/"
NOT_UNFENCED = "broker starting: not unfenced by the controller yet"


class StartupGateInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, enabled: Callable[[], bool]) -> None:
        """`enabled`: whether request processing is enabled (the broker was unfenced once since it started)."""
        self.enabled = enabled

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        details: Any,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(details)
        if handler is None or not details.method.startswith(BROKER_SERVICE_PREFIX) or self.enabled():
            return handler
        return guarded_handler(handler, details.method, self._guard_unary, self._guard_stream) or handler

    def _guard_unary(self, _method: str, behaviour: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def guarded(request: Any, context: Any) -> Any:
            if not self.enabled():
                await context.abort(grpc.StatusCode.UNAVAILABLE, NOT_UNFENCED)
            return await behaviour(request, context)

        return guarded

    def _guard_stream(
        self, _method: str, behaviour: Callable[..., AsyncIterator[Any]]
    ) -> Callable[..., AsyncIterator[Any]]:
        async def guarded(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            if not self.enabled():
                await context.abort(grpc.StatusCode.UNAVAILABLE, NOT_UNFENCED)
            async for response in behaviour(requests, context):
                yield response

        return guarded

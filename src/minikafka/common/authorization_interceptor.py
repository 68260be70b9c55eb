"""The gRPC shell of the authorizer: every guarded request is checked before its servicer sees it.

A refused unary request is answered with its response type's `error_code` CLUSTER_AUTHORIZATION_FAILED (Kafka's
31) and the reason; a refused request on a stream, or of a response type without an error code, ends the call
with PERMISSION_DENIED whose details start with the error's name. Each (principal, method, reason) is logged once
(`authorization_failed`), so a peer repeating a forged request cannot flood the log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import structlog
from google.protobuf import message_factory
from google.protobuf.descriptor_pool import Default as default_pool

from minikafka.common.authorizer import (
    Action,
    AuthorizerConfig,
    KafkaPrincipal,
    ListenerSecurity,
    Refused,
    action_of,
    authorize,
    is_guarded,
    principal_from_subject,
)
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import FirstSightings, guarded_handler
from minikafka.common.tls import peer_subject


def _response_class(method: str) -> Any:
    """The response message class of `/package.Service/Method`."""
    service_name, _, method_name = method.lstrip("/").rpartition("/")
    service = default_pool().FindServiceByName(service_name)
    return message_factory.GetMessageClass(service.methods_by_name[method_name].output_type)


class AuthorizationInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, listener_name: str, listener: ListenerSecurity, config: AuthorizerConfig) -> None:
        self.listener_name = listener_name
        self.listener = listener
        self.config = config
        self._logged = FirstSightings()

    def principal(self, context: Any) -> KafkaPrincipal:
        subject = peer_subject(context) if self.listener.authenticated else None
        return principal_from_subject(subject, self.config.mapping_rules)

    def refusal(self, method: str, request: Any, context: Any, principal: KafkaPrincipal) -> Refused | None:
        return self.refusal_of(action_of(method, request), method, context, principal)

    def refusal_of(self, action: Action, method: str, context: Any, principal: KafkaPrincipal) -> Refused | None:
        decision = authorize(action, principal, self.listener, self.config)
        if not isinstance(decision, Refused):
            return None
        if self._logged.first((str(principal), method, decision.reason)):
            structlog.get_logger().warning(
                "authorization_failed",
                principal=str(principal),
                method=method,
                listener=self.listener_name,
                peer=context.peer(),
                error=ErrorCode.CLUSTER_AUTHORIZATION_FAILED.name,
                reason=decision.reason,
            )
        return decision

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        details: Any,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(details)
        if handler is None or not is_guarded(details.method):
            return handler
        guarded = guarded_handler(handler, details.method, self._guard_unary, self._guard_stream)
        return guarded if guarded is not None else handler

    def _guard_unary(self, method: str, behaviour: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        response_class = _response_class(method)
        fields = response_class.DESCRIPTOR.fields_by_name

        async def guarded(request: Any, context: Any) -> Any:
            refused = self.refusal(method, request, context, self.principal(context))
            if refused is None:
                return await behaviour(request, context)
            if "error_code" not in fields:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, _details(refused))
            answer = response_class(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            if "error_message" in fields:
                answer.error_message = refused.reason
            return answer

        return guarded

    def _guard_stream(
        self, method: str, behaviour: Callable[..., AsyncIterator[Any]]
    ) -> Callable[..., AsyncIterator[Any]]:
        async def guarded(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            principal = self.principal(context)  # one TLS session per stream: its peer does not change

            async def checked() -> AsyncIterator[Any]:
                # A decision depends only on the action, the stream's principal and this listener: a follower's
                # every Fetch repeats the action its first one was allowed, so only a different action is decided.
                allowed: Action | None = None
                async for request in requests:
                    action = action_of(method, request)
                    if action != allowed:
                        refused = self.refusal_of(action, method, context, principal)
                        if refused is not None:
                            await context.abort(grpc.StatusCode.PERMISSION_DENIED, _details(refused))
                        allowed = action
                    yield request

            async for response in behaviour(checked(), context):
                yield response

        return guarded


def _details(refused: Refused) -> str:
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return f"{code.name} ({int(code)}): {refused.reason}"

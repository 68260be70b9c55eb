"""The broker's StandardAuthorizer: the pure core (`common.standard_authorizer`) over this broker's metadata image,
with the index rebuilt when the image's ACLs change and each denial logged once.

Both client listeners ask it: the Kafka listener and the gRPC client API, each with the caller's principal (the
SASL user, the certificate's mapped name, or User:ANONYMOUS) and host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog
from immutables import Map

from minikafka.common.acl import CLUSTER_NAME, AclBinding, AclOperation, ResourceType
from minikafka.common.grpc_support import FirstSightings
from minikafka.common.standard_authorizer import (
    AclIndex,
    Action,
    AuthorizerSettings,
    Decision,
    authorize,
    authorize_by_resource_type,
    authorized_operations,
)

ANONYMOUS_PRINCIPAL = "User:ANONYMOUS"


@dataclass(frozen=True)
class Caller:
    """Who sent a request: Kafka's principal and the client's address (what an ACL's host names)."""

    principal: str = ANONYMOUS_PRINCIPAL
    host: str = ""
    listener: str = ""


NOT_READY_RULE = "authorizer not ready"


@dataclass(frozen=True)
class CallerAuthorization:
    """One caller's questions to the authorizer, as a Kafka listener's context asks them (`config_denial`)."""

    authorizer: ClientAuthorizer
    caller: Caller

    def allowed(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return self.authorizer.allowed(self.caller, operation, resource_type, name)

    def allowed_on_cluster(self, operation: AclOperation) -> bool:
        return self.authorizer.allowed_on_cluster(self.caller, operation)


class ClientAuthorizer:
    def __init__(
        self,
        settings: AuthorizerSettings,
        acls: Callable[[], Map[str, AclBinding]],
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        """`ready`: whether the ACLs are loaded (the metadata caught up since start-up). Before, only super users
        are allowed, as Kafka's StandardAuthorizer before its initial load: a wiped broker's empty image must
        neither refuse what the ACLs allow as "no acl" nor, with allow.everyone.if.no.acl.found, allow what they
        deny."""
        self.settings = settings
        self._acls = acls
        self._ready = ready
        self._indexed: Map[str, AclBinding] | None = None
        self._index = AclIndex(())
        self._logged = FirstSightings()

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def allowed(self, caller: Caller, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Whether `caller` may do `operation` on the resource; a denial is logged (once per principal, operation
        and resource)."""
        if not self.settings.enabled:
            return True
        action = Action(caller.principal, caller.host, operation, resource_type, name)
        decision = self._decide(caller, action)
        if not decision.allowed:
            self._log(caller, action, decision.rule)
        return decision.allowed

    def allowed_on_cluster(self, caller: Caller, operation: AclOperation) -> bool:
        return self.allowed(caller, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def allowed_quietly(self, caller: Caller, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """As `allowed`, with no denial logged: Kafka filters what a caller may see so (logIfDenied false)."""
        if not self.settings.enabled:
            return True
        return self._decide(caller, Action(caller.principal, caller.host, operation, resource_type, name)).allowed

    def _decide(self, caller: Caller, action: Action) -> Decision:
        if self._not_ready_for(caller):
            return Decision(False, NOT_READY_RULE)
        return authorize(self._current(), self.settings, action)

    def allowed_on_some(self, caller: Caller, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Kafka's authorizeByResourceType (not logged: it only opens another way in)."""
        if not self.settings.enabled:
            return True
        action = Action(caller.principal, caller.host, operation, resource_type, "")
        if self._not_ready_for(caller):
            return False
        return authorize_by_resource_type(self._current(), self.settings, action).allowed

    def authorized_operations(self, caller: Caller, resource_type: ResourceType, name: str) -> int:
        """Kafka's authorizedOperations bit field for the resource (not logged, as Kafka asks without logging)."""
        if self._not_ready_for(caller):
            return 0
        return authorized_operations(self._current(), self.settings, caller.principal, caller.host, resource_type, name)

    def _not_ready_for(self, caller: Caller) -> bool:
        enabled = self.settings.enabled
        return enabled and caller.principal not in self.settings.super_users and not self._ready()

    def _current(self) -> AclIndex:
        acls = self._acls()
        if acls is not self._indexed:
            self._index, self._indexed = AclIndex(acls.values()), acls
        return self._index

    def _log(self, caller: Caller, action: Action, rule: str) -> None:
        key = (caller.principal, action.operation.name, action.resource_type.name, action.resource_name)
        if self._logged.first(key):
            structlog.get_logger().warning(
                "authorization_failed",
                principal=caller.principal,
                host=caller.host,
                listener=caller.listener,
                operation=action.operation.name,
                resource_type=action.resource_type.name,
                resource_name=action.resource_name,
                reason=rule,
            )

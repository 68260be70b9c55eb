"""CreateAcls, DescribeAcls and DeleteAcls as raw frames through the Kafka listener's dispatch, with what a hostile
client may put in them: resource types UNKNOWN (0) and ANY (1), operation and permission ANY, pattern types MATCH
and ANY, codes no version knows. The broker forwards to a controller running the real AclControlManager over an
image the broker replays. Each bad entry is INVALID_REQUEST with Kafka's message, nothing is written for it, and the
other entries of the request go through; filters select with Kafka's ANY and MATCH semantics."""

from __future__ import annotations

import asyncio
import io
import random
from types import SimpleNamespace
from typing import Any

from kio.schema.create_acls.v3 import request as create_v3
from kio.schema.delete_acls.v3 import request as delete_v3
from kio.schema.describe_acls.v3 import request as describe_v3
from kio.serial import entity_writer

from minikafka.broker.client_authorizer import Caller, ClientAuthorizer
from minikafka.broker.kafka_wire import apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, encode_response
from minikafka.common.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.acl_proto import binding_from_proto, binding_to_proto, filter_from_proto
from minikafka.common.errors import ErrorCode
from minikafka.common.standard_authorizer import AuthorizerSettings
from minikafka.kraft_controller.control import acl_control
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.pb import controller_pb2

UNKNOWN, ANY, TOPIC, GROUP, CLUSTER = 0, 1, 2, 3, 4
MATCH, LITERAL, PREFIXED = 2, 3, 4
ALL, READ, WRITE, DESCRIBE = 2, 3, 4, 8
DENY, ALLOW = 2, 3
INVALID_REQUEST = int(ErrorCode.INVALID_REQUEST)


class Controller:
    """The active controller: the real AclControlManager; what it commits the broker's image replays at once."""

    def __init__(self, metadata: Any) -> None:
        self.metadata = metadata
        self.rng = random.Random(7)

    def _commit(self, records: Any) -> None:
        image = self.metadata.image
        for record in records:
            image = image.replay(record, image.offset + 1)
        self.metadata.image = image

    async def call(self, method: str, request: Any) -> Any:
        image = self.metadata.image
        if method == "CreateAcls":
            created = acl_control.create_acls(image, [binding_from_proto(b) for b in request.creations], self.rng)
            self._commit(created.records)
            answer = controller_pb2.CreateAclsResponse()
            for r in created.response.results:
                answer.results.add(error_code=int(r.error_code), error_message=r.error_message)
            return answer
        deleted = acl_control.delete_acls(image, [filter_from_proto(f) for f in request.filters])
        self._commit(deleted.records)
        answer = controller_pb2.DeleteAclsResponse()
        for result in deleted.response.results:
            answer.filter_results.add(
                error_code=int(result.error_code),
                error_message=result.error_message,
                matching=[binding_to_proto(b) for b in result.matching],
            )
        return answer


def broker() -> WireContext:
    metadata = SimpleNamespace(image=MetadataImage())
    manager = SimpleNamespace(metadata=metadata, controller=Controller(metadata))
    authorizer = ClientAuthorizer(
        AuthorizerSettings(enabled=True, super_users=frozenset({"User:admin"})), lambda: metadata.image.acls
    )
    return WireContext(manager, "PLAINTEXT", caller=Caller("User:admin", "127.0.0.1"), authorizer=authorizer)  # type: ignore[arg-type]


def send(ctx: WireContext, body: Any) -> Any:
    """One frame as a client writes it, decoded and answered by the listener's dispatch."""
    key, version = int(type(body).__api_key__), int(type(body).__version__)
    header_schema = type(body).__header_schema__
    out = io.BytesIO()
    header = header_schema(request_api_key=key, request_api_version=version, correlation_id=9, client_id="raw")
    entity_writer(header_schema)(out, header)
    entity_writer(type(body))(out, body)

    async def exchange() -> Any:
        return await apis.dispatch(ctx, out.getvalue(), ApiHeader(key, version, 9))

    response = asyncio.run(exchange())
    encode_response(9, response)
    return response


def creation(kind: int = TOPIC, name: str = "orders", pattern: int = LITERAL, op: int = READ, perm: int = ALLOW) -> Any:
    return create_v3.AclCreation(
        resource_type=kind, resource_name=name, resource_pattern_type=pattern, principal="User:alice", host="*",
        operation=op, permission_type=perm,
    )  # fmt: skip


def outcomes(response: Any) -> list[tuple[int, str | None]]:
    return [(int(r.error_code.value), r.error_message) for r in response.results]


def test_create_acls_refuses_unknown_and_any_entries_with_kafkas_messages() -> None:
    ctx = broker()
    response = send(
        ctx,
        create_v3.CreateAclsRequest(
            creations=(
                creation(kind=UNKNOWN),
                creation(kind=ANY),
                creation(kind=77),  # a code this version does not know: UNKNOWN, as Kafka's fromCode
                creation(op=ANY),
                creation(op=UNKNOWN),
                creation(pattern=MATCH),
                creation(pattern=ANY),
                creation(perm=ANY),
                creation(kind=ANY, name=""),
                creation(kind=CLUSTER, name="orders"),
                creation(),  # the one good entry of the request
            )
        ),
    )
    assert outcomes(response) == [
        (INVALID_REQUEST, "Invalid resourceType UNKNOWN"),
        (INVALID_REQUEST, "Invalid resourceType ANY"),
        (INVALID_REQUEST, "Invalid resourceType UNKNOWN"),
        (INVALID_REQUEST, "Invalid operation ANY"),
        (INVALID_REQUEST, "Invalid operation UNKNOWN"),
        (INVALID_REQUEST, "Invalid patternType MATCH"),
        (INVALID_REQUEST, "Invalid patternType ANY"),
        (INVALID_REQUEST, "Invalid permissionType ANY"),
        (INVALID_REQUEST, "Invalid empty resource name"),
        (INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (0, None),
    ]
    assert list(ctx.manager.metadata.image.acls.values()) == [
        AclBinding(
            ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
            AclPermissionType.ALLOW,
        )
    ]  # fmt: skip


def describe_filter(kind: int = ANY, name: str | None = None, pattern: int = ANY, op: int = ANY) -> Any:
    return describe_v3.DescribeAclsRequest(
        resource_type_filter=kind, resource_name_filter=name, pattern_type_filter=pattern, principal_filter=None,
        host_filter=None, operation=op, permission_type=ANY,
    )  # fmt: skip


def described(ctx: WireContext, request: Any) -> tuple[int, str | None, list[tuple[int, str, int, int]]]:
    response = send(ctx, request)
    found = [(r.resource_type, r.resource_name, r.pattern_type, acl.operation) for r in response.resources
             for acl in r.acls]  # fmt: skip
    return int(response.error_code.value), response.error_message, sorted(found)


def seeded() -> WireContext:
    ctx = broker()
    created = send(
        ctx,
        create_v3.CreateAclsRequest(
            creations=(
                creation(name="orders", op=READ),
                creation(name="ord", pattern=PREFIXED, op=WRITE),
                creation(name="*", op=DESCRIBE),
                creation(name="payroll", op=ALL),
                creation(kind=GROUP, name="orders", op=READ),
            )
        ),
    )
    assert {code for code, _ in outcomes(created)} == {0}
    return ctx


def test_describe_acls_filters_with_any_and_match() -> None:
    ctx = seeded()
    everything = described(ctx, describe_filter())
    assert everything[:2] == (0, None) and len(everything[2]) == 5
    # ANY pattern type with a name: that exact name, whatever its pattern type.
    assert described(ctx, describe_filter(TOPIC, "orders"))[2] == [(TOPIC, "orders", LITERAL, READ)]
    # MATCH: every ACL that applies to the topic named: its literal name, the literal wildcard and the prefixes.
    assert described(ctx, describe_filter(TOPIC, "orders", MATCH))[2] == [
        (TOPIC, "*", LITERAL, DESCRIBE), (TOPIC, "ord", PREFIXED, WRITE), (TOPIC, "orders", LITERAL, READ),
    ]  # fmt: skip
    assert described(ctx, describe_filter(ANY, "orders", MATCH))[2] == [
        (TOPIC, "*", LITERAL, DESCRIBE), (TOPIC, "ord", PREFIXED, WRITE), (TOPIC, "orders", LITERAL, READ),
        (GROUP, "orders", LITERAL, READ),
    ]  # fmt: skip
    assert described(ctx, describe_filter(TOPIC, "ord", PREFIXED))[2] == [(TOPIC, "ord", PREFIXED, WRITE)]
    assert described(ctx, describe_filter(TOPIC, op=ALL))[2] == [(TOPIC, "payroll", LITERAL, ALL)]
    assert described(ctx, describe_filter(kind=UNKNOWN))[:2] == (INVALID_REQUEST, "Unknown patternFilter.")
    assert described(ctx, describe_filter(op=UNKNOWN))[:2] == (INVALID_REQUEST, "Unknown entryFilter.")


def delete_filter(kind: int = ANY, name: str | None = None, pattern: int = ANY, op: int = ANY) -> Any:
    return delete_v3.DeleteAclsFilter(
        resource_type_filter=kind, resource_name_filter=name, pattern_type_filter=pattern, principal_filter=None,
        host_filter=None, operation=op, permission_type=ANY,
    )  # fmt: skip


def test_delete_acls_filters_with_match_and_refuses_unknown_ones() -> None:
    ctx = seeded()
    response = send(
        ctx,
        delete_v3.DeleteAclsRequest(
            filters=(
                delete_filter(pattern=UNKNOWN),
                delete_filter(TOPIC, "orders", MATCH),
                delete_filter(TOPIC, "orders", MATCH),  # an ACL is deleted once, however many filters match it
                delete_filter(op=UNKNOWN),
            )
        ),
    )
    results = [
        (int(r.error_code.value), r.error_message, sorted((m.resource_name, m.pattern_type) for m in r.matching_acls))
        for r in response.filter_results
    ]
    assert results == [
        (INVALID_REQUEST, "Unknown patternFilter.", []),
        (0, None, [("*", LITERAL), ("ord", PREFIXED), ("orders", LITERAL)]),
        (0, None, []),
        (INVALID_REQUEST, "Unknown entryFilter.", []),
    ]
    left = described(ctx, describe_filter())[2]
    assert left == [(TOPIC, "payroll", LITERAL, ALL), (GROUP, "orders", LITERAL, READ)]

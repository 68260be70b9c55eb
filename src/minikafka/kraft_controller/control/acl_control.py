"""Kafka's AclControlManager: ACLs are metadata, created and deleted by CreateAcls and DeleteAcls, described from an
image. A binding already present is not written again; a DeleteAcls filter deletes what it matches (nothing is not
an error), each ACL once however many filters match it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from minikafka.common.acl import AclBinding, AclBindingFilter, binding_refusal, filter_refusal
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.replication_control import RandomSource
from minikafka.kraft_controller.control.requests import (
    AclCreationResult,
    CreateAclsResponse,
    DeleteAclsFilterResult,
    DeleteAclsResponse,
    DescribeAclsResponse,
)
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import AccessControlEntry, Record, RemoveAccessControlEntry

# Kafka bounds the ACLs of a cluster (MAX_ACLS_PER_REQUEST aside); a client must not grow the image without end.
MAX_ACLS = 100_000


def create_acls(
    image: MetadataImage, creations: Sequence[AclBinding], rng: RandomSource
) -> ControllerResult[CreateAclsResponse]:
    existing = set(image.acls.values())
    records: list[Record] = []
    results = []
    for binding in creations:
        refusal = binding_refusal(binding)
        if refusal is not None:
            results.append(AclCreationResult(refusal.error, refusal.message))
            continue
        if binding not in existing:
            if len(existing) >= MAX_ACLS:
                results.append(AclCreationResult(ErrorCode.INVALID_REQUEST, f"The cluster holds {MAX_ACLS} ACLs"))
                continue
            existing.add(binding)
            records.append(AccessControlEntry.of(_new_id(image, rng), binding))
        results.append(AclCreationResult(ErrorCode.NONE))
    return ControllerResult(tuple(records), CreateAclsResponse(tuple(results)))


def _new_id(image: MetadataImage, rng: RandomSource) -> str:
    while True:
        acl_id = str(uuid.UUID(bytes=rng.randbytes(16), version=4))
        if acl_id not in image.acls:
            return acl_id


def delete_acls(image: MetadataImage, filters: Sequence[AclBindingFilter]) -> ControllerResult[DeleteAclsResponse]:
    deleted: set[str] = set()
    records: list[Record] = []
    results = []
    for acl_filter in filters:
        refusal = filter_refusal(acl_filter)
        if refusal is not None:
            results.append(DeleteAclsFilterResult(refusal.error, refusal.message))
            continue
        matching = []
        for acl_id, binding in sorted(image.acls.items()):
            if acl_id not in deleted and acl_filter.matches(binding):
                deleted.add(acl_id)
                records.append(RemoveAccessControlEntry(acl_id))
                matching.append(binding)
        results.append(DeleteAclsFilterResult(ErrorCode.NONE, matching=tuple(matching)))
    return ControllerResult(tuple(records), DeleteAclsResponse(tuple(results)))


def describe_acls(image: MetadataImage, acl_filter: AclBindingFilter) -> DescribeAclsResponse:
    refusal = filter_refusal(acl_filter)
    if refusal is not None:
        return DescribeAclsResponse(refusal.error, refusal.message)
    found = tuple(b for _, b in sorted(image.acls.items()) if acl_filter.matches(b))
    return DescribeAclsResponse(ErrorCode.NONE, bindings=found)

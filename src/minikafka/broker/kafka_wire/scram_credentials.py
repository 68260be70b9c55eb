"""AlterUserScramCredentials (51), forwarded to the active controller as a KRaft broker forwards it, and
DescribeUserScramCredentials (50), answered from this broker's metadata image: iterations and mechanisms only."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.forwarded import forwarded_outcome
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.scram_control import describe_user_scram_credentials
from minikafka.pb import controller_pb2

DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS = 50, 51
VERSIONS = {DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0), ALTER_USER_SCRAM_CREDENTIALS: (0, 0)}
CLUSTER_DENIED = "Cluster authorization failed."


async def alter(ctx: WireContext, request: Request) -> Any:
    body = request.body
    if not ctx.allowed_on_cluster(AclOperation.ALTER):  # Kafka: ALTER on the cluster, else every user refused
        cls = response_class(ALTER_USER_SCRAM_CREDENTIALS, request.header.api_version)
        entry = sibling(cls, "AlterUserScramCredentialsResult")
        users = dict.fromkeys(a.name for a in (*body.deletions, *body.upsertions))
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        refused = tuple(build(entry, user=u, error_code=denied, error_message=CLUSTER_DENIED) for u in users)
        return build(cls, throttle_time=0, results=refused)
    forwarded = controller_pb2.AlterUserScramCredentialsRequest()
    for deletion in body.deletions:
        forwarded.deletions.add(name=deletion.name, mechanism=deletion.mechanism)
    for upsertion in body.upsertions:
        forwarded.upsertions.add(
            name=upsertion.name,
            mechanism=upsertion.mechanism,
            iterations=upsertion.iterations,
            salt=upsertion.salt,
            salted_password=upsertion.salted_password,
        )
    answer = await ctx.manager.controller.call("AlterUserScramCredentials", forwarded)
    cls = response_class(ALTER_USER_SCRAM_CREDENTIALS, request.header.api_version)
    entry = sibling(cls, "AlterUserScramCredentialsResult")
    results = {r.user: r for r in answer.results} if answer is not None else {}
    users = dict.fromkeys(a.name for a in (*body.deletions, *body.upsertions))
    entries = []
    for user in users:
        code, message = forwarded_outcome(answer, results.get(user), "user")
        entries.append(build(entry, user=user, error_code=code, error_message=message))
    return build(cls, throttle_time=0, results=tuple(entries))


def describe(ctx: WireContext, request: Request) -> Any:
    users = request.body.users
    if not ctx.allowed_on_cluster(AclOperation.DESCRIBE):  # Kafka: DESCRIBE on the cluster
        cls = response_class(DESCRIBE_USER_SCRAM_CREDENTIALS, request.header.api_version)
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return build(cls, throttle_time=0, error_code=denied, error_message=CLUSTER_DENIED, results=())
    # Null or empty both ask for every user, as Kafka's handler reads them (librdkafka sends an empty array).
    described = describe_user_scram_credentials(ctx.manager.metadata.image, [u.name for u in users] if users else None)
    cls = response_class(DESCRIBE_USER_SCRAM_CREDENTIALS, request.header.api_version)
    result_cls, info_cls = sibling(cls, "DescribeUserScramCredentialsResult"), sibling(cls, "CredentialInfo")
    results = tuple(
        build(
            result_cls,
            user=r.user,
            error_code=r.error_code,
            error_message=r.error_message or None,
            credential_infos=tuple(
                build(info_cls, mechanism=i.mechanism, iterations=i.iterations) for i in r.credential_infos
            ),
        )
        for r in described.results
    )
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, error_message=None, results=results)


HANDLERS = {DESCRIBE_USER_SCRAM_CREDENTIALS: describe, ALTER_USER_SCRAM_CREDENTIALS: alter}

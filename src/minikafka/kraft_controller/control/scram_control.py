"""Kafka's ScramControlManager: SCRAM credentials are metadata, set and deleted by AlterUserScramCredentials and
described from an image. The controller turns the client's salted password into StoredKey and ServerKey, so the
log never holds a password or anything a client could log in with."""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.common.errors import ErrorCode
from minikafka.common.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism, credential_from_salted
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.requests import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    CredentialInfo,
    DescribedUser,
    DescribeUserScramCredentialsResponse,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
    UserResult,
)
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Record, RemoveUserScramCredential, UserScramCredential

Alteration = ScramCredentialDeletion | ScramCredentialUpsertion


def alter_user_scram_credentials(
    image: MetadataImage, request: AlterUserScramCredentialsRequest
) -> ControllerResult[AlterUserScramCredentialsResponse]:
    by_user: dict[str, list[Alteration]] = {}
    given: tuple[Alteration, ...] = (*request.deletions, *request.upsertions)
    for alteration in given:
        by_user.setdefault(alteration.name, []).append(alteration)
    records: list[Record] = []
    results = []
    for user, alterations in by_user.items():
        refusal = _refusal(image, user, alterations)
        if refusal is not None:
            results.append(refusal)
            continue
        records += [_record(alteration) for alteration in alterations]
        results.append(UserResult(user, ErrorCode.NONE))
    return ControllerResult(tuple(records), AlterUserScramCredentialsResponse(tuple(results)))


def _refusal(image: MetadataImage, user: str, alterations: Sequence[Alteration]) -> UserResult | None:
    """Kafka's checks, in its order; the first failing one refuses every alteration of the user."""
    if not user:
        return UserResult(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    mechanisms = [alteration.mechanism for alteration in alterations]
    if len(set(mechanisms)) != len(mechanisms):
        message = "A user credential cannot be altered twice in the same request"
        return UserResult(user, ErrorCode.DUPLICATE_RESOURCE, message)
    for alteration in alterations:
        mechanism = _mechanism(alteration.mechanism)
        if mechanism is None:
            return UserResult(user, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        if isinstance(alteration, ScramCredentialDeletion):
            if image.scram_credential(user, mechanism) is None:
                message = "Attempt to delete a user credential that does not exist"
                return UserResult(user, ErrorCode.RESOURCE_NOT_FOUND, message)
        elif alteration.iterations < MIN_ITERATIONS:
            return UserResult(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif alteration.iterations > MAX_ITERATIONS:
            return UserResult(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        elif not alteration.salt or not alteration.salted_password:
            return UserResult(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")
    return None


def _mechanism(number: int) -> ScramMechanism | None:
    return ScramMechanism(number) if number in ScramMechanism._value2member_map_ else None


def _record(alteration: Alteration) -> Record:
    mechanism = ScramMechanism(alteration.mechanism)
    if isinstance(alteration, ScramCredentialDeletion):
        return RemoveUserScramCredential(alteration.name, mechanism)
    credential = credential_from_salted(mechanism, alteration.salt, alteration.salted_password, alteration.iterations)
    return UserScramCredential(
        alteration.name,
        mechanism,
        credential.salt,
        credential.stored_key,
        credential.server_key,
        credential.iterations,
    )


def describe_user_scram_credentials(
    image: MetadataImage, users: Sequence[str] | None
) -> DescribeUserScramCredentialsResponse:
    """Every user with a credential when `users` is None; otherwise the named ones, RESOURCE_NOT_FOUND for a user
    without any, DUPLICATE_RESOURCE for a name given twice."""
    names = sorted(image.scram_credentials) if users is None else list(users)
    results = []
    for name in dict.fromkeys(names):
        if users is not None and names.count(name) > 1:
            message = "Cannot describe SCRAM credentials for the same user twice in a single request"
            results.append(DescribedUser(name, ErrorCode.DUPLICATE_RESOURCE, message))
            continue
        mechanisms = image.scram_credentials.get(name)
        if not mechanisms:
            message = "Attempt to describe a user credential that does not exist"
            results.append(DescribedUser(name, ErrorCode.RESOURCE_NOT_FOUND, message))
            continue
        infos = tuple(CredentialInfo(int(m), c.iterations) for m, c in sorted(mechanisms.items()))
        results.append(DescribedUser(name, ErrorCode.NONE, credential_infos=infos))
    return DescribeUserScramCredentialsResponse(tuple(results))

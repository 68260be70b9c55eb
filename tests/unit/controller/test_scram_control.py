"""AlterUserScramCredentials and DescribeUserScramCredentials on the controller: Kafka's checks, records that hold
no password, replay into the image and its snapshot."""

from __future__ import annotations

from minikafka.common.errors import ErrorCode
from minikafka.common.scram import ScramMechanism, credential_from_salted, salted_password
from minikafka.kraft_controller.control import scram_control
from minikafka.kraft_controller.control.record_events import describe_record_event
from minikafka.kraft_controller.control.requests import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
    UserResult,
)
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    RemoveUserScramCredential,
    UserScramCredential,
    decode_record,
    encode_record,
)

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
SALTED = salted_password(SHA512, "alice-secret", b"salt", 4096)


def _upsert(name: str, mechanism: int = 2, iterations: int = 4096) -> ScramCredentialUpsertion:
    return ScramCredentialUpsertion(name, mechanism, iterations, b"salt", SALTED)


def _alter(image: MetadataImage, *alterations: ScramCredentialUpsertion | ScramCredentialDeletion):
    deletions = tuple(a for a in alterations if isinstance(a, ScramCredentialDeletion))
    upsertions = tuple(a for a in alterations if isinstance(a, ScramCredentialUpsertion))
    return scram_control.alter_user_scram_credentials(image, AlterUserScramCredentialsRequest(deletions, upsertions))


def _replay(image: MetadataImage, records) -> MetadataImage:  # noqa: ANN001
    for record in records:
        image = image.replay(record, image.offset + 1)
    return image


def test_upsert_stores_keys_not_the_password() -> None:
    result = _alter(MetadataImage(), _upsert("alice"))
    assert result.response.results == (UserResult("alice", ErrorCode.NONE),)
    (record,) = result.records
    expected = credential_from_salted(SHA512, b"salt", SALTED, 4096)
    assert record == UserScramCredential("alice", SHA512, b"salt", expected.stored_key, expected.server_key, 4096)
    assert SALTED not in encode_record(record) and b"alice-secret" not in encode_record(record)
    assert decode_record(encode_record(record)) == record
    image = _replay(MetadataImage(), result.records)
    assert image.scram_credential("alice", SHA512) == expected
    assert image.scram_credential("alice", SHA256) is None


def test_kafka_refusals_fail_every_alteration_of_that_user_only() -> None:
    image = MetadataImage()
    cases = [
        (_upsert("a", iterations=4095), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        (_upsert("b", iterations=16385), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        (_upsert("c", mechanism=3), ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        (_upsert(""), ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        (ScramCredentialDeletion("d", 2), ErrorCode.RESOURCE_NOT_FOUND, "does not exist"),
    ]
    for alteration, code, message in cases:
        result = _alter(image, alteration, _upsert("ok"))
        refused, accepted = sorted(result.response.results, key=lambda r: r.user != alteration.name)
        assert refused.error_code is code and message in refused.error_message
        assert accepted == UserResult("ok", ErrorCode.NONE)
        assert [record.name for record in result.records] == ["ok"]
    twice = _alter(image, _upsert("e"), ScramCredentialDeletion("e", 2))
    assert twice.records == () and twice.response.results[0].error_code is ErrorCode.DUPLICATE_RESOURCE


def test_delete_describe_and_snapshot() -> None:
    image = _replay(MetadataImage(), _alter(MetadataImage(), _upsert("alice"), _upsert("bob", mechanism=1)).records)
    image = _replay(image, _alter(image, _upsert("alice", mechanism=1, iterations=8192)).records)
    described = scram_control.describe_user_scram_credentials(image, None).results
    assert [(d.user, [(i.mechanism, i.iterations) for i in d.credential_infos]) for d in described] == [
        ("alice", [(1, 8192), (2, 4096)]),
        ("bob", [(1, 4096)]),
    ]
    named = scram_control.describe_user_scram_credentials(image, ["nobody", "bob", "bob"]).results
    assert [(d.user, d.error_code) for d in named] == [
        ("nobody", ErrorCode.RESOURCE_NOT_FOUND),
        ("bob", ErrorCode.DUPLICATE_RESOURCE),
    ]
    assert MetadataImage.from_records(image.to_records(), image.offset) == image
    deleted = _alter(image, ScramCredentialDeletion("bob", 1))
    assert deleted.records == (RemoveUserScramCredential("bob", SHA256),)
    after = _replay(image, deleted.records)
    assert "bob" not in after.scram_credentials  # no empty entry left: a snapshot replays to an equal image
    assert MetadataImage.from_records(after.to_records(), after.offset) == after


def test_replay_events_name_the_user_never_the_keys() -> None:
    (record,) = _alter(MetadataImage(), _upsert("alice")).records
    image = _replay(MetadataImage(), [record])
    event, fields = describe_record_event(record, image)
    assert (event, fields) == (
        "user_scram_credential_changed",
        {"user": "alice", "mechanism": "SCRAM-SHA-512", "iterations": 4096},
    )
    removal = RemoveUserScramCredential("alice", SHA512)
    assert describe_record_event(removal, _replay(image, [removal])) == (
        "user_scram_credential_deleted",
        {"user": "alice", "mechanism": "SCRAM-SHA-512"},
    )


def test_through_the_controller_state_machine(harness) -> None:  # noqa: ANN001 - controller_harness.Harness
    """The active controller's path: generate, commit, then describe from committed state."""
    controller = harness.controller
    assert controller.describe_user_scram_credentials(None).results == ()
    request = AlterUserScramCredentialsRequest((), (_upsert("alice"),))
    assert harness.commit(controller.alter_user_scram_credentials(request)).results == (
        UserResult("alice", ErrorCode.NONE),
    )
    (described,) = controller.describe_user_scram_credentials(("alice",)).results
    assert (described.user, described.error_code, described.credential_infos[0].iterations) == (
        "alice",
        ErrorCode.NONE,
        4096,
    )
    assert controller.committed.scram_credential("alice", SHA512) is not None

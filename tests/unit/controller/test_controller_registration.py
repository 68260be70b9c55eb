"""KIP-919 at the active controller: a controller's registration is written once per incarnation; a retry of the
same one writes nothing, and a malformed one is refused."""

from __future__ import annotations

import pytest

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control.controller_registration import register_controller
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Endpoint, RegisterController

REGISTRATION = RegisterController(101, "incarnation-1", (Endpoint("CONTROLLER_KAFKA", "127.0.1.1", 9094),))


def test_a_registration_is_written_once_and_a_new_incarnation_again() -> None:
    assert register_controller(MetadataImage(), REGISTRATION).records == (REGISTRATION,)
    image = MetadataImage().replay(REGISTRATION, 7)
    assert register_controller(image, REGISTRATION).records == ()
    restarted = RegisterController(101, "incarnation-2", REGISTRATION.endpoints)
    assert register_controller(image, restarted).records == (restarted,)


@pytest.mark.parametrize("bad", [RegisterController(-1, "x"), RegisterController(101, "")])
def test_a_malformed_registration_is_an_invalid_request(bad: RegisterController) -> None:
    with pytest.raises(KafkaError) as raised:
        register_controller(MetadataImage(), bad)
    assert raised.value.code == ErrorCode.INVALID_REQUEST

"""`minikafka configs --add-config` parses kafka-configs' SCRAM syntax; bad input is one KafkaError line."""

from __future__ import annotations

import pytest

from minikafka.client.user_scram_command import ScramConfig, parse_add_config
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.scram import ScramMechanism


def test_kafka_configs_syntax() -> None:
    assert parse_add_config("SCRAM-SHA-512=[iterations=8192,password=alice-secret],SCRAM-SHA-256=[password=p=q]") == [
        ScramConfig(ScramMechanism.SCRAM_SHA_512, "alice-secret", 8192),
        ScramConfig(ScramMechanism.SCRAM_SHA_256, "p=q", 4096),
    ]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("SCRAM-SHA-1=[password=x]", ErrorCode.UNSUPPORTED_SASL_MECHANISM),
        ("SCRAM-SHA-512=[iterations=8192]", ErrorCode.INVALID_CONFIG),
        ("SCRAM-SHA-512=[password=x,salt=y]", ErrorCode.INVALID_CONFIG),
        ("SCRAM-SHA-512=[iterations=many,password=x]", ErrorCode.INVALID_CONFIG),
        ("SCRAM-SHA-512=password", ErrorCode.INVALID_CONFIG),
        ("", ErrorCode.INVALID_CONFIG),
    ],
)
def test_bad_input(text: str, code: ErrorCode) -> None:
    with pytest.raises(KafkaError) as raised:
        parse_add_config(text)
    assert raised.value.code is code

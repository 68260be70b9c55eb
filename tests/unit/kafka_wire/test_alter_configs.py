"""IncrementalAlterConfigs (44) and AlterConfigs (33) on the Kafka listener: advertised, forwarded to the controller
with their ops, answered in request order; a broker resource of another broker and a key that cannot change at run
time are refused here, with Kafka's error and message, and never forwarded."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from kio.schema.alter_configs.v2 import request as legacy_v2
from kio.schema.incremental_alter_configs.v1 import request as incremental_v1

from minikafka.broker.config import BrokerConfig
from minikafka.broker.kafka_wire import alter_configs, api_versions, apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.common.config import load_config
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2

CONFIG = load_config(
    BrokerConfig,
    {
        "node.id": "1",
        "process.roles": "broker",
        "listeners": "GRPC://127.0.0.1:9092",
        "controller.quorum.voters": "101@127.0.0.1:9000",
        "log.dirs": "/tmp/broker-1",
    },
)


class FakeController:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.forwarded: list[tuple[str, Any]] = []

    async def call_forwarded(self, method: str, request: Any) -> Any:
        self.forwarded.append((method, request))
        return self.answer


def answered(key: int, version: int, body: Any, answer: Any) -> tuple[Any, FakeController]:
    controller = FakeController(answer)
    ctx = WireContext(SimpleNamespace(controller=controller, config=CONFIG), "PLAINTEXT")  # type: ignore[arg-type]
    response = asyncio.run(apis.HANDLERS[key](ctx, Request(ApiHeader(key, version, 1), "test", body)))
    encode_response(1, response)
    return response, controller


def _resource(module: Any, resource_type: int, name: str, *configs: Any) -> Any:
    return module.AlterConfigsResource(resource_type=resource_type, resource_name=name, configs=configs)


def test_advertised() -> None:
    assert api_versions.SUPPORTED[alter_configs.INCREMENTAL_ALTER_CONFIGS] == (0, 1)
    assert api_versions.SUPPORTED[alter_configs.ALTER_CONFIGS] == (0, 2)


def test_incremental_alter_is_forwarded_with_ops_and_answered_in_request_order() -> None:
    body = incremental_v1.IncrementalAlterConfigsRequest(
        resources=(
            _resource(
                incremental_v1,
                2,
                "orders",
                incremental_v1.AlterableConfig(name="retention.ms", config_operation=0, value="1000"),
                incremental_v1.AlterableConfig(name="segment.bytes", config_operation=1, value=None),
            ),
            _resource(incremental_v1, 4, "2", incremental_v1.AlterableConfig(name="x", config_operation=0, value="1")),
            _resource(
                incremental_v1,
                4,
                "1",
                incremental_v1.AlterableConfig(name="log.dirs", config_operation=0, value="/x"),
            ),
            _resource(
                incremental_v1,
                4,
                "",
                incremental_v1.AlterableConfig(name="log.retention.ms", config_operation=0, value="5"),
            ),
        ),
        validate_only=True,
    )
    answer = controller_pb2.AlterConfigsResponse()
    for resource_type, name, code in ((2, "orders", 0), (4, "", ErrorCode.INVALID_CONFIG)):
        answer.results.add(
            resource=controller_pb2.ConfigResourceRef(resource_type=resource_type, resource_name=name),
            error_code=code,
            error_message="bad" if code else "",
        )
    response, controller = answered(44, 1, body, answer)
    [(method, forwarded)] = controller.forwarded
    assert method == "AlterConfigs" and forwarded.validate_only and forwarded.incremental
    assert [(r.resource.resource_type, r.resource.resource_name) for r in forwarded.resources] == [
        (2, "orders"),
        (4, ""),
    ]
    ops = [(c.name, c.op, c.value if c.HasField("value") else None) for c in forwarded.resources[0].configs]
    assert ops == [("retention.ms", 0, "1000"), ("segment.bytes", 1, None)]
    got = [(r.resource_name, int(r.error_code.value), r.error_message) for r in response.responses]
    assert got == [
        ("orders", 0, None),
        ("2", int(ErrorCode.INVALID_REQUEST), "Unexpected broker id, expected 1 or empty string, but received 2"),
        ("1", int(ErrorCode.INVALID_REQUEST), "Cannot update these configs dynamically: Set(log.dirs)"),
        ("", int(ErrorCode.INVALID_CONFIG), "bad"),
    ]


def test_legacy_alter_configs_sends_sets_and_no_controller_is_a_timeout() -> None:
    body = legacy_v2.AlterConfigsRequest(
        resources=(_resource(legacy_v2, 2, "orders", legacy_v2.AlterableConfig(name="retention.ms", value="1")),),
        validate_only=False,
    )
    response, controller = answered(33, 2, body, None)
    [(_, forwarded)] = controller.forwarded
    assert not forwarded.incremental and forwarded.resources[0].configs[0].op == 0
    [entry] = response.responses
    assert int(entry.error_code.value) == ErrorCode.REQUEST_TIMED_OUT

"""DeleteTopics on the Kafka listener: forwarded to the controller, answered with one entry per topic named."""

from __future__ import annotations

import asyncio
import datetime
from types import SimpleNamespace
from typing import Any

from kio.schema.delete_topics.v4 import request as delete_v4

from minikafka.broker.kafka_wire import apis
from minikafka.broker.kafka_wire.api_versions import DELETE_TOPICS
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2


class FakeController:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.forwarded: list[Any] = []

    async def call_forwarded(self, method: str, request: Any) -> Any:
        self.forwarded.append(request)
        return self.answer


def test_a_topic_named_twice_gets_one_answer_as_kafka_gives() -> None:
    # Kafka's ControllerApis answers a duplicated name once, INVALID_REQUEST "Duplicate topic name.".
    answer = controller_pb2.DeleteTopicsResponse()
    answer.responses.add(name="t", error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name.")
    answer.responses.add(name="u", topic_id=bytes(16), error_code=ErrorCode.NONE)
    controller = FakeController(answer)
    manager = SimpleNamespace(controller=controller, metadata=SimpleNamespace(image=None))
    ctx = WireContext(manager, "PLAINTEXT")  # type: ignore[arg-type]
    body = delete_v4.DeleteTopicsRequest(topic_names=("t", "u", "t"), timeout=datetime.timedelta(seconds=30))
    response = asyncio.run(apis.HANDLERS[DELETE_TOPICS](ctx, Request(ApiHeader(DELETE_TOPICS, 4, 1), "test", body)))
    encode_response(1, response)
    [forwarded] = controller.forwarded
    assert list(forwarded.topic_names) == ["t", "u", "t"]  # the controller decides what a duplicate gets
    answers = [(r.name, int(r.error_code.value)) for r in response.responses]
    assert answers == [("t", ErrorCode.INVALID_REQUEST), ("u", ErrorCode.NONE)]

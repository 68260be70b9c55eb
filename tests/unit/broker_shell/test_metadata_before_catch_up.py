"""A broker whose metadata has not caught up after start-up (e.g. rebooted with a wiped disk) refuses Metadata
with UNAVAILABLE, so clients ask another broker instead of being told that existing topics are unknown."""

from __future__ import annotations

from types import SimpleNamespace

import grpc
import pytest

from minikafka.broker.client_authorizer import ClientAuthorizer
from minikafka.broker.fetch_session import FetchSessionCache
from minikafka.broker.service import BrokerService
from minikafka.common.standard_authorizer import AuthorizerSettings
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.pb import broker_pb2


class Aborted(Exception):
    pass


class FakeContext:
    def __init__(self) -> None:
        self.aborted: tuple[grpc.StatusCode, str] | None = None

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborted = (code, details)
        raise Aborted


def manager(ready: bool) -> SimpleNamespace:
    metadata = SimpleNamespace(image=MetadataImage(), leader=(None, 0))
    authorizer = ClientAuthorizer(AuthorizerSettings(), lambda: metadata.image.acls)  # off, as by default
    return SimpleNamespace(
        metadata_ready=ready, metadata=metadata, config=SimpleNamespace(cluster_id="c"), authorizer=authorizer
    )


async def test_metadata_is_refused_until_caught_up() -> None:
    context = FakeContext()
    with pytest.raises(Aborted):
        await BrokerService(manager(ready=False), "PLAINTEXT", FetchSessionCache(0, lambda: 1)).Metadata(
            broker_pb2.MetadataRequest(topics=["orders"]), context
        )
    assert context.aborted is not None and context.aborted[0] == grpc.StatusCode.UNAVAILABLE


async def test_metadata_answers_once_caught_up() -> None:
    context = FakeContext()
    response = await BrokerService(manager(ready=True), "PLAINTEXT", FetchSessionCache(0, lambda: 1)).Metadata(
        broker_pb2.MetadataRequest(topics=["orders"]), context
    )
    assert context.aborted is None
    assert [(t.name, t.error_code) for t in response.topics] == [("orders", 3)]  # UNKNOWN_TOPIC_OR_PARTITION

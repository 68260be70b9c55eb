"""Which module answers which API key; ApiVersions at a version it does not know still gets an answer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from minikafka.broker.kafka_wire import (
    acls,
    admin_topics,
    alter_configs,
    alter_replica_log_dirs,
    api_versions,
    delete_records,
    describe,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_topic_partitions,
    fetch,
    group_apis,
    init_producer_id,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    partition_admin,
    produce,
    raft_voters,
    sasl_apis,
    scram_credentials,
    transactions,
    update_features,
    write_txn_markers,
)
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import API_VERSIONS_KEY, ApiHeader, FrameError, Request, decode_request
from minikafka.common.errors import ErrorCode

Handler = Callable[[WireContext, Request], Any]

HANDLERS: dict[int, Handler] = {
    api_versions.PRODUCE: produce.handle,
    api_versions.FETCH: fetch.handle,
    api_versions.LIST_OFFSETS: list_offsets.handle,
    api_versions.METADATA: metadata.handle,
    init_producer_id.INIT_PRODUCER_ID: init_producer_id.handle,
    api_versions.CREATE_TOPICS: admin_topics.create_topics,
    api_versions.DELETE_TOPICS: admin_topics.delete_topics,
    api_versions.CREATE_PARTITIONS: admin_topics.create_partitions,
    api_versions.DESCRIBE_CONFIGS: describe.describe_configs,
    api_versions.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    api_versions.DESCRIBE_CLUSTER: describe.describe_cluster,
    API_VERSIONS_KEY: lambda ctx, request: api_versions.response(
        request.header.api_version, hidden=ctx.hidden_apis, features=_features(ctx)
    ),
    **delete_records.HANDLERS,
    **alter_replica_log_dirs.HANDLERS,
    **describe_log_dirs.HANDLERS,
    **describe_producers.HANDLERS,
    **describe_quorum.HANDLERS,
    **describe_topic_partitions.HANDLERS,
    **group_apis.HANDLERS,
    **partition_admin.HANDLERS,
    **sasl_apis.HANDLERS,
    **scram_credentials.HANDLERS,
    **transactions.HANDLERS,
    **acls.HANDLERS,
    **write_txn_markers.HANDLERS,
    **raft_voters.HANDLERS,
    **update_features.HANDLERS,
    alter_configs.ALTER_CONFIGS: alter_configs.alter_configs,
    alter_configs.INCREMENTAL_ALTER_CONFIGS: alter_configs.incremental_alter_configs,
}


def dispatch(ctx: WireContext, frame: bytes | memoryview, header: ApiHeader) -> Awaitable[Any | None]:
    """Start answering one frame now (a Produce appends before the next frame is read); the awaitable gives the
    response entity, or None when none is sent. Raises FrameError when the connection must close."""
    return dispatch_to(HANDLERS, ctx, ctx.hidden_apis, frame, header)


def dispatch_to(
    handlers: Mapping[int, Callable[[Any, Request], Any]],
    ctx: Any,
    hidden: frozenset[int],
    frame: bytes | memoryview,
    header: ApiHeader,
) -> Awaitable[Any | None]:
    """`dispatch` over a listener's own table (a controller's answers fewer APIs): keys in `hidden` are neither
    advertised nor answered."""
    if header.api_key == API_VERSIONS_KEY and not api_versions.supports(header.api_key, header.api_version):
        # The client cannot know our versions yet: v0's format, the error and the ranges to retry with.
        return _ready(api_versions.response(header.api_version, ErrorCode.UNSUPPORTED_VERSION, hidden))
    if not api_versions.supports(header.api_key, header.api_version, hidden):
        raise FrameError(
            ErrorCode.UNSUPPORTED_VERSION, f"API key {header.api_key} version {header.api_version} is not supported"
        )
    request = decode_request(frame, header)
    answer = handlers[header.api_key](ctx, request)
    return answer if isinstance(answer, Awaitable) else _ready(answer)


def _ready(value: Any) -> Awaitable[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


def _features(ctx: WireContext) -> api_versions.FinalizedFeatures:
    image = ctx.manager.metadata.image
    return api_versions.finalized_features(image.features, image.offset)

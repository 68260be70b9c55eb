"""Fuzz a broker's Kafka listener and its gRPC client listener, each for a bounded time and count, on loopback.

    .venv/bin/python benchmarks/fuzz_listeners.py [--seconds 60] [--max-requests 100000] [--seed 1]

Starts a cluster of one controller and one broker (fault injection off), then, one listener after the other:
- Kafka listener: random bytes, random bodies behind a valid size prefix, valid requests (ApiVersions, Metadata,
  Produce, FindCoordinator, OffsetFetch, ListOffsets) with random keys, versions and bytes flipped, cut or added,
  huge size prefixes followed by a few bytes, several frames to a connection;
- gRPC listener: every Broker method with random bytes, with random messages of its request type (fields filled
  by type from the descriptor) and with those messages' bytes flipped or cut.
It prints the broker's RSS and open files before and after each listener (once its connections are gone) and
exits 1 if the broker died or either figure grew by more than the bounds.
"""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported

# isort: split
import argparse
import asyncio
import datetime
import io
import json
import random
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from minikafka.client.kafka_wire_client import nested, request_class
from minikafka.common.record_batch import Record, build_batch
from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster, is_alive
from minikafka.pb import broker_pb2

RSS_GROWTH_MIB = 200  # bounds: what the broker may hold more after a fuzz run than before it
OPEN_FILES_GROWTH = 20
CONCURRENCY = 16
ANSWER_WAIT_S = 0.3  # how long a fuzzing client waits for an answer before it moves on
TOPIC = "fuzz"
# No fault injection service to fuzz; a small __consumer_offsets (FindCoordinator creates it) of known files.
SETTINGS = {
    "fault.injection.enable": "false",
    "offsets.topic.num.partitions": "1",
    "offsets.topic.replication.factor": "1",
}
SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class Figures:
    rss_mib: float
    open_files: int
    alive: bool


@dataclass(frozen=True)
class ListenerRun:
    listener: str
    requests: int
    seconds: float
    before: Figures
    after: Figures

    @property
    def bounded(self) -> bool:
        return (
            self.after.alive
            and self.after.rss_mib - self.before.rss_mib <= RSS_GROWTH_MIB
            and self.after.open_files - self.before.open_files <= OPEN_FILES_GROWTH
        )


def figures(pid: int) -> Figures:
    if not is_alive(pid):
        return Figures(0.0, 0, False)
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return Figures(round(rss_kib / 1024, 1), len(list(Path(f"/proc/{pid}/fd").iterdir())), True)


def settled(pid: int, baseline: Figures, timeout_s: float = 30) -> Figures:
    """The broker's figures once the fuzzing connections are closed on its side: its open files back at the
    baseline or unchanged for a second, or at the deadline."""
    deadline = time.monotonic() + timeout_s
    readings: list[int] = []
    while True:
        now = figures(pid)
        readings = [*readings[-4:], now.open_files]
        steady = len(readings) == 5 and len(set(readings)) == 1
        if not now.alive or now.open_files <= baseline.open_files or steady or time.monotonic() > deadline:
            return now
        time.sleep(0.25)


# ---- Kafka listener ----


def encode_request(body: Any, correlation_id: int = 1) -> bytes:
    """A request frame without its size prefix (kio's writer, as minikafka's own wire client)."""
    from kio.serial import entity_writer

    header_cls = type(body).__header_schema__
    out = io.BytesIO()
    header = header_cls(
        request_api_key=type(body).__api_key__,
        request_api_version=type(body).__version__,
        correlation_id=correlation_id,
        client_id="fuzz",
    )
    entity_writer(header_cls)(out, header)
    entity_writer(type(body))(out, body)
    return out.getvalue()


def seed_requests() -> list[bytes]:
    """Valid requests to mutate: reads and writes a client may send unauthenticated."""
    timeout = datetime.timedelta(seconds=1)
    api_versions = request_class(18, 3)(client_software_name="fuzz", client_software_version="1")
    metadata_cls = request_class(3, 12)
    metadata = metadata_cls(
        topics=(nested(metadata_cls, "MetadataRequestTopic")(topic_id=None, name=TOPIC),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    produce_cls = request_class(0, 9)
    data = nested(produce_cls, "PartitionProduceData")(index=0, records=build_batch([Record(b"fuzz", b"k")]))
    produce = produce_cls(
        transactional_id=None,
        acks=1,
        timeout=timeout,
        topic_data=(nested(produce_cls, "TopicProduceData")(name=TOPIC, partition_data=(data,)),),
    )
    find_coordinator = request_class(10, 3)(key="fuzz-group", key_type=0)
    offset_fetch_cls = request_class(9, 8)
    topics = (nested(offset_fetch_cls, "OffsetFetchRequestTopics")(name=TOPIC, partition_indexes=(0,)),)
    offset_fetch = offset_fetch_cls(
        groups=(nested(offset_fetch_cls, "OffsetFetchRequestGroup")(group_id="fuzz-group", topics=topics),),
        require_stable=False,
    )
    list_offsets_cls = request_class(2, 7)
    partition = nested(list_offsets_cls, "ListOffsetsPartition")(
        partition_index=0, current_leader_epoch=-1, timestamp=-1
    )
    list_offsets = list_offsets_cls(
        replica_id=-1,
        isolation_level=0,
        topics=(nested(list_offsets_cls, "ListOffsetsTopic")(name=TOPIC, partitions=(partition,)),),
    )
    bodies = [api_versions, metadata, produce, find_coordinator, offset_fetch, list_offsets]
    return [encode_request(body) for body in bodies]


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if choice < 0.5 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)  # a flipped byte
        elif choice < 0.65:
            del out[rng.randrange(len(out) + 1) :]  # cut
        elif choice < 0.8:
            at = rng.randrange(len(out) + 1)
            out[at:at] = rng.randbytes(rng.randint(1, 64))  # bytes added
        elif len(out) >= 4:
            struct.pack_into(">hh", out, 0, rng.randint(-2, 80), rng.randint(-2, 20))  # another key and version
    return bytes(out)


def kafka_frames(rng: random.Random, seeds: list[bytes]) -> list[bytes]:
    """What one fuzzing connection sends: one to three frames of one kind."""
    kind = rng.random()
    if kind < 0.15:
        return [rng.randbytes(rng.randint(0, 512))]  # anything at all
    if kind < 0.3:
        body = rng.randbytes(rng.randint(0, 2048))
        return [SIZE.pack(len(body)) + body]  # a valid size prefix over random bytes
    if kind < 0.4:
        return [SIZE.pack(rng.randint(8, 2**31 - 1)) + rng.randbytes(rng.randint(0, 64))]  # half-sent
    frames = []
    for _ in range(rng.randint(1, 3)):
        body = mutate(rng.choice(seeds), rng) if rng.random() < 0.8 else rng.choice(seeds)
        frames.append(SIZE.pack(len(body)) + body)
    return frames


async def kafka_client(address: str, frames: list[bytes]) -> None:
    host, _, port = address.rpartition(":")
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 5)
    except (OSError, TimeoutError):
        return
    try:
        for frame in frames:
            writer.write(frame)
        await writer.drain()
        await asyncio.wait_for(reader.read(1 << 16), ANSWER_WAIT_S)
    except (OSError, TimeoutError):
        pass
    finally:
        writer.close()


async def fuzz_kafka(address: str, seconds: float, max_requests: int, rng: random.Random) -> int:
    seeds = seed_requests()
    deadline = time.monotonic() + seconds
    sent = 0

    async def worker() -> None:
        nonlocal sent
        while time.monotonic() < deadline and sent < max_requests:
            sent += 1
            await kafka_client(address, kafka_frames(rng, seeds))

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return sent


# ---- gRPC listener ----


def random_message(descriptor: Descriptor, rng: random.Random, depth: int = 0) -> Any:
    """A message of `descriptor`'s type with each field filled (or not) with a random value of its type."""
    message = getattr(broker_pb2, descriptor.name, None)
    if message is None:
        from google.protobuf import message_factory

        message = message_factory.GetMessageClass(descriptor)
    instance = message()
    for field in descriptor.fields:
        if rng.random() < 0.3:
            continue
        repeated = field.is_repeated
        for _ in range(rng.randint(0, 3) if repeated else 1):
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                if depth > 3:
                    break
                value = random_message(field.message_type, rng, depth + 1)
                target = getattr(instance, field.name)
                if repeated:
                    target.add().CopyFrom(value)
                else:
                    target.CopyFrom(value)
                continue
            value = random_scalar(field, rng)
            if repeated:
                getattr(instance, field.name).append(value)
            else:
                setattr(instance, field.name, value)
    return instance


def random_scalar(field: FieldDescriptor, rng: random.Random) -> Any:
    if field.type in (FieldDescriptor.TYPE_STRING,):
        return rng.choice(["", TOPIC, "__consumer_offsets", "x" * rng.randint(0, 300)])
    if field.type == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.randint(0, 256)) if rng.random() < 0.7 else build_batch([Record(b"v")])
    if field.type == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if field.type == FieldDescriptor.TYPE_ENUM:
        return rng.choice(field.enum_type.values).number
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return rng.random()
    unsigned = field.type in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED32)
    wide = field.type in (
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED64,
    )
    bits = 63 if wide else 31
    choices = [0, 1, 2, 99, 2**bits - 1] + ([] if unsigned else [-1, -(2**bits)])
    return rng.choice(choices)


@dataclass(frozen=True)
class GrpcMethod:
    path: str
    request: Descriptor
    client_streaming: bool
    server_streaming: bool


def broker_methods() -> list[GrpcMethod]:
    service = broker_pb2.DESCRIPTOR.services_by_name["Broker"]
    return [
        GrpcMethod(f"/{service.full_name}/{m.name}", m.input_type, m.client_streaming, m.server_streaming)
        for m in service.methods
    ]


def grpc_payload(method: GrpcMethod, rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.2:
        return rng.randbytes(rng.randint(0, 512))
    data = random_message(method.request, rng).SerializeToString()
    return mutate(data, rng) if kind < 0.5 else data


async def grpc_call(channel: grpc.aio.Channel, method: GrpcMethod, rng: random.Random) -> None:
    identity: Callable[[bytes], bytes] = lambda data: data  # noqa: E731 - raw bytes both ways
    payloads = [grpc_payload(method, rng) for _ in range(rng.randint(1, 3) if method.client_streaming else 1)]
    try:
        if method.client_streaming:
            call = channel.stream_stream(method.path, request_serializer=identity, response_deserializer=identity)
            async for _ in call(iter(payloads), timeout=ANSWER_WAIT_S * 3):
                pass
        elif method.server_streaming:
            stream = channel.unary_stream(method.path, request_serializer=identity, response_deserializer=identity)
            async for _ in stream(payloads[0], timeout=ANSWER_WAIT_S * 3):
                pass
        else:
            unary = channel.unary_unary(method.path, request_serializer=identity, response_deserializer=identity)
            await unary(payloads[0], timeout=ANSWER_WAIT_S * 3)
    except grpc.RpcError:
        pass  # refusals are the point; the broker must only stay up and bounded


async def fuzz_grpc(address: str, seconds: float, max_requests: int, rng: random.Random) -> int:
    methods = broker_methods()
    deadline = time.monotonic() + seconds
    sent = 0
    async with grpc.aio.insecure_channel(address) as channel:

        async def worker() -> None:
            nonlocal sent
            while time.monotonic() < deadline and sent < max_requests:
                sent += 1
                await grpc_call(channel, rng.choice(methods), rng)

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return sent


# ---- the run ----


def fuzz(cluster: Cluster, seconds: float, max_requests: int, seed: int) -> list[ListenerRun]:
    """Each listener of the cluster's first broker in turn; the figures before and after each."""
    broker = cluster.brokers[0]
    assert broker.kafka_address is not None
    pid = cluster.pids[broker.node_id]
    with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
        admin.create_topic(TOPIC, partitions=1, replication_factor=1)
    runs = []
    targets: list[tuple[str, str, Callable[..., Any]]] = [
        ("kafka", broker.kafka_address, fuzz_kafka),
        ("grpc", broker.address, fuzz_grpc),
    ]
    for name, address, run in targets:
        before = settled(pid, figures(pid))
        started = time.monotonic()
        sent = asyncio.run(run(address, seconds, max_requests, random.Random(seed)))
        elapsed = time.monotonic() - started
        runs.append(ListenerRun(name, sent, round(elapsed, 1), before, settled(pid, before)))
        if not runs[-1].after.alive:
            break
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="per listener")
    parser.add_argument("--max-requests", type=int, default=100_000, help="per listener")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, help="run directory (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fuzz-listeners-") as scratch:
        run_dir = args.dir or Path(scratch) / "run"
        cluster = cluster_commands.up(run_dir, 1, 1, SETTINGS, timeout_s=60)
        try:
            runs = fuzz(cluster, args.seconds, args.max_requests, args.seed)
        finally:
            cluster_commands.down(cluster, timeout_s=10)
    for run in runs:
        print(
            f"{run.listener}: {run.requests} connections or calls in {run.seconds} s; broker RSS "
            f"{run.before.rss_mib} -> {run.after.rss_mib} MiB, open files {run.before.open_files} -> "
            f"{run.after.open_files}, alive {run.after.alive}",
            file=sys.stderr,
        )
        print(json.dumps({**asdict(run), "bounded": run.bounded}))
    return 0 if len(runs) == 2 and all(run.bounded for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())

"""A story of authorization on the Kafka listener: one principal continuing another's idempotent producer (the
steps of `scenario stolen-producer-id`), each principal in its own SASL PLAIN session (SASL_PLAINTEXT here: the
simulated network carries no TLS)."""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass

from minikafka.client.kafka_wire_client import KafkaConnection, nested, request_class
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.common.standard_authorizer import STANDARD_AUTHORIZER
from minikafka.deploy.scenario.library import stolen_producer_id
from minikafka.sim.clients import ClientMix
from minikafka.sim.story_steps import in_client, leads, observe, on_active_controller, refused, scenario_story, wait
from minikafka.sim.world import TOPIC, TopicSpec, World

BROKER = stolen_producer_id.BROKER
SASL_HANDSHAKE, SASL_AUTHENTICATE, INIT_PRODUCER_ID, PRODUCE = 17, 36, 22, 0
TIMEOUT = datetime.timedelta(seconds=10)
SASL = {
    "listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,GRPC:GRPC,BROKER:GRPC,CONTROLLER:GRPC",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.plain.users": "admin:admin-secret,alice:alice-secret",
}
ACL_POLL_S = 0.2


@dataclass(frozen=True)
class Appended:
    error: str
    base_offset: int


async def _session(w: World, login: SaslLogin) -> KafkaConnection:
    """One connection to the broker's Kafka listener, authenticated as `login` (SASL PLAIN)."""
    connection = KafkaConnection(w.kafka_bootstrap()[BROKER - 1], 10.0)
    await connection.send(request_class(SASL_HANDSHAKE, 1)(mechanism=login.mechanism))
    token = b"\0" + login.username.encode() + b"\0" + login.password.encode()
    answer = await connection.send(request_class(SASL_AUTHENTICATE, 2)(auth_bytes=token))
    if ErrorCode.of(answer.error_code) is not ErrorCode.NONE:
        raise AssertionError(f"{login.username} not authenticated: {ErrorCode.of(answer.error_code).name}")
    return connection


async def _producer_id(connection: KafkaConnection) -> tuple[int, int]:
    cls = request_class(INIT_PRODUCER_ID, 4)
    answer = await connection.send(
        cls(transactional_id=None, transaction_timeout=TIMEOUT, producer_id=-1, producer_epoch=-1)
    )
    return int(answer.producer_id), int(answer.producer_epoch)


async def _produce(connection: KafkaConnection, records: bytes) -> Appended:
    cls = request_class(PRODUCE, 9)
    data = nested(cls, "PartitionProduceData")(index=0, records=records)
    topic = nested(cls, "TopicProduceData")(name=TOPIC, partition_data=(data,))
    answer = await connection.send(cls(transactional_id=None, acks=-1, timeout=TIMEOUT, topic_data=(topic,)))
    found = answer.responses[0].partition_responses[0]
    return Appended(ErrorCode.of(found.error_code).name, int(found.base_offset))


async def _forge(thief: KafkaConnection, records: bytes) -> Appended:
    """Her Produce, sent again while the broker has not applied her ACL yet (TOPIC_AUTHORIZATION_FAILED)."""
    while (answer := await _produce(thief, records)).error == ErrorCode.TOPIC_AUTHORIZATION_FAILED.name:
        await asyncio.sleep(ACL_POLL_S)
    return answer


async def _let_alice_write(w: World) -> None:
    write = AclBinding(
        ResourceType.TOPIC, TOPIC, PatternType.LITERAL, "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW
    )
    what = f"the admin lets alice write {TOPIC} (she has no IDEMPOTENT_WRITE on the cluster)"
    answer = await on_active_controller(w, what, lambda state: state.create_acls([write]))
    refused(what, [result.error_code for result in answer.results])


async def _stolen_producer_id(w: World) -> None:
    """The admin's idempotent producer writes sequences 0-2; alice, allowed to write the topic, sends a batch with
    its producer id, epoch and next sequence; then the admin's producer sends its real sequence 3. Checked, her
    Produce needs IDEMPOTENT_WRITE: refused. Unchecked, her batch is appended as the admin's, and the admin's is
    acknowledged as its duplicate, at her offset, and never written: an acknowledged write lost."""
    await wait(w, f"{TOPIC}-0 led by broker {BROKER}", lambda: leads(w, BROKER))
    owner = await in_client(w, "the admin logs in (SASL PLAIN)", _session(w, stolen_producer_id.ADMIN))
    thief = await in_client(w, "alice logs in (SASL PLAIN)", _session(w, stolen_producer_id.ALICE))
    pid, epoch = await in_client(w, "the admin's producer asks for a producer id", _producer_id(owner))

    def batch(value: str, sequence: int) -> bytes:
        return build_batch([Record(value.encode())], producer_id=pid, producer_epoch=epoch, base_sequence=sequence)

    values = [*stolen_producer_id.ADMIN_VALUES, "admin-3"]
    written = [
        await in_client(w, f"the admin writes {v}", _produce(owner, batch(v, n))) for n, v in enumerate(values[:3])
    ]
    await _let_alice_write(w)
    forged = await in_client(w, "alice sends the admin's next sequence", _forge(thief, batch("alice-forged", 3)))
    written.append(
        await in_client(w, "the admin's producer sends its real sequence 3", _produce(owner, batch(values[3], 3)))
    )
    for answer, value in zip(written, values, strict=True):
        if answer.error == ErrorCode.NONE.name:
            w._acknowledged_at(0, answer.base_offset, value.encode())
    observe(w, "admin_writes", [f"{a.error} at {a.base_offset}" for a in written])
    observe(w, "forged", f"{forged.error} at {forged.base_offset}")
    for connection in (owner, thief):
        await in_client(w, "the sessions closed", connection.close())


STOLEN_PRODUCER_ID = scenario_story(
    stolen_producer_id,
    _stolen_producer_id,
    TopicSpec(1, ((BROKER,),), {"min.insync.replicas": "1"}),
    settings=SASL,
    broker_settings={"authorizer.class.name": STANDARD_AUTHORIZER},
    clients=ClientMix(producers=(), transactional=1),  # the brokers' Kafka listeners
)

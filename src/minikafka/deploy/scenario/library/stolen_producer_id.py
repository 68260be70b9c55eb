"""A stolen producer id: with ACLs on, alice may write the topic ledger; the admin's idempotent producer writes to
it; alice sends a batch carrying the admin's producer id, epoch and next sequence (all three are in every batch
anyone who may read or describe the topic sees), then the admin's producer sends its next batch.

Guarded (minikafka.produce.idempotent.write.check.enable=true, as Kafka before 3.0): a Produce whose batches carry
a producer id needs IDEMPOTENT_WRITE on the cluster, which alice lacks: CLUSTER_AUTHORIZATION_FAILED, and the
admin's stream goes on untouched. Off (Kafka 3.0 and later, KIP-679: WRITE on the topic is enough): her batch is
appended as the admin's next one, and the admin's real next batch, with the same sequence, is answered as a
duplicate of hers: acknowledged, at her offset, and never written."""

from minikafka.client.admin import AdminClient
from minikafka.client.consumer import EARLIEST, Consumer
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.common.acl_proto import binding_to_proto
from minikafka.common.certificates import ca_certificate_path
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.common.standard_authorizer import STANDARD_AUTHORIZER
from minikafka.common.tls import TlsFiles
from minikafka.deploy.scenario import Expect, Guard, Steps, Topology
from minikafka.deploy.scenario.clients import read_until_idle
from minikafka.deploy.scenario.model import Tally
from minikafka.deploy.scenario.principals import Appended, PrincipalSession, ProducerIdentity

NAME = "stolen-producer-id"
TITLE = "a principal that may write a topic must not continue another principal's idempotent producer"
GUARD = Guard(
    "minikafka.produce.idempotent.write.check.enable",
    on="true",
    off="false",
    protects="a Produce carrying a producer id needs IDEMPOTENT_WRITE on the cluster: alice's forged batch is "
    "refused CLUSTER_AUTHORIZATION_FAILED and the admin's stream holds only the admin's records",
    without="alice's batch is appended as the admin's, and the admin's real next batch is acknowledged as a "
    "duplicate of hers and never written (Kafka 3.0 and later: WRITE on the topic is enough)",
)
TOPOLOGY = Topology(
    controllers=1,
    brokers=1,
    settings={
        "listener.security.protocol.map": "PLAINTEXT:SASL_SSL,GRPC:GRPC_SASL_SSL,BROKER:GRPC,CONTROLLER:GRPC",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.plain.users": "admin:admin-secret,alice:alice-secret",
        "authorizer.class.name": STANDARD_AUTHORIZER,
    },
)
TOPIC, BROKER = "ledger", 1
ADMIN, ALICE = SaslLogin("PLAIN", "admin", "admin-secret"), SaslLogin("PLAIN", "alice", "alice-secret")
ADMIN_VALUES = ["admin-0", "admin-1", "admin-2"]


def run(s: Steps) -> None:
    ca = TlsFiles(ca_certificate_path(s.cluster.certs_dir))
    with AdminClient(
        s.cluster.bootstrap_controllers, s.cluster.bootstrap_servers, timeout_s=5, tls=s.cluster.admin_tls,
        broker_tls=ca, broker_sasl=ADMIN,
    ) as admin:  # fmt: skip
        _setup(s, admin)
    address = s.cluster.node(BROKER).address
    owner = PrincipalSession(address, s.cluster.certs_dir, ADMIN)
    thief = PrincipalSession(address, s.cluster.certs_dir, ALICE)
    try:
        identity = s.wait_for(
            "the admin's producer asks for a producer id (InitProducerId)",
            lambda: _identity(owner),
            "a producer id and epoch",
            observed=lambda found: f"producer id {found.producer_id}, epoch {found.producer_epoch}",
        )
        acknowledged = _story(s, owner, thief, identity)
    finally:
        owner.close()
        thief.close()
    read = s.loop.run(_read_as_admin(s))
    lost = sorted(offset for offset, value in acknowledged.items() if read.get(offset) != value)
    s.tallies.append(Tally(TOPIC, "all", len(acknowledged), len(lost), *((lost[0], lost[-1]) if lost else ())))
    s.promise(
        f"read {TOPIC}-0 back as the admin",
        list(read.values()) == [*ADMIN_VALUES, "admin-3"],
        "the admin's four records, in its order, and nothing else",
        ", ".join(f"{value} at {offset}" for offset, value in read.items()) or "nothing",
    )


def _setup(s: Steps, admin: AdminClient) -> None:
    admin.create_topic(TOPIC, partitions=1, replication_factor=1)
    s.wait_for(
        f"create topic {TOPIC} (as the admin, a super user)",
        lambda: admin.ready_topic(TOPIC),
        f"{TOPIC}-0 is created and led by broker {BROKER}",
        observed=lambda _: "created",
    )
    write = AclBinding(
        ResourceType.TOPIC, TOPIC, PatternType.LITERAL, "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW
    )
    outcomes = admin.create_acls([binding_to_proto(write)])
    s.check(
        f"the admin lets alice write {TOPIC} (--allow-principal User:alice --operation Write --topic {TOPIC})",
        [ErrorCode.of(o.error_code) for o in outcomes] == [ErrorCode.NONE],
        "created; alice has no IDEMPOTENT_WRITE on the cluster",
        ", ".join(ErrorCode.of(o.error_code).name for o in outcomes),
    )


def _story(s: Steps, owner: PrincipalSession, thief: PrincipalSession, identity: ProducerIdentity) -> dict[int, str]:
    """The admin's writes and alice's forgery; the offsets the admin's producer was acknowledged at, with its
    values."""
    pid, epoch = identity.producer_id, identity.producer_epoch

    def batch(value: str, sequence: int) -> bytes:
        return build_batch([Record(value.encode())], producer_id=pid, producer_epoch=epoch, base_sequence=sequence)

    written = [owner.produce(TOPIC, batch(value, n)) for n, value in enumerate(ADMIN_VALUES)]
    s.check(
        f"the admin's idempotent producer (producer id {pid}, epoch {epoch}) writes sequences 0 to 2",
        all(w.error == ErrorCode.NONE for w in written),
        "acknowledged at offsets 0 to 2",
        ", ".join(f"{w.error.name} at {w.base_offset}" for w in written),
    )
    forged = s.wait_for(
        "alice sends a batch with the admin's producer id, epoch and next sequence (3)",
        lambda: _forge(thief, batch("alice-forged", len(ADMIN_VALUES))),
        Expect(
            guarded="refused CLUSTER_AUTHORIZATION_FAILED: she has no IDEMPOTENT_WRITE on the cluster",
            unguarded="appended at offset 3, as the admin's producer's next batch",
        ),
        observed=lambda a: f"{a.error.name} at {a.base_offset}",
    )
    s.check(
        "what the broker did with her batch",
        forged.error == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED if s.guarded else ErrorCode.NONE),
        Expect(guarded="nothing written", unguarded=f"written at offset {forged.base_offset}"),
        f"{forged.error.name} at {forged.base_offset}",
    )
    if s.guarded:
        s.quote_events("authorization_failed", node=f"broker-{BROKER}", principal="User:alice", limit=1)
    after = owner.produce(TOPIC, batch("admin-3", len(ADMIN_VALUES)))
    s.check(
        "the admin's producer sends its real next batch (sequence 3)",
        after.error == ErrorCode.NONE and (after.base_offset == forged.base_offset) != s.guarded,
        Expect(
            guarded="acknowledged at offset 3",
            unguarded=f"acknowledged as a duplicate of alice's batch, at its offset {forged.base_offset}: "
            "the admin's record is not written",
        ),
        f"{after.error.name} at {after.base_offset}",
    )
    answers = [*zip(written, ADMIN_VALUES, strict=True), (after, "admin-3")]
    return {answer.base_offset: value for answer, value in answers if answer.error == ErrorCode.NONE}


def _identity(owner: PrincipalSession) -> ProducerIdentity | None:
    found = owner.init_producer_id()
    return found if isinstance(found, ProducerIdentity) else None


def _forge(thief: PrincipalSession, forged: bytes) -> Appended | None:
    """Her Produce, sent again while the broker has not applied her ACL yet (TOPIC_AUTHORIZATION_FAILED)."""
    answer = thief.produce(TOPIC, forged)
    return None if answer.error == ErrorCode.TOPIC_AUTHORIZATION_FAILED else answer


async def _read_as_admin(s: Steps) -> dict[int, str]:
    """offset -> value of ledger-0, read from the beginning (as the admin) until ten empty polls."""
    consumer = Consumer(
        list(s.cluster.bootstrap_servers), tls=TlsFiles(ca_certificate_path(s.cluster.certs_dir)), sasl=ADMIN
    )
    await consumer.assign(TOPIC, [0], EARLIEST)
    read = await read_until_idle(consumer, 10)
    await consumer.close()
    return read

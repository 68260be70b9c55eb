"""KIP-853's endpoints on real processes: a fourth controller started with controller.quorum.bootstrap.servers only (no
controller.quorum.voters) finds the quorum, is added by `metadata-quorum add-controller` at the endpoint it
registers; a follower restarted on another port updates its endpoint (UpdateRaftVoter); and once the old active
controller is removed and SIGKILLed and the other two original voters are removed as well, it is the whole quorum:
every broker (configured with the three original controllers only) then follows it at the endpoint the voter set
names, while a producer writes acks=all.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import socket
import ssl
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from background_producer import BackgroundProducer
from cluster_fixtures import admin_config, eventually, issue_node_tls, minikafka
from kio.schema.add_raft_voter.v1 import request as add_v1
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.describe_quorum.v2 import request as quorum_v2
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.types import TopicName
from kio.schema.update_features.v1 import request as features_v1
from kio.static.primitive import i8, i16, i32, i32Timedelta, u16

from minikafka.client.admin import AdminClient
from minikafka.client.kafka_wire_client import KafkaConnection
from minikafka.common.errors import KafkaError
from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster, is_alive, kill, terminate, wait_exit
from minikafka.deploy.scenario.clients import consume_partition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
CLUSTER_ID = "minikafka"
TOPIC = "bootstrap-servers"
JOINING = 104


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_events(run_dir: Path, label: str, name: str) -> list[dict]:
    path = run_dir / "logs" / f"{label}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if f'"{name}"' in line]


def start_joining_controller(cluster: Cluster, port: int) -> subprocess.Popen[bytes]:
    """Controller 104 with bootstrap servers only: formatted on first start as a replica without the voter set."""
    run_dir, bootstrap = cluster.run_dir, list(cluster.bootstrap_controllers)
    tls = issue_node_tls(cluster, f"controller-{JOINING}")
    node_dir = run_dir / f"controller-{JOINING}"
    (node_dir / "data").mkdir(parents=True)
    config = node_dir / "controller.properties"
    config.write_text(
        f"node.id={JOINING}\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:{port}\n"
        f"controller.quorum.bootstrap.servers={','.join(bootstrap)}\nlog.dirs={node_dir / 'data'}\n"
        f"minikafka.event.log.dir={run_dir / 'logs'}\nsecurity.inter.broker.protocol=SSL\n"
        f"ssl.truststore.location={tls.ca}\nminikafka.node.ssl.certificate.location={tls.certificate}\n"
        f"minikafka.node.ssl.key.location={tls.key}\n"
    )
    return start_controller(config)


def start_controller(config: Path) -> subprocess.Popen[bytes]:
    with (config.parent / "stderr.log").open("ab") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "minikafka.launcher", "controller", "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            cwd=config.parent.parent,
        )


def restart_on_new_port(cluster: Cluster, voter: int) -> tuple[subprocess.Popen[bytes], str]:
    """Stop the controller, give its listener another port (its address book entry elsewhere stays the old one)
    and start it again: its new endpoint, as host:port."""
    terminate(cluster.pids[voter])
    assert wait_exit(cluster.pids[voter], 30)
    config = cluster.run_dir / f"controller-{voter}" / "controller.properties"
    lines = config.read_text().splitlines()
    [listener] = [line for line in lines if line.startswith("listeners=")]
    quorum, _, others = listener.removeprefix("listeners=CONTROLLER://").partition(",")  # its Kafka listener stays
    endpoint = f"{quorum.rpartition(':')[0]}:{free_port()}"
    moved = ",".join([f"listeners=CONTROLLER://{endpoint}", *([others] if others else [])])
    config.write_text("\n".join(moved if li == listener else li for li in lines) + "\n")
    return start_controller(config), endpoint


def quorum_tool(cluster: Cluster, controller: str, *args: str) -> str:
    """`minikafka metadata-quorum ARGS` asking the quorum through `controller`."""
    done = minikafka("metadata-quorum", *args, "--bootstrap-controller", controller, *admin_config(cluster))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def test_a_controller_found_through_bootstrap_servers_becomes_the_whole_quorum(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cluster = cluster_commands.up(run, 3, 3, {}, timeout_s=60, dynamic_quorum=True, initial_controllers=3)
    started: list[subprocess.Popen[bytes]] = []
    try:
        controllers, brokers = cluster.bootstrap_controllers, cluster.bootstrap_servers
        admin = AdminClient(controllers, brokers, timeout_s=10, tls=cluster.admin_tls)
        admin.create_topic(TOPIC, assignment=[[1, 2, 3]], configs={"min.insync.replicas": "2"})
        eventually(lambda: len(admin.describe_topics([TOPIC])[0].partitions[0].isr) == 3, 30, "a full ISR")
        port = free_port()
        with BackgroundProducer(brokers, TOPIC) as producer:
            eventually(lambda: producer.acknowledged >= 100, 60, "acknowledged writes before the changes")
            started.append(start_joining_controller(cluster, port))
            eventually(
                lambda: any(o["id"] == JOINING for o in admin.describe_quorum()["observers"]),
                30,
                "controller 104 fetching as an observer (found through its bootstrap servers)",
            )
            endpoint = f"127.0.0.1:{port}"
            added = ("add-controller", "--controller-id", str(JOINING), "--controller-endpoint", endpoint)
            quorum_tool(cluster, controllers[0], *added)
            # From here on the tools find the quorum through controller 104, which every other controller may leave.
            status = quorum_tool(cluster, endpoint, "describe", "--status")
            assert f'"endpoints": ["CONTROLLER://127.0.0.1:{port}"]' in status, status
            voters = {v["id"]: v["directory_id"] for v in admin.describe_quorum()["voters"]}
            assert sorted(voters) == [101, 102, 103, JOINING]
            # UpdateRaftVoter: a follower restarted on another port writes its new endpoint into the voter set.
            leader = admin.describe_quorum()["leader_id"]
            moved = next(v for v in (101, 102, 103) if v != leader)
            restarted, moved_endpoint = restart_on_new_port(cluster, moved)
            started.append(restarted)
            eventually(
                lambda: f"CONTROLLER://{moved_endpoint}" in quorum_tool(cluster, endpoint, "describe", "--status"),
                30,
                f"controller {moved}'s new endpoint in the voter set",
            )
            # The old active controller is removed, then killed; then the two other original voters go too.
            leader = admin.describe_quorum()["leader_id"]
            admin.remove_raft_voter(leader, voters[leader], CLUSTER_ID)
            kill(cluster.pids[leader])
            for voter in sorted(set(voters) - {leader, JOINING}):
                eventually(
                    lambda v=voter: admin.remove_raft_voter(v, voters[v], CLUSTER_ID) is None,
                    60,
                    f"controller {voter} removed",
                )
            after = eventually(
                lambda: (q := admin.describe_quorum())["leader_id"] == JOINING and q, 30, "104 leading alone"
            )
            assert [v["id"] for v in after["voters"]] == [JOINING]
            # Every broker follows 104's metadata log: it learned where 104 is from the voter set.
            for broker in (1, 2, 3):
                eventually(
                    lambda b=broker: any(
                        e.get("leader") == JOINING for e in node_events(run, f"broker-{b}", "raft_leader_discovered")
                    ),
                    30,
                    f"broker {broker} following controller 104",
                )
            eventually(lambda: len(admin.describe_topics([TOPIC])[0].partitions[0].isr) == 3, 30, "a full ISR")
            acked_before = producer.acknowledged
            eventually(lambda: producer.acknowledged >= acked_before + 200, 60, "acknowledged writes after them")
        assert producer.crashed is None
        read = asyncio.run(consume_partition(brokers, TOPIC, None, None))
        lost = [(offset, value) for offset, value, _ in producer.acked if read.get(offset) != value]
        assert lost == [], f"{len(lost)} acknowledged writes lost, first {lost[:3]}"
        labels = [f"controller-{c}" for c in (101, 102, 103, JOINING)]
        appended = [e for label in labels for e in node_events(run, label, "raft_voter_change_appended")]
        assert [e["voter"] for e in appended if e["change"] == "update"] == [moved], appended
        print(f"{producer.acknowledged} acknowledged, {len(producer.failed)} failed, {len(lost)} lost")
        admin.close()
    finally:
        for process in started:
            process.kill()
            process.wait(timeout=10)
        cluster_commands.down(cluster, timeout_s=10)
        for pid in cluster.pids.values():
            if is_alive(pid):
                kill(pid)


def test_a_standalone_controller_formatted_alone_leads_its_quorum(tmp_path: Path) -> None:
    """`controller-format --standalone` (kafka-storage format --standalone): the controller alone is the quorum,
    its VotersRecord names its endpoint, and it takes no controller.quorum.voters."""
    port = free_port()
    config = tmp_path / "controller-101" / "controller.properties"
    config.parent.mkdir()
    config.write_text(
        f"node.id=101\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:{port}\n"
        f"controller.quorum.bootstrap.servers=127.0.0.1:{port}\nlog.dirs={config.parent / 'data'}\n"
        f"minikafka.event.log.dir={tmp_path / 'logs'}\n"
    )
    formatted = minikafka("controller-format", "--config", str(config), "--standalone")
    assert formatted.returncode == 0, formatted.stderr
    process = start_controller(config)
    try:

        def status() -> str:
            done = minikafka("metadata-quorum", "describe", "--status", "--bootstrap-controller", f"127.0.0.1:{port}")
            return done.stdout if done.returncode == 0 else ""

        text = eventually(lambda: "LeaderId:               101" in (s := status()) and s, 30, "101 leading")
        assert f'"endpoints": ["CONTROLLER://127.0.0.1:{port}"]' in text, text
    finally:
        process.kill()
        process.wait(timeout=10)


def test_a_static_quorum_upgraded_to_kraft_version_1_changes_its_voters(tmp_path: Path) -> None:
    """kraft.version 0 -> 1 (`metadata-quorum upgrade --feature kraft.version=1`, Kafka's kafka-features upgrade):
    refused before (UNSUPPORTED_VERSION), a voter is removed after, and the quorum keeps committing. The removed
    voter comes back through a controller's Kafka listener (KIP-919), with raw Kafka requests."""
    cluster = cluster_commands.up(tmp_path / "run", 3, 1, {}, timeout_s=60)
    try:
        controllers, controller = cluster.bootstrap_controllers, cluster.bootstrap_controllers[0]
        admin = AdminClient(controllers, cluster.bootstrap_servers, timeout_s=10, tls=cluster.admin_tls)
        quorum = admin.describe_quorum()
        follower = next(v["id"] for v in quorum["voters"] if v["id"] != quorum["leader_id"])
        before = minikafka(
            "metadata-quorum", "remove-controller", "--controller-id", str(follower), "--controller-directory-id",
            "", "--bootstrap-controller", controller, *admin_config(cluster),
        )  # fmt: skip
        assert before.returncode == 1 and "UNSUPPORTED_VERSION" in before.stderr, before.stderr
        quorum_tool(cluster, controller, "upgrade", "--feature", "kraft.version=1")
        voters = {v["id"]: v["directory_id"] for v in admin.describe_quorum()["voters"]}
        assert sorted(voters) == [101, 102, 103] and all(voters.values()), voters
        admin.remove_raft_voter(follower, voters[follower], CLUSTER_ID)
        assert sorted(v["id"] for v in admin.describe_quorum()["voters"]) == sorted(set(voters) - {follower})
        admin.create_topic("after-the-upgrade", assignment=[[1]])
        asyncio.run(ask_a_controllers_kafka_listener(cluster, follower, voters[follower]))
        eventually(
            lambda: sorted(v["id"] for v in admin.describe_quorum()["voters"]) == sorted(voters), 30, "voter back"
        )
        # The tool over the controllers' Kafka listeners (cluster.json's kafka_address, the run's admin certificate).
        kafka = ("--protocol", "kafka", "--dir", str(cluster.run_dir))
        status = minikafka("metadata-quorum", "describe", "--status", *kafka)
        assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
        assert all(f'"id": {v}, "directoryId": "{voters[v]}"' in status.stdout for v in voters), status.stdout
        # Kafka's --human-readable: each voter's times as how long ago, by the leader's epoch-millisecond clock.
        table = minikafka("metadata-quorum", "describe", "--replication", "--human-readable", *kafka)
        assert table.returncode == 0 and "Traceback" not in table.stderr, table.stderr
        rows = [line.split() for line in table.stdout.splitlines()[1:]]
        voter_rows = [row for row in rows if row[-1] in ("Leader", "Follower")]
        assert len(voter_rows) == len(voters) and all(row[5:7] == ["ms", "ago"] for row in voter_rows), table.stdout
        admin.close()
    finally:
        cluster_commands.down(cluster, timeout_s=10)
        for pid in cluster.pids.values():
            if is_alive(pid):
                kill(pid)


async def ask_a_controllers_kafka_listener(cluster: Cluster, removed: int, directory: str) -> None:
    """KIP-919 with raw Kafka requests to a controller other than `removed`: ApiVersions names the controller APIs
    only, DescribeCluster (CONTROLLER endpoint type) lists every controller, DescribeQuorum the quorum, Metadata is
    not served; AddRaftVoter v1 with ack_when_committed=false makes `removed` a voter again; UpdateFeatures of
    kraft.version to 1 is answered NONE (already done)."""
    controller = next(c for c in cluster.controllers if c.node_id != removed)
    assert controller.kafka_address is not None
    tls = cluster.admin_tls  # the listener asks for a certificate of the run's CA, as the quorum's listener does
    assert tls is not None and tls.certificate is not None
    context = ssl.create_default_context(cafile=str(tls.ca))
    context.load_cert_chain(str(tls.certificate), str(tls.key))
    asked_versions = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    with pytest.raises(KafkaError):  # without a certificate: refused
        await KafkaConnection(controller.kafka_address, 30).send(asked_versions)
    connection = KafkaConnection(controller.kafka_address, 30, context)
    versions = await connection.send(asked_versions)
    assert {int(k.api_key) for k in versions.api_keys} == {18, 55, 57, 60, 80, 81}
    assert [(f.name, int(f.max_version_level)) for f in versions.finalized_features] == [("kraft.version", 1)]
    # Every controller registered its Kafka listener when it started (KIP-919): each is listed, the leader named.
    every = sorted((c.node_id, c.kafka_address) for c in cluster.controllers)
    asked_cluster = DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=i8(2))
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        described = await connection.send(asked_cluster)
        listed = [(b.broker_id, f"{b.host}:{b.port}") for b in described.brokers]
        if listed == every or asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.2)
    assert int(described.error_code.value) == 0 and int(described.endpoint_type) == 2, described
    assert listed == every and int(described.controller_id) in dict(every), described
    topic = quorum_v2.TopicData(
        topic_name=TopicName("__cluster_metadata"), partitions=(quorum_v2.PartitionData(partition_index=i32(0)),)
    )
    quorum = await connection.send(quorum_v2.DescribeQuorumRequest(topics=(topic,)))
    assert int(quorum.error_code.value) == 0 and int(quorum.topics[0].partitions[0].leader_id) > 0, quorum
    back = cluster.node(removed)
    add = add_v1.AddRaftVoterRequest(
        cluster_id=CLUSTER_ID,
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        voter_id=i32(removed),
        voter_directory_id=uuid.UUID(bytes=base64.urlsafe_b64decode(directory + "==")),
        listeners=(add_v1.Listener(name="CONTROLLER", host=back.host, port=u16(back.port)),),
        ack_when_committed=False,
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while (code := int((await connection.send(add)).error_code.value)) == 7 and loop.time() < deadline:
        await asyncio.sleep(0.5)  # REQUEST_TIMED_OUT: the removed voter is not caught up yet (as an observer)
    assert code == 0, code
    # kafka-features --bootstrap-controller upgrade --feature kraft.version=1, once more: already done, NONE.
    key = features_v1.FeatureUpdateKey(feature="kraft.version", max_version_level=i16(1), upgrade_type=i8(1))
    features = features_v1.UpdateFeaturesRequest(timeout=add.timeout, feature_updates=(key,), validate_only=False)
    assert [int(r.error_code.value) for r in (await connection.send(features)).results] == [0]
    with pytest.raises(KafkaError):
        await connection.send(
            MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        )
    await connection.close()

"""The CLUSTER_ACTION rule made strict: a node acts only as itself; the fault service is for super users."""

from __future__ import annotations

import pytest

from minikafka.common.authorizer import (
    ANONYMOUS,
    DEFAULT_MAPPING_RULES,
    ActAsNode,
    Allowed,
    AuthorizerConfig,
    ClientRequest,
    InjectFault,
    KafkaPrincipal,
    ListenerSecurity,
    NodeIdentity,
    Refused,
    action_of,
    authorize,
    node_identity,
    parse_mapping_rules,
    parse_super_users,
    principal_from_common_name,
    principal_from_subject,
)
from minikafka.pb import broker_pb2, controller_pb2, fault_pb2, raft_pb2

INTER_NODE_TLS = ListenerSecurity(inter_node=True, authenticated=True)
INTER_NODE_PLAINTEXT = ListenerSecurity(inter_node=True, authenticated=False)
CLIENT = ListenerSecurity(inter_node=False, authenticated=False)
CONFIG = AuthorizerConfig(parse_super_users("User:admin"), fault_injection_enable=True)


def user(name: str) -> KafkaPrincipal:
    return principal_from_common_name(name)


def follower_fetch(replica_id: int) -> broker_pb2.FetchRequest:
    return broker_pb2.FetchRequest(replica_state=broker_pb2.ReplicaState(replica_id=replica_id, replica_epoch=7))


def test_principals_and_node_identities_come_from_the_certificate_cn() -> None:
    assert str(user("broker-1")) == "User:broker-1"
    assert principal_from_common_name(None) == ANONYMOUS
    assert node_identity(user("broker-1")) == NodeIdentity("broker", 1)
    assert node_identity(user("controller-101")) == NodeIdentity("controller", 101)
    assert node_identity(user("admin")) is None
    assert node_identity(user("broker-1x")) is None


@pytest.mark.parametrize(
    ("method", "request_", "expected"),
    [
        ("/minikafka.Controller/BrokerHeartbeat", controller_pb2.BrokerHeartbeatRequest(broker_id=2), 2),
        ("/minikafka.Controller/AlterPartition", controller_pb2.AlterPartitionRequest(broker_id=1), 1),
        (
            "/minikafka.Controller/BrokerRegistration",
            controller_pb2.BrokerRegistrationRequest(broker_id=2**31 - 1),
            2**31 - 1,
        ),
        ("/minikafka.Raft/Vote", raft_pb2.VoteRequest(candidate_id=102), 102),
        ("/minikafka.Raft/Fetch", raft_pb2.RaftFetchRequest(replica_id=3), 3),
        ("/minikafka.Broker/Fetch", follower_fetch(2), 2),
    ],
)
def test_a_request_claims_the_node_it_names(method: str, request_: object, expected: int) -> None:
    action = action_of(method, request_)
    assert isinstance(action, ActAsNode) and action.node_id == expected


def test_client_requests_and_fault_calls_are_told_apart() -> None:
    assert action_of("/minikafka.Broker/Fetch", broker_pb2.FetchRequest()) == ClientRequest()
    assert action_of("/minikafka.Controller/CreateTopics", controller_pb2.CreateTopicsRequest()) == ClientRequest()
    assert action_of("/minikafka.Fault/HoldAlterPartition", fault_pb2.HoldAlterPartitionRequest()) == InjectFault()


def test_a_node_acts_only_as_itself() -> None:
    heartbeat = action_of("/minikafka.Controller/BrokerHeartbeat", controller_pb2.BrokerHeartbeatRequest(broker_id=1))
    assert authorize(heartbeat, user("broker-1"), INTER_NODE_TLS, CONFIG) == Allowed()
    for other in ("broker-2", "controller-1", "admin"):
        assert isinstance(authorize(heartbeat, user(other), INTER_NODE_TLS, CONFIG), Refused), other


def test_only_controllers_send_raft_elections_and_any_node_fetches_as_itself() -> None:
    vote = action_of("/minikafka.Raft/Vote", raft_pb2.VoteRequest(candidate_id=1))
    assert isinstance(authorize(vote, user("broker-1"), INTER_NODE_TLS, CONFIG), Refused)
    observer_fetch = action_of("/minikafka.Raft/Fetch", raft_pb2.RaftFetchRequest(replica_id=1))
    assert authorize(observer_fetch, user("broker-1"), INTER_NODE_TLS, CONFIG) == Allowed()
    assert isinstance(authorize(observer_fetch, user("broker-2"), INTER_NODE_TLS, CONFIG), Refused)


def test_a_follower_fetch_is_refused_on_a_client_listener_even_as_itself() -> None:
    fetch = action_of("/minikafka.Broker/Fetch", follower_fetch(2))
    refused = authorize(fetch, user("broker-2"), CLIENT, CONFIG)
    assert isinstance(refused, Refused) and "client listener" in refused.reason
    assert authorize(ClientRequest(), ANONYMOUS, CLIENT, CONFIG) == Allowed()


def test_the_fault_service_needs_a_super_user_and_the_switch() -> None:
    assert authorize(InjectFault(), user("admin"), INTER_NODE_TLS, CONFIG) == Allowed()
    assert isinstance(authorize(InjectFault(), user("broker-1"), INTER_NODE_TLS, CONFIG), Refused)
    assert isinstance(authorize(InjectFault(), ANONYMOUS, CLIENT, CONFIG), Refused)
    disabled = AuthorizerConfig(CONFIG.super_users, fault_injection_enable=False)
    refused = authorize(InjectFault(), user("admin"), INTER_NODE_TLS, disabled)
    assert isinstance(refused, Refused) and "fault.injection.enable" in refused.reason


def test_a_plaintext_inter_node_listener_authenticates_no_one_and_allows_all_but_disabled_faults() -> None:
    heartbeat = action_of("/minikafka.Controller/BrokerHeartbeat", controller_pb2.BrokerHeartbeatRequest(broker_id=1))
    assert authorize(heartbeat, ANONYMOUS, INTER_NODE_PLAINTEXT, CONFIG) == Allowed()
    disabled = AuthorizerConfig(CONFIG.super_users, fault_injection_enable=False)
    assert isinstance(authorize(InjectFault(), ANONYMOUS, INTER_NODE_PLAINTEXT, disabled), Refused)


def test_super_users_are_kafka_principals() -> None:
    assert parse_super_users("User:admin; User:ops") == {user("admin"), user("ops")}
    for bad in ("admin", "Group:x", "User:"):
        with pytest.raises(ValueError):
            parse_super_users(bad)


def test_principal_mapping_rules_as_kafka_writes_them() -> None:
    default = parse_mapping_rules(DEFAULT_MAPPING_RULES)
    assert principal_from_subject("CN=broker-1", default) == user("broker-1")
    assert str(principal_from_subject("CN=x,O=org", default)) == "User:CN=x,O=org"  # DEFAULT: the subject as it is
    assert principal_from_subject(None, default) == ANONYMOUS
    rules = parse_mapping_rules("RULE:^CN=([^,]+),O=(.*)$/$2-$1/L, RULE:^CN=(.*)$/$1/")
    assert str(principal_from_subject("CN=Broker-1,O=Ops", rules)) == "User:ops-broker-1"
    assert principal_from_subject("O=nobody", rules) == ANONYMOUS  # no rule matches: no identity
    for bad in ("RULE:x", "FOO", "RULE:(/x/"):
        with pytest.raises(ValueError):
            parse_mapping_rules(bad)

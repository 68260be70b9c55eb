"""A controller voter loses its disk while another voter is down. The active controller commits a topic with one
follower while the third controller is down; then the active controller goes down too, the follower's disk is
wiped and it restarts empty, and the third controller comes back, its log lacking the topic.

Named by directory id (KIP-853, the quorum formatted with its voter set), the wiped controller is a new replica:
it refuses the third controller's vote requests (INVALID_VOTER_KEY, they name its old directory) and stays an
observer, so no leader is elected until the old active controller is back, with the topic. Named by id only
(Kafka before KIP-853), the wiped controller votes as if it remembered: with its empty log it elects the third
controller, and the topic the quorum committed is gone (the old active controller truncates it when it returns).
"""

from collections.abc import Callable

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.deploy.scenario import Expect, Guard, Steps, Topology
from minikafka.deploy.scenario.library.disruptive_controller import settled
from minikafka.deploy.scenario.steps import poll

NAME = "controller-disk-loss"
TITLE = "a controller's disk is wiped while another is down: directory ids keep it from voting"
GUARD = Guard(
    "minikafka.raft.directory.id.check", on="true", off="false",
    protects="the wiped controller comes back as an observer with a new directory id and never votes: no leader "
    "lacking committed metadata is elected, and the committed topic survives",
    without="the wiped controller votes by its id with an empty log: a controller lacking the committed topic is "
    "elected, and the topic goes back in time",
)  # fmt: skip
TOPOLOGY = Topology(controllers=3, brokers=1, settings={"auto.leader.rebalance.enable": "false"}, dynamic_quorum=True)
TOPIC = "committed-before-the-loss"
ELECTION_WAIT_S = 20  # several election timeouts: without the guard an election happens well within it


def run(s: Steps) -> None:
    leader, _ = settled(s, "wait until the controller quorum has an active controller", "one is elected")
    wiped, lagging = sorted(c.node_id for c in s.cluster.controllers if c.node_id != leader)
    s.kill(lagging, f"controller-{lagging} goes down; the other two still make a quorum")
    s.create_topic(TOPIC, [[1]], f"controller-{leader} and controller-{wiped} commit the topic")
    s.kill(leader, f"the active controller goes down: controller-{wiped} alone is no quorum")
    s.reboot(
        wiped,
        Expect(
            guarded="formatted again, it has a new directory id and no voter set: an observer",
            unguarded="it is a voter by its id again, with an empty log",
        ),
        wipe_disk=True,
    )
    s.start(lagging, f"controller-{lagging} returns, its log without {TOPIC}")
    since = s.last_fault_ts
    elected = poll(lambda: s.events("raft_leader_elected", "controller", since) or None, ELECTION_WAIT_S)
    s.check(
        f"wait {ELECTION_WAIT_S} s for controller-{lagging} and controller-{wiped} to elect a leader",
        (elected is None) == s.guarded,
        Expect(
            guarded=f"none: controller-{wiped} refuses every vote request meant for its old directory",
            unguarded=f"controller-{lagging} is elected with the wiped controller's vote",
        ),
        "no leader elected"
        if elected is None
        else f"controller {elected[0]['leader']} elected, epoch {elected[0]['epoch']}",
    )
    if s.guarded:
        s.quote_events("raft_replica_not_in_voter_set", f"controller-{wiped}", since="", limit=1)
        s.quote_events("raft_request_invalid", f"controller-{wiped}", since=since, limit=1)
    else:
        s.quote_events("raft_vote_granted", f"controller-{wiped}", since=since, limit=1)
        s.quote_events("raft_leader_elected", "controller", since=since, limit=1)
    s.start(leader, f"controller-{leader}, the old active controller, returns")
    s.wait_for(
        "wait until the quorum has an active controller and every live voter is caught up",
        lambda: led(s, skip=wiped if s.guarded else None),
        Expect(
            guarded=f"a leader with the whole log is elected; controller-{wiped} is no voter (its old directory is)",
            unguarded=f"controller-{leader} follows the new leader, truncating the entries it lacks",
        ),
        deadline_s=30,
        observed=lambda found: f"active controller {found[0]}, epoch {found[1]}",
    )
    if not s.guarded:
        s.quote_events("raft_log_truncated", f"controller-{leader}", since=since, limit=1)
    topic_survived(s)
    if s.guarded:
        replace_voter(s, wiped, wiped_is_observer(s, wiped))


def led(s: Steps, skip: int | None) -> tuple[int, int] | None:
    """(active controller, epoch) once one is elected and every voter but `skip` has caught up with it."""
    quorum = s.admin.describe_quorum()
    caught_up = all(v["lag"] == 0 for v in quorum["voters"] if v["id"] != skip)
    return (quorum["leader_id"], quorum["leader_epoch"]) if quorum["leader_id"] >= 0 and caught_up else None


def topic_survived(s: Steps) -> None:
    """Create the topic again: the controller refuses it while it still has it."""
    try:
        s.admin.create_topic(TOPIC, assignment=[[1]])
        observed = "created anew: the active controller no longer had it"
        survived = False
    except KafkaError as error:
        observed = f"{error.code.name} ({int(error.code)})"
        survived = error.code == ErrorCode.TOPIC_ALREADY_EXISTS
    s.promise(
        f"create {TOPIC} again, to ask the active controller whether it still has it",
        survived,
        Expect(
            guarded="TOPIC_ALREADY_EXISTS: the committed topic survived",
            unguarded="created anew: the committed topic was lost",
        ),
        observed,
    )


def wiped_is_observer(s: Steps, wiped: int) -> str:
    """The wiped controller's new directory id, once the active controller lists it among the observers (it is
    listed from its fetches, so only after its first one to this leader)."""

    def observer() -> tuple[str, str] | None:
        quorum = s.admin.describe_quorum()
        voter = {v["id"]: v["directory_id"] for v in quorum["voters"]}.get(wiped, "")
        found = [o["directory_id"] for o in quorum["observers"] if o["id"] == wiped and o["directory_id"] != voter]
        return (found[0], voter) if found else None

    new, _old = s.wait_for(
        f"describe the quorum: is controller-{wiped} a voter or an observer?",
        observer,
        "an observer under a new directory id; the voter set still names its old directory",
        deadline_s=30,
        observed=lambda found: f"observer in directory {found[0]}; the voter set names {found[1]}",
    )
    return new


def replace_voter(s: Steps, wiped: int, new: str) -> None:
    """`metadata-quorum remove-controller` under the old directory, then `add-controller` under the new one."""
    old = {v["id"]: v["directory_id"] for v in s.admin.describe_quorum()["voters"]}[wiped]
    cluster_id = s.cluster.overrides.get("cluster.id", "minikafka")
    s.wait_for(
        f"metadata-quorum remove-controller --controller-id {wiped} --controller-directory-id {old}",
        lambda: _voter_change(lambda: s.admin.remove_raft_voter(wiped, old, cluster_id)),
        "committed: the voter set no longer names the lost directory",
        deadline_s=30,
        observed=lambda _: "committed",
    )
    s.wait_for(
        f"metadata-quorum add-controller --controller-id {wiped} (directory {new})",
        lambda: _voter_change(lambda: s.admin.add_raft_voter(wiped, new, cluster_id)),
        "committed once it has caught up: a voter again, under its new directory",
        deadline_s=30,
        observed=lambda _: "committed",
    )
    voters = {v["id"]: v["directory_id"] for v in s.admin.describe_quorum()["voters"]}
    s.check(
        f"describe the quorum: controller-{wiped} a voter again?",
        voters.get(wiped) == new,
        "a voter under its new directory id",
        f"voters {sorted(voters)}; controller-{wiped} in directory {voters.get(wiped, '-')}",
    )
    s.quote_events("raft_voter_change_appended", "controller", since="", limit=2)


def _voter_change(call: Callable[[], None]) -> bool | None:
    """True once committed; None while the leader asks to retry (the previous change, or a new replica catching up)."""
    try:
        call()
    except KafkaError as error:
        if error.code in (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_CONTROLLER):
            return None
        raise
    return True

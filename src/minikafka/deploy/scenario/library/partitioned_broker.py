"""A leader cut off from the controllers but not from the other brokers or its clients. The controller fences it
when its session times out and elects another leader; the cut broker does not hear of it. With broker self-fencing
it stops acting as leader once no controller has answered for broker.self.fencing.timeout.ms, and answers
NOT_LEADER_OR_FOLLOWER, so clients move to the new leader; without it, it keeps taking writes it can never commit
(acks=all times out) for as long as the cut lasts. Neither loses an acknowledged acks=all write: one the cut
leader acknowledges after the election was fetched by the whole ISR before the followers learned of it, so the new
leader has it (the final read checks each)."""

from minikafka.common.errors import ErrorCode
from minikafka.common.event_log import utc_timestamp
from minikafka.deploy.scenario import FAST_FAILOVER, Guard, Steps, Topology
from minikafka.deploy.scenario.clients import AckedWrite, produce_raw

NAME = "partitioned-broker"
TITLE = "a leader cut from the controllers, not from clients: controller fencing and broker self-fencing"
GUARD = Guard(
    "broker.self.fencing.enable", on="true", off="false",
    protects="the controller fences the cut leader and elects another; the cut leader fences itself and answers "
    "NOT_LEADER_OR_FOLLOWER, so clients go to the new leader and no acknowledged acks=all write is lost",
    without="the cut leader keeps acting as leader, taking writes that time out, as long as the cut lasts",
)  # fmt: skip
TOPOLOGY = Topology(settings={**FAST_FAILOVER, "broker.self.fencing.timeout.ms": "5000"})
VICTIM, TOPIC = 1, "seed003"
CONTROLLERS = {101, 102, 103}


def run(s: Steps) -> None:
    s.create_topic(TOPIC, [[VICTIM, 2, 3]], "seed003-0 is created, led by broker 1", {"min.insync.replicas": "2"})
    s.wait_isr(TOPIC, [1, 2, 3], "every replica joins the ISR")
    s.produce_to(VICTIM, TOPIC, 5, "broker 1 acknowledges acks=all writes with the full ISR", acks=-1, prefix="before")
    s.cut({VICTIM}, CONTROLLERS, "broker 1 can no longer reach a controller; brokers and clients still reach it")
    s.wait_leader_change(TOPIC, VICTIM, "its session times out: the controller fences it and elects an ISR member")
    address = s.cluster.node(VICTIM).address
    answers: list[str] = []

    def refused() -> bool:
        value = f"during-cut-{len(answers)}"
        code, offset = produce_raw(address, value.encode(), -1, TOPIC, timeout_s=1.0)
        answers.append(code.name)
        if code is ErrorCode.NONE:  # acknowledged before the followers learned of the new leader: it must stay
            s.produced.setdefault(TOPIC, []).append((AckedWrite(offset, value, utc_timestamp()), "all"))
        return code is ErrorCode.NOT_LEADER_OR_FOLLOWER

    s.promise_within(
        "send acks=all writes straight to broker 1 until it answers NOT_LEADER_OR_FOLLOWER",
        refused,
        "broker 1 fences itself once no controller answered for broker.self.fencing.timeout.ms, and refuses",
        deadline_s=15,
        observed=lambda ok: (
            f"{len(answers)} writes: " + ", ".join(f"{answers.count(a)} {a}" for a in sorted(set(answers)))
        ),
    )
    s.quote_events("self_fenced", node=f"broker-{VICTIM}", limit=1)
    s.heal("the cut heals")
    s.wait_for(
        "wait until broker 1 is back in the ISR",
        lambda: s.partition_if(TOPIC, lambda p: p.leader >= 0 and VICTIM in p.isr),
        "broker 1 learns the new leader epoch, truncates, catches up and rejoins the ISR",
        deadline_s=60,
        observed=lambda p: f"leader {p.leader}, ISR {p.isr}",
    )
    s.final_read(TOPIC, "every acknowledged write is there")

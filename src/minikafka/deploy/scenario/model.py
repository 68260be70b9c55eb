"""The scenario's vocabulary: its guard, its topology, each step's record and the run's outcome."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Guard:
    """The config that protects the scenario's promise; `off` is the value that lets the failure show."""

    key: str
    on: str
    off: str
    protects: str  # what the guard promises, e.g. "no acknowledged acks=all write is lost"
    without: str  # what the scenario shows without it
    cluster_config: bool = True  # False: a client setting the scenario's steps read (e.g. the producer's acks)

    def mode(self, value: str) -> str:
        return "guarded" if value == self.on else "unguarded"


# A fault moves leaderships within seconds: short sessions and lag bound, and no preferred-leader rebalance to
# move them back in the middle of a story.
FAST_FAILOVER = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
    "auto.leader.rebalance.enable": "false",
}


@dataclass(frozen=True)
class Topology:
    controllers: int = 3
    brokers: int = 3
    settings: dict[str, str] = field(default_factory=dict)
    dynamic_quorum: bool = False  # `cluster up --dynamic-quorum`: controllers formatted with the voter set


@dataclass(frozen=True)
class Expect:
    """An expectation that depends on the guard: what the protocol does with it, and without it."""

    guarded: str
    unguarded: str

    def for_mode(self, guarded: bool) -> str:
        return self.guarded if guarded else self.unguarded


@dataclass(frozen=True)
class Evidence:
    """An event from the run's JSON logs (or a client's observation) that decided a step."""

    source: str  # the log it came from (controller-101, broker-1, client)
    sentence: str  # the event in the protocol's words
    line: str = ""  # the event's JSON line, quoted as it was logged


STEP, CHECK, PROMISE = "step", "check", "promise"


@dataclass(frozen=True)
class StepRecord:
    """`kind`: a step done (step), an observation compared with the scenario's prediction for this configuration
    (check), or the protocol's promise itself (promise: it failing breaks the run's verdict)."""

    index: int
    action: str  # what was done, e.g. "reboot broker 2 with its disk wiped"
    expected: str  # what the protocol should do
    observed: str  # what it did
    ok: bool
    evidence: tuple[Evidence, ...] = ()
    kind: str = STEP
    guard_dependent: bool = False  # what the protocol should do here depends on the guard


@dataclass(frozen=True)
class Tally:
    """Acknowledged writes of one topic and how many of them the final read did not find."""

    topic: str
    acks: str
    acknowledged: int
    lost: int
    first_lost: int | None = None
    last_lost: int | None = None


@dataclass(frozen=True)
class ScenarioVerdict:
    held: bool  # the promise the guard makes held: every step ran, nothing acknowledged lost, analysis passed
    as_predicted: bool  # the run did what the scenario predicts for this configuration
    exit_code: int
    line: str  # the one-line summary


@dataclass(frozen=True)
class ScenarioOutcome:
    name: str
    title: str
    guard: Guard
    guard_value: str
    overrides: dict[str, str]
    run_dir: str
    steps: tuple[StepRecord, ...]
    tallies: tuple[Tally, ...]
    error: str | None  # the step that could not complete, if any
    analysis: dict | None  # analyze's summary (None: not run)
    seconds: float
    verdict: ScenarioVerdict
    analysis_seconds: float = 0.0  # of `seconds`, the time analyze took

    @property
    def guarded(self) -> bool:
        return self.guard_value == self.guard.on

    @property
    def decisive(self) -> Evidence | None:
        """The first event quoted at a step whose expected behaviour depends on the guard: where the run forked."""
        return next((e for s in self.steps if s.guard_dependent for e in s.evidence), None)

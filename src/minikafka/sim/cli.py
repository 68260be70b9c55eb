"""`minikafka simulate`: seeded fault schedules over the whole cluster, simulated in one process per job."""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from minikafka.client.consumer import READ_COMMITTED, READ_UNCOMMITTED
from minikafka.client.producer import ProducerConfig
from minikafka.common.cli_support import CliError, bounded_int, probability
from minikafka.common.errors import KafkaError
from minikafka.deploy.chaos_schedule import SIMULATE_TIMING, parse_fault_kinds
from minikafka.deploy.plan_timing_options import add_fault_overlap, add_plan_timing, plan_timing, timing_words
from minikafka.sim import SIMULATE_HELP
from minikafka.sim.clients import GROUP_PROTOCOLS, MIXED, MIXED_HELP, SEEDED_HELP, ClientMix, ProducerSpec
from minikafka.sim.network import NetworkFaults
from minikafka.sim.planted_bugs import PLANTED_BUGS
from minikafka.sim.seed_pool import Stopped, results, stopped_by_signals
from minikafka.sim.stories import STORIES
from minikafka.sim.story_steps import run_story
from minikafka.sim.world import DEFAULT_FAULTS, SIMULATED_FAULTS, SimulationResult, SimulationSettings, TopicSpec


def register(subparsers: argparse._SubParsersAction) -> None:
    simulate = subparsers.add_parser(
        "simulate",
        help=SIMULATE_HELP,
        description="Seeded fault schedules (--seeds, --seed) or scripted fault stories (--story) over the shipped "
        "nodes, with the cluster's invariants checked all along.",
        epilog=_stories_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = simulate.add_mutually_exclusive_group()
    which.add_argument("--seeds", type=bounded_int(1), default=10, metavar="N", help="run seeds FIRST..FIRST+N-1")
    which.add_argument("--seed", type=int, metavar="S", help="run this one seed (a replay)")
    which.add_argument(
        "--story",
        choices=[*STORIES, "all"],
        help="a scripted fault story (or all of them), run with its guard on and off: see below",
    )
    simulate.add_argument(
        "--guard", choices=("on", "off", "both"), default="both", help="--story: the guard on, off, or both runs"
    )
    simulate.add_argument("--first-seed", type=int, default=1, metavar="FIRST")
    simulate.add_argument(
        "--faults",
        default=",".join(DEFAULT_FAULTS),
        help=f"comma-separated fault kinds, of {','.join(SIMULATED_FAULTS)}; drawn only when named: corrupt, "
        "controller-wipe, the guards' stop, hold-alter-partition and reassign (an operator's "
        "AlterPartitionReassignments reordering a partition's replicas), and slow-disk (simulate's only)",
    )
    simulate.add_argument("--duration-ms", type=bounded_int(1000), default=60_000, help="simulated time of faults")
    simulate.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a node config, any role")
    simulate.add_argument("--planted-bug", choices=sorted(PLANTED_BUGS), help="plant a known bug in a shell")
    simulate.add_argument(
        "--power-loss", action="store_true", help="kill and controller-kill also lose what was not fsynced"
    )
    simulate.add_argument(
        "--torn-writes",
        action="store_true",
        help="a power loss (lose-unflushed, --power-loss) keeps a seeded prefix of each file's unflushed bytes",
    )
    simulate.add_argument(
        "--duplicate-probability",
        type=probability,
        default=0.0,
        metavar="P",
        help="the probability that a unary gRPC request is delivered again later (its handler runs twice, its "
        "caller gets one answer); streams are never duplicated",
    )
    add_plan_timing(simulate, SIMULATE_TIMING)
    add_fault_overlap(simulate)
    simulate.add_argument(
        "--replication-factor", type=bounded_int(1, 3), default=3, metavar="RF", help="the topic's (default 3)"
    )
    simulate.add_argument(
        "--min-insync-replicas", type=bounded_int(1, 3), default=2, metavar="M", help="the topic's (default 2)"
    )
    _add_client_options(simulate.add_argument_group("clients (of a seeded fault plan's run; stories keep their own)"))
    simulate.add_argument("--jobs", type=bounded_int(1, 64), default=1, help="processes running seeds")
    simulate.add_argument(
        "--scratch",
        metavar="DIR",
        help="where each seed's files go, in a directory of its own removed after it (default: /dev/shm when present)",
    )
    simulate.add_argument("--json", action="store_true", help="one JSON line per seed")
    simulate.set_defaults(func=run_simulate_command)


def _add_client_options(clients: argparse._ArgumentGroup) -> None:
    clients.add_argument(
        "--acks",
        default="all",
        help="one producer per comma-separated acks value (all, 1, 0); default: one acks=all producer",
    )
    clients.add_argument(
        "--idempotence",
        default="",
        help="enable.idempotence (true, false) of each producer in --acks's order; unset: Kafka's default (on with "
        "acks=all)",
    )
    clients.add_argument("--consumers", type=bounded_int(0, 8), default=0, help="plain consumers, every partition")
    clients.add_argument(
        "--group-consumers",
        type=bounded_int(0, 8),
        default=0,
        help="members of one consumer group (killed and restarted at seeded times while the faults run)",
    )
    clients.add_argument(
        "--group-protocol",
        choices=GROUP_PROTOCOLS,
        default="classic",
        help="group.protocol of the group's members (and with --clients): classic (JoinGroup and SyncGroup, Kafka's "
        "default) or consumer (KIP-848's ConsumerGroupHeartbeat, the coordinator assigning)",
    )
    clients.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="isolation.level of the plain consumers; read_committed ones also read the transactional producers' topic",
    )
    clients.add_argument(
        "--transactional",
        type=bounded_int(0, 8),
        default=0,
        metavar="N",
        help="transactional producers (commits, aborts and crashes at seeded points) over every partition of their "
        "own topic; judged by the read_committed consumers (needs --consumers and --isolation-level read_committed)",
    )
    clients.add_argument(
        "--exactly-once",
        type=bounded_int(0, 3),
        default=0,
        metavar="N",
        help="workers of a consume-transform-produce pipeline: the group sim-eos reads the producers' topic and "
        "writes each record to sim-eos in transactions that commit the consumed offsets (crashes and aborts at "
        "seeded points); judged by a read_committed reader of the output",
    )
    clients.add_argument(
        "--compacted-keys",
        type=bounded_int(1, 10_000),
        default=0,
        metavar="N",
        help="the topic compacted as chaos's --compacted-keys makes it, the producers overwriting N keys in turn "
        "(every tenth write a tombstone): a record whose key the leader holds again later may go, the latest "
        "acknowledged value of each key must stay (CompactedLatestValueKept), and --consumers read each key's "
        "latest record, as a group does; no transactions or --clients on it",
    )
    clients.add_argument(
        "--clients",
        choices=("mixed", "seeded"),
        help=f"mixed: {MIXED_HELP}; seeded: {SEEDED_HELP} (instead of --acks, --idempotence, --consumers, "
        "--group-consumers, --isolation-level, --transactional, --exactly-once)",
    )


def _stories_epilog() -> str:
    lines = [
        "stories (--story NAME | all): steps that lead one guard to the case it exists for; with the guard on every",
        "invariant must hold, with it off (a config key's value, or the bug it prevents planted) an invariant must",
        "break; exit 0 when every run went as predicted:",
    ]
    for story in STORIES.values():
        lines += [f"  {story.name}", f"      {story.title}; off: {story.switch.describe(False)}"]
    return "\n".join(lines)


def client_mix(args: argparse.Namespace) -> ClientMix:
    """The producers, consumers and group members the options ask for."""
    others = args.clients or args.transactional or args.exactly_once
    if args.compacted_keys and others:
        raise CliError(
            "--compacted-keys takes producers, plain consumers and a group only (--acks, --idempotence, --consumers, "
            "--group-consumers)"
        )
    if args.clients == "mixed":
        return replace(MIXED, group_protocol=args.group_protocol)
    if args.clients == "seeded":
        return ClientMix(seeded=True, group_protocol=args.group_protocol)
    acks_names = {"all": -1, "-1": -1, "1": 1, "0": 0}
    acks = [item.strip() for item in args.acks.split(",") if item.strip()]
    idempotence = [item.strip().lower() for item in args.idempotence.split(",") if item.strip()]
    if not acks or any(a not in acks_names for a in acks):
        raise CliError(f"--acks takes a comma-separated list of all, 1 and 0, not '{args.acks}'")
    if len(idempotence) > len(acks) or any(i not in ("true", "false") for i in idempotence):
        raise CliError(f"--idempotence takes true or false for each producer of --acks, not '{args.idempotence}'")
    specs = []
    for index, name in enumerate(acks):
        enabled = None if index >= len(idempotence) else idempotence[index] == "true"
        try:
            ProducerConfig(acks=acks_names[name], enable_idempotence=enabled)
        except KafkaError as error:
            raise CliError(f"producer {index + 1}: {error.message} ({error.code.name})") from None
        specs.append(ProducerSpec(acks_names[name], enabled))
    isolation = READ_COMMITTED if args.isolation_level == "read_committed" else READ_UNCOMMITTED
    if args.transactional and (isolation != READ_COMMITTED or not args.consumers):
        raise CliError(
            "--transactional needs read_committed consumers to judge its transactions: add --consumers N "
            "--isolation-level read_committed"
        )
    return ClientMix(
        tuple(specs),
        args.consumers,
        args.group_consumers,
        group_protocol=args.group_protocol,
        transactional=args.transactional,
        isolation_level=isolation,
        exactly_once=args.exactly_once,
        compacted_keys=args.compacted_keys,
    )


def settings_from(args: argparse.Namespace) -> SimulationSettings:
    from minikafka.deploy.local_cluster import ClusterError, validate_overrides

    try:
        kinds = parse_fault_kinds(args.faults)
    except ValueError as error:
        raise CliError(str(error)) from None
    unsupported = [k for k in kinds if k not in SIMULATED_FAULTS]
    if unsupported:
        raise CliError(
            f"fault kind(s) {','.join(unsupported)} are not simulated; simulated: {','.join(SIMULATED_FAULTS)}"
        )
    overrides: dict[str, str] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--set takes KEY=VALUE, not '{item}'")
        overrides[key.strip()] = value.strip()
    try:
        validate_overrides(overrides)
    except ClusterError as error:
        raise CliError(str(error)) from None
    if args.scratch is not None and not Path(args.scratch).is_dir():
        raise CliError(f"--scratch {args.scratch}: no such directory")
    return SimulationSettings(
        seed=0,
        duration_s=args.duration_ms / 1000,
        faults=kinds,
        overrides=overrides,
        planted_bug=args.planted_bug,
        power_loss=args.power_loss,
        torn_writes=args.torn_writes,
        network=NetworkFaults(duplicate_probability=args.duplicate_probability),
        overlap=args.overlap,
        max_at_once=args.max_at_once,
        timing=plan_timing(args),
        topic=TopicSpec(
            configs={"min.insync.replicas": str(args.min_insync_replicas)}, replicas=args.replication_factor
        ),
        clients=client_mix(args),
        scratch=args.scratch,
    )


def replay_command(args: argparse.Namespace, seed: int) -> str:
    parts = [
        "minikafka",
        "simulate",
        "--seed",
        str(seed),
        "--faults",
        args.faults,
        "--duration-ms",
        str(args.duration_ms),
    ]
    for item in args.set:
        parts += ["--set", item]
    if args.planted_bug:
        parts += ["--planted-bug", args.planted_bug]
    if args.power_loss:
        parts.append("--power-loss")
    if args.torn_writes:
        parts.append("--torn-writes")
    if args.duplicate_probability:
        parts += ["--duplicate-probability", str(args.duplicate_probability)]
    if args.overlap:
        parts += ["--overlap", str(args.overlap)]
    for option, number, usual in (
        ("--max-at-once", args.max_at_once, 2),
        ("--replication-factor", args.replication_factor, 3),
        ("--min-insync-replicas", args.min_insync_replicas, 2),
    ):
        parts += [option, str(number)] if number != usual else []
    parts += timing_words(plan_timing(args), SIMULATE_TIMING)
    if args.clients:
        parts += ["--clients", args.clients]
    else:
        for option, value, default in (
            ("--acks", args.acks, "all"),
            ("--idempotence", args.idempotence, ""),
            ("--consumers", str(args.consumers), "0"),
            ("--group-consumers", str(args.group_consumers), "0"),
            ("--isolation-level", args.isolation_level, "read_uncommitted"),
            ("--transactional", str(args.transactional), "0"),
            ("--exactly-once", str(args.exactly_once), "0"),
            ("--compacted-keys", str(args.compacted_keys), "0"),
        ):
            parts += [option, value] if value != default else []
    if args.group_protocol != "classic":
        parts += ["--group-protocol", args.group_protocol]
    return shlex.join(parts)


def run_simulate_command(args: argparse.Namespace) -> int:
    """Exit 0 when every seed held (every story went as predicted), 1 on a violation, 128 + the signal's number
    when SIGTERM or SIGINT ended it."""
    settings = settings_from(args)
    try:
        with stopped_by_signals():
            if args.story is not None:
                return run_stories(args, settings)
            return _run_seeds(args, settings)
    except Stopped as stopped:
        name = signal.Signals(stopped.signum).name
        print(f"minikafka simulate: stopped by {name}; the seeds under way were not finished", file=sys.stderr)
        return 128 + stopped.signum


def _run_seeds(args: argparse.Namespace, settings: SimulationSettings) -> int:
    seeds = [args.seed] if args.seed is not None else list(range(args.first_seed, args.first_seed + args.seeds))
    started = time.perf_counter()
    simulated_s = cpu_s = 0.0
    held = explained = 0
    for result in results(settings, seeds, args.jobs):
        simulated_s += result.simulated_s
        cpu_s += result.cpu_s
        _print_seed(args, result)
        if result.violation is not None and result.explained is None:
            _print_violation(args, result)
            return 1
        held += result.violation is None
        explained += result.violation is not None
    wall_s = time.perf_counter() - started
    if not args.json:
        print(
            f"{held} seed(s) held{f', {explained} explained loss(es)' if explained else ''} (faults {args.faults}): "
            f"{simulated_s:.0f} simulated s in {wall_s:.1f} wall s, "
            f"{(held + explained) / wall_s * 60:.1f} seeds/min, {simulated_s / wall_s:.1f} simulated s per wall s; "
            f"{cpu_s:.1f} CPU s, {simulated_s / max(cpu_s, 1e-9):.1f} simulated s per CPU s"
        )
    return 0


def _print_seed(args: argparse.Namespace, result: SimulationResult) -> None:
    if args.json:
        document = asdict(result)
        document["trace"] = document["trace"] if result.violation is not None else []
        print(json.dumps(document, default=str), flush=True)
        return
    verdict = "held" if result.violation is None else f"VIOLATED {result.violation.invariant}"
    if result.violation is not None and result.explained is not None:
        verdict = f"explained loss ({result.violation.invariant}): {result.explained}"
    print(
        f"seed {result.seed}: {verdict}; {result.acknowledged} acknowledged (acks=all), {_reads(result)}"
        f"{result.faults} faults, {result.simulated_s:.1f} simulated s in {result.wall_s:.1f} s ({result.cpu_s:.1f} s "
        f"CPU); trace {result.trace_hash}",
        flush=True,
    )


def _reads(result: SimulationResult) -> str:
    """What the consumers did, when the run had any; the requests duplicated and files torn, when it could."""
    seen = result.observed
    faults = "".join(
        f"{seen[key]} {what}, "
        for key, what in (("duplicated_requests", "requests duplicated"), ("torn_files", "files torn"))
        if key in seen
    )
    cleaned = seen.get("compaction")
    if cleaned is not None:
        skipped, by_group = cleaned.get("skipped_by_consumers"), cleaned.get("skipped_by_group")
        faults = (
            f"{cleaned['cleanings']} cleanings removed {cleaned['records_removed']} records "
            f"({cleaned['tombstones_removed']} tombstones), "
            + (f"{skipped} not read as cleaned, " if skipped else "")
            + (f"{by_group} not read by the group as cleaned, " if by_group else "")
            + faults
        )
    if "consumed" not in seen:
        return faults
    reads = (
        f"[{seen['clients']}] {seen['consumed']} records read, {seen['commits']} offset commits, "
        f"{seen['member_kills']} member kills, {seen['lost_acks_one']} acks=1 records lost (allowed), "
    )
    txns = seen.get("transactions")
    if txns is not None:
        reads += (
            f"transactions {txns['committed']} committed, {txns['undecided']} commits unanswered, {txns['aborted']} "
            f"aborted, {txns['read_committed_records']} read_committed records read, "
        )
    eos = seen.get("exactly_once")
    if eos is not None:
        reads += (
            f"exactly-once {eos['committed']} transactions committed, {eos['aborted']} aborted ({eos['fenced']} "
            f"fenced), {eos['crashes']} crashes, {eos['records']} records through, {eos['outputs_read']} outputs "
            f"read, "
        )
    return reads + faults


def _print_violation(args: argparse.Namespace, result: SimulationResult) -> None:
    assert result.violation is not None
    out = sys.stdout
    if not args.json:
        out.write(f"\nseed {result.seed} broke {result.violation.invariant} at {result.at_s:.3f} simulated s, ")
        out.write(f"during step: {result.step}\n  {result.violation.detail}\n")
        if "guards_on" in result.observed:  # faults overlapped, but the guard made the difference
            out.write(f"  {result.observed['guards_on']}\n")
        out.write("\nthe events that led to it:\n")
        out.writelines(f"  {line}\n" for line in result.trace)
        out.write(f"\ntrace hash {result.trace_hash}; replay with:\n  {replay_command(args, result.seed)}\n")
    out.flush()


def run_stories(args: argparse.Namespace, settings: SimulationSettings) -> int:
    """Each story with its guard on (every invariant must hold) and off (an invariant must break); 0 when every
    run went as predicted."""
    names = list(STORIES) if args.story == "all" else [args.story]
    modes = {"on": [True], "off": [False], "both": [True, False]}[args.guard]
    seed = args.seed if args.seed is not None else args.first_seed
    unexpected = 0
    for name in names:
        story = STORIES[name]
        for guarded in modes:
            result = run_story(story, guarded, seed, settings.overrides)
            predicted = (result.violation is None) == guarded
            unexpected += not predicted
            _print_story(args, story.switch.describe(guarded), name, result, predicted, guarded)
    return 1 if unexpected else 0


def story_replay_command(args: argparse.Namespace, name: str, guarded: bool, seed: int) -> str:
    """The command that runs one side of a story again, to the same trace hash."""
    parts = ["minikafka", "simulate", "--story", name, "--guard", "on" if guarded else "off", "--first-seed", str(seed)]
    for item in args.set:
        parts += ["--set", item]
    return shlex.join(parts)


def _print_story(
    args: argparse.Namespace, switch: str, name: str, result: SimulationResult, predicted: bool, guarded: bool
) -> None:
    replay = story_replay_command(args, name, guarded, result.seed)
    if args.json:
        document = asdict(result)
        document.update(story=name, switch=switch, as_predicted=predicted, replay=replay)
        document["trace"] = document["trace"] if not predicted else []
        print(json.dumps(document, default=str), flush=True)
        return
    broken = ", ".join(v.invariant for v in result.violations)
    verdict = "held" if not broken else f"VIOLATED {broken}"
    print(
        f"story {name} ({switch}): {verdict}; {result.acknowledged} acknowledged, {result.observed.get('lost', '?')} "
        f"lost; {'as predicted' if predicted else 'NOT AS PREDICTED'}; {result.simulated_s:.1f} simulated s in "
        f"{result.cpu_s:.1f} s CPU; trace {result.trace_hash}",
        flush=True,
    )
    if not predicted or (broken and not args.json and args.story != "all"):
        for violation in result.violations:
            print(f"  {violation.invariant}: {violation.detail}")
        if not predicted:
            print("the events that led to it:")
            print("".join(f"  {line}\n" for line in result.trace), end="", flush=True)
    if broken or not predicted:
        print(f"  trace {result.trace_hash}; replay with: {replay}", flush=True)

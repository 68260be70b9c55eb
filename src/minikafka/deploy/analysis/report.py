"""`minikafka analyze`: run every Spark job over a run directory and write the report.

`analyze_run(run_dir, out_dir, master)` loads the event logs, the client histories and the replicas' logs,
computes every invariant's verdict, the timelines, failovers and client figures, renders the PNGs and writes
`summary.json`, `report.md` and `report.html` under `RUN/report/` (or `out_dir`). It returns the summary;
`summary["verdict"]` is pass, fail (an invariant failed), incomplete (acknowledged records no final read reached)
or "nothing to check" (no acknowledged write); `summary["passed"]` is true only for pass.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from minikafka.common.event_log import EVENT_SCHEMA_VERSION
from minikafka.deploy.analysis import client_stats, compaction, failover, figures, timelines
from minikafka.deploy.analysis import group_invariants as groups
from minikafka.deploy.analysis import history_invariants as history
from minikafka.deploy.analysis import metadata_invariants as metadata
from minikafka.deploy.analysis import replica_invariants as replica
from minikafka.deploy.analysis import transaction_invariants as transactions
from minikafka.deploy.analysis.acl_denials import acl_denials, denials_by_principal
from minikafka.deploy.analysis.concurrent_jobs import collect_all
from minikafka.deploy.analysis.denied_writes import denied_writes_visible
from minikafka.deploy.analysis.events import EVENT_SHAPE, read_events
from minikafka.deploy.analysis.explained_losses import LostWrites, explain_losses
from minikafka.deploy.analysis.final_read import final_read_summary
from minikafka.deploy.analysis.history import (
    CONSUME_SCHEMA,
    CONSUME_SHAPE,
    PRODUCE_SHAPE,
    consumed_records,
    read_consume_files,
    read_ends,
    read_group_files,
    read_produced,
)
from minikafka.deploy.analysis.kraft_summary import kraft_summary
from minikafka.deploy.analysis.malformed import malformed_report
from minikafka.deploy.analysis.replica_logs import ReplicaLogs, load_replica_logs, log_matching
from minikafka.deploy.analysis.report_render import render_html, render_markdown
from minikafka.deploy.analysis.spark import kept_for_checks, persisted_rdds, release_cached, spark_session
from minikafka.deploy.analysis.stray_partitions import stray_partition_logs
from minikafka.deploy.analysis.tallies import EventTallies, event_tallies, produced_tallies
from minikafka.deploy.analysis.topic_incarnations import (
    acknowledged_topic_ids,
    reads_of_kept_topics,
    split_deleted_topic_writes,
)
from minikafka.deploy.analysis.verdict import PASS, Check, Verdict, collect_verdicts, run_verdict


def history_checks(
    produced: DataFrame, consumed: DataFrame, lost: DataFrame, acked: int, ends: DataFrame | None = None
) -> list[Check]:
    """With `ends` (the read_end lines), AbortedRead also covers aborted transactions under read_committed."""
    duplicates = history.duplicates(consumed, produced)
    aborted = history.aborted_reads(produced, consumed)
    aborted_checked = None
    if ends is not None:
        aborted = aborted.unionByName(transactions.aborted_transaction_reads(produced, consumed, ends))
        aborted_checked = transactions.aborted_records_checked(produced, ends).count() or None
    return [
        Check(
            "NoCommittedRecordLost",
            "every acks=all acknowledged record a final read covered is there at its offset with its value "
            "(lost-write; records no read reached are unknown, not lost; those an unclean election discarded are "
            "UncleanElectionLoss)",
            lost,
            checked=acked,
        ),
        Check("InconsistentOffsets", "no offset holds two values", history.inconsistent_offsets(produced, consumed)),
        Check(
            "AbortedRead",
            "no definitely failed send is ever read, nor by a read_committed consumer a record of an aborted "
            "transaction",
            aborted,
            checked=aborted_checked,
        ),
        Check(
            "NonmonotonicPoll",
            "each consumer reads a partition's offsets in increasing order",
            history.nonmonotonic_polls(consumed),
        ),
        Check(
            "Duplicates",
            "no value an idempotent producer (enable.idempotence) sent is at two offsets",
            duplicates.where(F.col("idempotent")),
        ),
        Check(
            "DuplicatesWithoutIdempotence",
            "no value a non-idempotent producer sent is at two offsets (allowed: a retried send)",
            duplicates.where(~F.col("idempotent")),
            severity="anomaly",
        ),
    ]


def transaction_checks(
    produced: DataFrame, consumed: DataFrame, ends: DataFrame, events: DataFrame, tallies: EventTallies
) -> list[Check]:
    """Kafka's transactional guarantees: all of a transaction or nothing, and a last stable offset that never
    goes back. A committed transaction's acknowledged records are NoCommittedRecordLost's too."""
    reads = transactions.commit_transaction_reads(produced, consumed, ends).cache()
    return [
        Check(
            "TornTransaction",
            "a read_committed read returns all of a committed transaction's records it went through, or none",
            transactions.torn_transactions(reads),
            checked=reads.where(F.col("covered") > 0).count(),
        ),
        Check(
            "LastStableOffsetMonotonic",
            "a leader's last stable offset never goes back within its leader epoch, nor passes its high watermark",
            transactions.last_stable_offset_monotonic(events),
            checked=tallies.last_stable_offsets,
        ),
    ]


def explained_loss_checks(losses: LostWrites, deleted_writes: DataFrame) -> list[Check]:
    """The losses Kafka's promises allow: reported with their records, never failing the run."""
    return [
        Check(
            "WritesDeletedWithTopic",
            "acknowledged records (any acks) of a topic deleted later in the run (its topic id named): Kafka deletes "
            "them with the topic on purpose, and a topic created again under its name is a new topic (a new topic "
            "id, offsets and leader epochs from 0); not lost, and not expected back",
            deleted_writes,
            severity="anomaly",
        ),
        Check(
            "LostAcksOneWrites",
            "acks=1 acknowledged records a final read covered and did not find: the expected acks=1 loss (its "
            "leader acknowledged them alone and lost the leadership before a follower copied them, e.g. a leader "
            "isolated by a network cut, whose cut is named), not a protocol failure",
            losses.acks_one,
            severity="anomaly",
        ),
        Check(
            "UncleanElectionLoss",
            "acks=all acknowledged records an unclean election discarded: at or above the log end of the "
            "out-of-sync replica it made leader (the election is named); the cost of that choice, not a protocol "
            "failure",
            losses.unclean,
            severity="anomaly",
        ),
    ]


def event_checks(events: DataFrame, dated: DataFrame, tallies: EventTallies) -> list[Check]:
    """`dated`: the producer lines with their topic incarnation (topic_incarnations.acknowledged_topic_ids)."""
    changes, leaders = tallies.partition_changes, tallies.leaders
    return [
        Check(
            "IsrNeverEmpty",
            "no committed ISR is empty (with KIP-966: not together with the ELR and LastKnownElr)",
            metadata.isr_never_empty(events),
            checked=changes,
        ),
        Check(
            "ElrMembersComplete",
            "KIP-966: no broker restarted without a clean shutdown is in an ELR before it is back in an ISR",
            metadata.elr_members_complete(events),
            checked=changes,
        ),
        Check(
            "LeaderInIsrAndReplicas",
            "a committed leader is in the ISR and the replicas; the ISR is within the replicas",
            metadata.leader_in_isr_and_replicas(events),
            checked=changes,
        ),
        Check(
            "OneLeaderPerLeaderEpoch",
            "one leader per (partition, leader epoch), in the metadata and among the brokers acting as leader",
            metadata.one_leader_per_leader_epoch(events),
            checked=changes + leaders,
        ),
        Check(
            "EpochsMonotonic",
            "leader epochs never decrease and partition epochs increase (metadata log order; each broker)",
            metadata.epochs_monotonic(events),
            checked=changes,
        ),
        Check(
            "MetadataLogMatching",
            "every controller replayed the same metadata record at each offset",
            metadata.metadata_log_matching(events),
        ),
        Check(
            "OneRaftLeaderPerEpoch", "at most one KRaft leader per epoch", metadata.one_raft_leader_per_epoch(events)
        ),
        Check(
            "NoStaleBrokerEpochInIsr",
            "KIP-903: no AlterPartition committed an ISR member with a broker epoch older than its registration",
            metadata.stale_broker_epoch_in_isr(events),
        ),
        Check(
            "HighWatermarkMonotonic",
            "a leader's high watermark never goes back within its leader epoch",
            replica.high_watermark_monotonic(events),
        ),
        Check(
            "LeaderCandidateCompleteness",
            "a new leader's log reaches every high watermark and acknowledgement seen before it led",
            replica.leader_completeness(events, dated),
            checked=leaders,
        ),
    ]


def group_checks(events: DataFrame, consumed: DataFrame, tallies: EventTallies) -> list[Check]:
    commits = tallies.commits
    return [
        Check(
            "CommittedOffsetsMonotonic",
            "a group's acknowledged commits of a partition never go back, across coordinator moves",
            groups.committed_offsets_monotonic(events),
            checked=commits,
        ),
        Check(
            "NoBackwardsPoll",
            "no group member consumed a record below an offset its group had already committed",
            groups.no_backwards_poll(events, consumed),
            checked=commits,
        ),
        Check(
            "NoDoubleOwnership",
            "no partition of a consumer-protocol group was held by two members at once: the previous owner's "
            "revocation was acknowledged before the next assignment",
            groups.no_double_ownership(events),
            checked=tallies.held,
        ),
    ]


def acl_checks(produced: DataFrame, consumed: DataFrame, denied_sends: int) -> list[Check]:
    return [
        Check(
            "NoDeniedWriteVisible",
            "no send refused with an authorization error is ever read, and no send of a producer the run's ACLs "
            "refuse (refused_by_acls) is acknowledged or read, whatever it was told",
            denied_writes_visible(produced, consumed),
            checked=denied_sends,
        )
    ]


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _percentile(values: list[float], q: float) -> float | None:
    ordered = sorted(v for v in values if v is not None)
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def _maximum(values: list[float]) -> float | None:
    return max((round(v, 1) for v in values if v is not None), default=None)


@dataclass(frozen=True)
class Judgement:
    """The run's frames and what was decided about them."""

    events: DataFrame
    produced: DataFrame
    replicas: DataFrame
    corrupt_batches: DataFrame  # on disk after the run (replica_logs.py)
    verdicts: list[Verdict]
    final_read: dict[str, Any]
    malformed: dict[str, Any]
    verdict: str


def judge(spark: SparkSession, run_dir: Path) -> Judgement:
    """Load the run (skipping malformed lines), decide every invariant (a Spark job each, run concurrently) and
    classify the final read."""
    events_read, produced_read, consume_read = (
        read_events(spark, run_dir),
        read_produced(spark, run_dir),
        read_consume_files(spark, run_dir),
    )
    # Stored, not cached: each check's plan, analysed and optimised anew on the driver, then starts from the stored
    # rows rather than the whole reading and parsing plan (a warm analysis of a small run: 24 to 18 CPU s).
    events, produced, lines = (
        kept_for_checks(spark, frame) for frame in (events_read.rows, produced_read.rows, consume_read.rows)
    )
    topics = events_read.topics
    consumed, ends = reads_of_kept_topics(consumed_records(lines), topics), read_ends(lines)
    logs = load_replica_logs(spark, run_dir)
    batches, replicas = logs.batches.cache(), logs.replicas.cache()
    malformed = malformed_report(
        run_dir, [(events_read, EVENT_SHAPE), (produced_read, PRODUCE_SHAPE), (consume_read, CONSUME_SHAPE)]
    )
    dated = acknowledged_topic_ids(produced, topics)  # each acknowledgement's topic incarnation, once
    acked, tallies = produced_tallies(dated), event_tallies(events)
    compacted = compaction.compacted_topics(events).cache()
    # Not lost writes: those deleted with their topic, and those of a compacted topic a later one of their key replaced.
    current = split_deleted_topic_writes(dated)
    superseded, deleted_writes = compaction.superseded(current.kept, compacted, consumed), current.deleted.cache()
    may_be_lost = current.kept.join(superseded, ["topic", "partition", "offset"], "left_anti")
    # acks=1 writes are classified in the same pass; the final read's figures count acks=all ones only.
    both = history.classify_unread(may_be_lost, consumed, ends, ("all", "1"))
    lost = both.lost.cache()  # several checks read it: the join behind it runs once
    acks_all = F.col("acks") == "all"
    unread = history.Unread(lost.where(acks_all).drop("acks"), both.unknown.where(acks_all).drop("acks"))
    losses = explain_losses(lost, events)
    checks = (
        history_checks(current.kept, consumed, losses.unexplained, acked.acknowledged_all, ends)
        + transaction_checks(produced, consumed, ends, events, tallies)
        + explained_loss_checks(losses, deleted_writes)
        + event_checks(events, dated, tallies)
    )
    group_lines = reads_of_kept_topics(read_group_files(spark, run_dir), topics).select(
        *CONSUME_SCHEMA.fieldNames(), "source"
    )
    every_read = consumed.select(*CONSUME_SCHEMA.fieldNames(), "source").unionByName(group_lines)
    checks += group_checks(events, every_read, tallies) + acl_checks(produced, every_read, acked.denied_sends)
    checks.append(
        Check(
            "CompactedLatestValueKept",
            "for every key of a compacted topic, the final read holds its latest acks=all acknowledged or read "
            "value at its offset (or a later record of the key); a key whose latest record is a tombstone has no "
            "older value back",
            compaction.latest_value_lost(produced, consumed, ends, compacted),
            checked=compaction.latest_keys_checked(produced, consumed, compacted),
        )
    )
    checks += replica_log_checks(spark, run_dir, events, ReplicaLogs(batches, replicas, logs.corrupt), compacted)
    verdicts = collect_verdicts(checks)
    lost_count = sum(v.violations for v in verdicts if v.name in ("NoCommittedRecordLost", "UncleanElectionLoss"))
    final_read = final_read_summary(acked.acknowledged_all, acked.deleted_with_topic, unread, lost_count, ends)
    final_read["lost_to_unclean_elections"] = next(v.violations for v in verdicts if v.name == "UncleanElectionLoss")
    verdict = run_verdict(verdicts, acked.acknowledged, final_read["unknown"])
    return Judgement(events, produced, replicas, logs.corrupt, verdicts, final_read, malformed, verdict)


def replica_log_checks(
    spark: SparkSession, run_dir: Path, events: DataFrame, logs: ReplicaLogs, compacted: DataFrame
) -> list[Check]:
    """The checks of the brokers' partition logs on disk after the run."""
    # Each replica cleans its own log: the batches of a compacted topic's replicas legitimately differ.
    uncompacted_batches = _without_compacted(logs.batches, compacted)
    return [
        Check(
            "LogMatching",
            "replicas hold identical batches (offsets, epoch, CRC) below both their high watermarks (each capped at "
            "its replica's log end); compacted topics aside, each replica cleaning its own log",
            log_matching(uncompacted_batches, _without_compacted(logs.replicas, compacted)),
            checked=uncompacted_batches.count(),
        ),
        Check(
            "NoStrayPartitionLogs",
            "no broker keeps a partition log whose topic id the final metadata does not know or whose partition it "
            "no longer assigns to that broker",
            stray_partition_logs(spark, events, run_dir),
            severity="anomaly",
            checked=logs.replicas.count(),
        ),
    ]


def _without_compacted(frame: DataFrame, compacted: DataFrame) -> DataFrame:
    """The rows (with a `tp` label) of partitions of topics that are not compacted."""
    labelled = frame.withColumn("topic_of_tp", F.regexp_extract("tp", compaction.PARTITION_LABEL, 1))
    return labelled.join(compacted.withColumnRenamed("topic", "topic_of_tp"), "topic_of_tp", "left_anti").drop(
        "topic_of_tp"
    )


@dataclass(frozen=True)
class RunRows:
    """What the report shows of a run beside its verdicts: each timeline and figure's rows, collected."""

    partitions: list[dict[str, Any]]
    brokers: list[dict[str, Any]]
    controllers: list[dict[str, Any]]
    elections: list[dict[str, Any]]
    faults: list[dict[str, Any]]
    cuts: list[dict[str, Any]]
    incidents: list[dict[str, Any]]
    failovers: list[dict[str, Any]]
    controller_failovers: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    latency: list[dict[str, Any]]
    throughput: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    replicas: list[dict[str, Any]]
    corrupt_batches: list[dict[str, Any]]
    start: datetime | None  # of the first event; None when the run logged none
    end: datetime | None
    event_counts: list[dict[str, Any]]
    acl_denials: list[dict[str, Any]]


def collect_rows(judged: Judgement) -> RunRows:
    """Run the timeline, failover and client jobs over the judged frames and collect their rows."""
    events, produced = judged.events, judged.produced
    rows = collect_all(
        {
            "partitions": timelines.partition_timeline(events),
            "brokers": timelines.broker_states(events),
            "controllers": timelines.controller_leadership(events),
            "elections": timelines.controller_elections(events),
            "faults": timelines.fault_markers(events),
            "cuts": timelines.network_cuts(events),
            "incidents": timelines.incidents(events),
            "failovers": failover.broker_failovers(events, produced),
            "controller_failovers": failover.controller_failovers(events),
            "groups": groups.group_timeline(events),
            "latency": client_stats.produce_latency(produced),
            "throughput": client_stats.throughput(produced),
            "errors": client_stats.errors_by_code(produced),
            "replicas": judged.replicas.orderBy("tp", "node"),
            "corrupt_batches": judged.corrupt_batches.orderBy("tp", "node", "base_offset"),
            "bounds": events.agg(F.min("ts").alias("start"), F.max("ts").alias("end")),
            "event_counts": events.groupBy("event").count().orderBy(F.col("count").desc()),
            "acl_denials": acl_denials(events),
        }
    )
    [bounds] = rows.pop("bounds")
    return RunRows(**rows, start=bounds["start"], end=bounds["end"])


def draw_figures(rows: RunRows, out: Path) -> dict[str, str]:
    """Render the PNGs under `out`; their file names by figure. Time axes start at the first event: none, no axis."""
    figure_paths: dict[str, str] = {}
    if rows.start is not None and rows.end is not None:
        start, end = rows.start, rows.end
        figure_paths["timeline"] = figures.timeline_figure(
            out / "timeline.png",
            rows.partitions,
            rows.brokers,
            rows.controllers,
            rows.faults,
            start,
            end,
            rows.cuts,
            rows.incidents,
        ).name
        figure_paths["failover"] = figures.failover_figure(
            out / "failover.png", rows.failovers, rows.controller_failovers, start
        ).name
        figure_paths["throughput"] = figures.throughput_figure(
            out / "throughput.png", rows.throughput, rows.faults, start
        ).name
    if rows.latency:
        figure_paths["latency"] = figures.latency_figure(out / "latency.png", rows.latency).name
    return figure_paths


def failover_summary(failovers: list[dict[str, Any]], controller_failovers: list[dict[str, Any]]) -> dict[str, Any]:
    new_leader_ms = [row["new_leader_ms"] for row in failovers]
    first_ack_ms = [row["first_ack_ms"] for row in failovers]
    return {
        "leader_losses": len(failovers),
        "new_leader_ms_p50": _percentile(new_leader_ms, 0.5),
        "new_leader_ms_max": _maximum(new_leader_ms),
        "first_ack_ms_p50": _percentile(first_ack_ms, 0.5),
        "first_ack_ms_max": _maximum(first_ack_ms),
        "brokers": failovers,
        "controllers": controller_failovers,
    }


def analyze(spark: SparkSession, run_dir: Path, out: Path) -> dict[str, Any]:
    """Every job of the analysis on one session; writes the figures and returns the summary (not yet written)."""
    started = time.monotonic()
    kept = frozenset(persisted_rdds(spark))
    try:
        return _summary(run_dir, out, judge(spark, run_dir), started)
    finally:
        # The judgement's cached frames and checkpoints are of no use once it is summed up; a session that analyses
        # run after run (the tests', a notebook's) would keep every one, a 64 MiB value's too.
        release_cached(spark, kept)


def _summary(run_dir: Path, out: Path, judged: Judgement, started: float) -> dict[str, Any]:
    rows = collect_rows(judged)
    figure_paths = draw_figures(rows, out)
    return _jsonable(
        {
            "run_dir": str(run_dir),
            "event_schema_version": EVENT_SCHEMA_VERSION,
            "verdict": judged.verdict,
            "passed": judged.verdict == PASS,
            "final_read": judged.final_read,
            "compaction": compaction.cleaner_summary(judged.events),
            "malformed_lines": judged.malformed,
            "invariants": [v.to_json() for v in judged.verdicts],
            "groups": rows.groups,
            "failover": failover_summary(rows.failovers, rows.controller_failovers),
            "kraft": kraft_summary(
                rows.elections,
                next((r["count"] for r in rows.event_counts if r["event"] == "raft_voter_change_appended"), 0),
            ),
            "produce_latency": rows.latency,
            "produce_errors": rows.errors,
            "faults": rows.faults,
            "network_cuts": rows.cuts,
            "incidents": rows.incidents,
            "replicas": rows.replicas,
            "corrupt_batches": rows.corrupt_batches,
            "acl_denials": denials_by_principal(rows.acl_denials),
            "partition_changes": len(rows.partitions),
            "events": {row["event"]: row["count"] for row in rows.event_counts},
            "figures": figure_paths,
            "analysis_seconds": round(time.monotonic() - started, 1),
        }
    )


def analyze_run(run_dir: Path, out_dir: Path | None = None, master: str = "local[2]") -> dict[str, Any]:
    """Run the analysis on a new Spark session and write summary.json, report.md and report.html."""
    out = out_dir or run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    spark = spark_session(master)
    try:
        summary = analyze(spark, run_dir, out)
    finally:
        spark.stop()
    return write_reports(summary, out)


def write_reports(summary: dict[str, Any], out: Path) -> dict[str, Any]:
    """summary.json, report.md and report.html of an analysis in `out`; the summary, with its report's path."""
    summary["report"] = str(out / "report.html")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out / "report.md").write_text(render_markdown(summary))
    (out / "report.html").write_text(render_html(summary))
    return summary

"""The cost of one `analyze` on a warm Spark session: wall seconds, Spark jobs and stages, and paired A/B of two trees.

    .venv/bin/python benchmarks/analyze_jobs.py [--run-dir RUN] [--runs 5] [--judge]
    .venv/bin/python benchmarks/analyze_jobs.py --old /tmp/base --new . [--rounds 4] [--runs 3]

Without --run-dir it analyses the unit tests' clean run (tests/unit/analysis/run_fixtures.py), written afresh to a
temporary directory. The session's first analysis (JIT, class loading) is a warm-up, not counted: the tests and
scenarios analyse on one long-lived session. With --old/--new each round runs this script once under each tree
(PYTHONPATH=<tree>/src, the order alternating) and prints the median of the new/old ratios of wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def fixture_run(into: Path) -> Path:
    sys.path.insert(0, str(REPO / "tests" / "unit" / "analysis"))
    from run_fixtures import clean_run

    return clean_run().write(into / "run")


def spark_jobs(spark: Any) -> tuple[int, int]:
    """(jobs, stages) the session has run so far (jobs of no job group: the analysis sets none)."""
    tracker = spark.sparkContext.statusTracker()
    jobs = tracker.getJobIdsForGroup(None)
    stages = sum(len(info.stageIds) for info in (tracker.getJobInfo(j) for j in jobs) if info is not None)
    return len(jobs), stages


def tree_cpu_seconds(root: int) -> float:
    """utime+stime of `root` and every live descendant (the driver JVM, its Python workers), and of reaped ones."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(f) for f in fields[11:15]) / ticks
    tree, frontier = {root}, [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier and pid not in tree]
        tree.update(children)
        frontier = children
    return sum(times.get(pid, 0.0) for pid in tree)


def job_breakdown(spark: Any, first_job: int) -> list[str]:
    """Each job since `first_job`: milliseconds from submission to completion, stages, tasks, where it was called."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)  # noqa: SLF001 - no public per-job timing
    lines = []
    for index in range(jobs.size()):
        job = jobs.apply(index)
        if job.jobId() < first_job or job.completionTime().isEmpty():
            continue
        millis = job.completionTime().get().getTime() - job.submissionTime().get().getTime()
        lines.append(
            f"{millis:6d} ms job {job.jobId():4d} stages {job.stageIds().size()} tasks {job.numTasks()} {job.name()}"
        )
    return sorted(lines, reverse=True)


def measure(run_dir: Path | None, runs: int, judge_only: bool, breakdown: bool = False) -> list[dict[str, float]]:
    import minikafka.deploy.analysis.spark as settings
    from minikafka.deploy.analysis.report import analyze, judge
    from minikafka.deploy.analysis.spark import spark_session

    for pair in filter(None, os.environ.get("ANALYZE_BENCH_CONF", "").split(",")):  # KEY=VALUE,... to try settings
        key, value = pair.split("=", 1)
        settings.SMALL_DATA_SETTINGS[key] = value
    spark = spark_session("local[2]", "analyze-bench")
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        run = run_dir or fixture_run(Path(scratch))
        for index in range(runs + 1):
            out = Path(scratch) / f"report-{index}"
            out.mkdir()
            jobs_before, stages_before = spark_jobs(spark)
            first_job = max(spark.sparkContext.statusTracker().getJobIdsForGroup(None), default=-1) + 1
            cpu_before = tree_cpu_seconds(os.getpid())
            started = time.monotonic()
            if judge_only:
                judge(spark, run)
                spark.catalog.clearCache()
            else:
                analyze(spark, run, out)
            seconds = time.monotonic() - started
            cpu = tree_cpu_seconds(os.getpid()) - cpu_before
            time.sleep(0.5)  # the status store is updated by a listener, asynchronously
            jobs_after, stages_after = spark_jobs(spark)
            if index:  # the first is the warm-up
                jobs, stages = jobs_after - jobs_before, stages_after - stages_before
                results.append({"seconds": seconds, "cpu": cpu, "jobs": jobs, "stages": stages})
            if breakdown and index == runs:
                print("\n".join(job_breakdown(spark, first_job)))
    spark.stop()
    return results


def paired(old: Path, new: Path, rounds: int, runs: int, extra: list[str]) -> None:
    ratios = []
    for round_index in range(rounds):
        trees = [("old", old), ("new", new)]
        if round_index % 2:
            trees.reverse()
        medians = {}
        for name, tree in trees:
            env = dict(os.environ, PYTHONPATH=str(tree / "src"))
            done = subprocess.run(
                [sys.executable, __file__, "--runs", str(runs), "--json", *extra],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            results = json.loads(done.stdout.strip().splitlines()[-1])
            medians[name] = statistics.median(r["seconds"] for r in results)
            print(f"round {round_index} {name}: {[round(r['seconds'], 2) for r in results]} jobs {results[0]['jobs']}")
        ratios.append(medians["new"] / medians["old"])
        print(f"round {round_index}: new/old {ratios[-1]:.2f}", flush=True)
    print(f"new/old median {statistics.median(ratios):.2f} range {min(ratios):.2f}-{max(ratios):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--judge", action="store_true", help="judge only (the verdicts), not the whole analyze")
    parser.add_argument("--breakdown", action="store_true", help="each job of the last analysis, slowest first")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line")
    parser.add_argument("--old", type=Path)
    parser.add_argument("--new", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    if args.old and args.new:
        extra = [*(["--run-dir", str(args.run_dir)] if args.run_dir else []), *(["--judge"] if args.judge else [])]
        paired(args.old.resolve(), args.new.resolve(), args.rounds, args.runs, extra)
        return
    results = measure(args.run_dir, args.runs, args.judge, args.breakdown)
    if args.json:
        print(json.dumps(results))
        return
    for result in results:
        print(f"{result['seconds']:.2f} s, {result['cpu']:.1f} CPU-s, {result['jobs']} jobs, {result['stages']} stages")


if __name__ == "__main__":
    main()

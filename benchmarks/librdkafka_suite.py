"""librdkafka's own integration tests (`tests/` of its source) against a minikafka cluster's Kafka listeners.

    benchmarks/librdkafka_suite.py --source /tmp/librdkafka [--tests 0001,0002] [--out results.json]

`--source` is a librdkafka checkout at a release tag (its third-party code is never committed here); when its
`tests/test-runner` is missing the script builds it (`./configure`, `make libs`, `make -C tests build`). The
script starts 3 controllers and 3 brokers (`cluster up --network host`, so the test runner outside the run can
reach them), writes `tests/test.conf` with their Kafka listeners as bootstrap servers and a `KAFKA_PATH` whose
`kafka-topics.sh` and `kafka-acls.sh` stand in for Kafka's tools (`kafka_tools`), runs each chosen test
alone in quick mode (`test-runner -p1 -Q -E`: one at a time, fewer messages, no socket-emulation tests; `--full`
drops -Q, for the tests whose sub-tests all skip in quick mode), records
PASS, FAIL, SKIP or TIMEOUT per test with the runner's failure lines and whether every broker was still alive
after it, and stops the cluster. The default list is `librdkafka_tests.txt` beside this file; the results and
their reasons are in docs/librdkafka-suite.md. Not part of CI: a run takes tens of minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_LIST = HERE / "librdkafka_tests.txt"
# The Kafka version the tests assume of the broker: minikafka follows Kafka 4.x, and the suite enables or skips
# sub-tests by it.
KAFKA_VERSION = "4.0.0"
# The auto-created topics' partition count: Kafka's test clusters for librdkafka use 4, and several tests
# (0003, 0036, ...) pick partitions up to 3.
# 0081 creates, describes and deletes ACLs, which a broker without an authorizer refuses (SECURITY_DISABLED): the
# StandardAuthorizer with no ACL meaning "allowed" leaves every other test as it was.
CLUSTER_SETTINGS = (
    "num.partitions=4",
    "default.replication.factor=3",
    "min.insync.replicas=1",
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found=true",
)
# The runner's lines that say why a test failed or was skipped.
FAILURE_LINE = re.compile(r"Test assertion failed|failed at |got Broker:|TIMED OUT|SKIPPED|not supported by broker")
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
DURATION = re.compile(r"\] \d{4}_\w+: duration ([0-9.]+)ms")


@dataclass(frozen=True)
class TestOutcome:
    test: str
    status: str  # PASS, FAIL, SKIP (the runner skipped it: a missing prerequisite) or TIMEOUT
    seconds: float
    brokers_alive: bool  # every broker process still running after the test
    detail: list[str]  # the runner's first failure or skip lines
    ran_nothing: bool  # passed in under a millisecond: quick mode (-Q) skipped every sub-test


def read_test_list(spec: str) -> list[str]:
    """A comma-separated list of test numbers, or a file with one number a line (`#` starts a comment)."""
    path = Path(spec)
    if path.exists():
        lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
        return [line.split()[0] for line in lines if line]
    return [item.strip() for item in spec.split(",") if item.strip()]


def build(source: Path) -> Path:
    """The test runner, built when absent (no SASL/curl/zstd: the tests chosen need none of them)."""
    runner = source / "tests" / "test-runner"
    if runner.exists():
        return runner
    jobs = str(os.cpu_count() or 2)
    subprocess.run(["./configure", "--disable-curl", "--disable-sasl", "--disable-zstd"], cwd=source, check=True)
    subprocess.run(["make", f"-j{jobs}", "libs"], cwd=source, check=True)
    subprocess.run(["make", f"-j{jobs}", "-C", "tests", "build"], cwd=source, check=True)
    return runner


def minikafka(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minikafka.launcher", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def cluster_up(run_dir: Path) -> str:
    """Start the cluster; its Kafka clients' bootstrap servers."""
    settings = [arg for setting in CLUSTER_SETTINGS for arg in ("--set", setting)]
    started = minikafka("cluster", "up", "--dir", str(run_dir), "--network", "host", *settings)
    if started.returncode != 0:
        raise SystemExit(f"cluster up failed: {started.stderr.strip()}")
    described = json.loads((run_dir / "cluster.json").read_text())
    return ",".join(broker["kafka_address"] for broker in described["brokers"])


def brokers_alive(run_dir: Path) -> bool:
    status = minikafka("cluster", "status", "--dir", str(run_dir), "--json")
    if status.returncode != 0:
        return False
    return all(broker["alive"] for broker in json.loads(status.stdout)["brokers"])


# kafka-acls.sh as `minikafka acls` (the same flags) on the run's controllers, without the broker address it is given.
ACLS_SCRIPT = """#!{python}
import os, sys
args = sys.argv[1:]
while "--bootstrap-server" in args:
    at = args.index("--bootstrap-server")
    del args[at : at + 2]
os.execv({python!r}, [{python!r}, "-m", "minikafka.launcher", "acls", "--dir", {run!r}, *args])
"""


def kafka_tools(run_dir: Path) -> Path:
    """A KAFKA_PATH for the tests that run Kafka's tools: bin/kafka-topics.sh creates, grows and deletes topics with
    `kafka_topics_shim.py` (0045, 0052, 0077), bin/kafka-acls.sh is `minikafka acls` (0109, 0115, 0119)."""
    tools = run_dir / "kafka"
    (tools / "bin").mkdir(parents=True, exist_ok=True)
    scripts = {
        "kafka-topics.sh": f'#!/bin/sh\nexec "{sys.executable}" "{HERE / "kafka_topics_shim.py"}" "$@"\n',
        "kafka-acls.sh": ACLS_SCRIPT.format(python=sys.executable, run=str(run_dir)),
    }
    for name, text in scripts.items():
        script = tools / "bin" / name
        script.write_text(text)
        script.chmod(0o755)
    return tools


def run_test(
    runner: Path, test: str, timeout_s: float, log_dir: Path, run_dir: Path, quick: bool, tools: dict[str, str]
) -> TestOutcome:
    """`tools`: the environment that points the test at Kafka's tools (KAFKA_PATH, BROKERS)."""
    libs = f"{runner.parent.parent / 'src'}:{runner.parent.parent / 'src-cpp'}"
    env = {**os.environ, "TESTS": test, "TEST_KAFKA_VERSION": KAFKA_VERSION, "LD_LIBRARY_PATH": libs, **tools}
    started = time.monotonic()
    log_path = log_dir / f"{test}.log"
    with log_path.open("w") as log:
        try:
            finished = subprocess.run(
                ["./test-runner", "-p1", "-E", *(["-Q"] if quick else [])],
                cwd=runner.parent,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
            code: int | None = finished.returncode
        except subprocess.TimeoutExpired:
            code = None
    seconds = round(time.monotonic() - started, 1)
    status, detail, ran_nothing = judge(log_path.read_text(errors="replace"), code)
    return TestOutcome(test, status, seconds, brokers_alive(run_dir), detail, ran_nothing)


def judge(output: str, code: int | None) -> tuple[str, list[str], bool]:
    """A test's status from the runner's output and exit code (None: it ran out of time), its failure or skip
    lines, and whether it passed without running anything."""
    output = ANSI_COLOUR.sub("", output)
    lines = (line.strip() for line in output.splitlines() if '"<MAIN>"' not in line)
    detail = [line for line in lines if FAILURE_LINE.search(line)][:6]
    if code is None:
        status = "TIMEOUT"
    elif code != 0:
        status = "FAIL"
    elif re.search(r"\bSKIPPED\b", output) and not re.search(r"\bPASSED\b", output):
        status = "SKIP"
    else:
        status = "PASS"
    durations = [float(ms) for ms in DURATION.findall(output)]
    return status, detail, status == "PASS" and bool(durations) and max(durations) < 1.0


def write_markdown(outcomes: list[TestOutcome], path: Path) -> None:
    rows = ["| test | result | seconds | brokers alive | first failure lines |", "|---|---|---|---|---|"]
    for outcome in outcomes:
        detail = "<br>".join(line.replace("|", "\\|")[:200] for line in outcome.detail[:3])
        status = f"{outcome.status} (nothing ran)" if outcome.ran_nothing else outcome.status
        rows.append(f"| {outcome.test} | {status} | {outcome.seconds} | {outcome.brokers_alive} | {detail} |")
    counts = {status: sum(o.status == status for o in outcomes) for status in ("PASS", "FAIL", "SKIP", "TIMEOUT")}
    summary = ", ".join(f"{count} {status}" for status, count in counts.items())
    path.write_text(f"{summary}\n\n" + "\n".join(rows) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, required=True, help="a librdkafka source tree at a release tag")
    parser.add_argument("--tests", default=str(DEFAULT_LIST), help="a list file or comma-separated numbers")
    parser.add_argument("--out", type=Path, default=Path("librdkafka-results.json"))
    parser.add_argument("--run-dir", type=Path, default=None, help="the cluster's run directory (default: a new one)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one test may take")
    parser.add_argument("--full", action="store_true", help="without quick mode (-Q): every sub-test runs")
    parser.add_argument("--timeout-multiplier", default="2", help="test.timeout.multiplier for a loaded machine")
    args = parser.parse_args()

    runner = build(args.source.resolve())
    run_dir = (args.run_dir or Path(tempfile.mkdtemp(prefix="librdkafka-suite-"))).resolve()
    log_dir = run_dir / "librdkafka"
    log_dir.mkdir(parents=True, exist_ok=True)
    tests = read_test_list(args.tests)
    outcomes: list[TestOutcome] = []
    try:
        bootstrap = cluster_up(run_dir)
        (runner.parent / "test.conf").write_text(
            f"bootstrap.servers={bootstrap}\ntest.timeout.multiplier={args.timeout_multiplier}\n"
        )
        tools = {"KAFKA_PATH": str(kafka_tools(run_dir)), "BROKERS": bootstrap.split(",")[0]}
        for test in tests:
            outcome = run_test(runner, test, args.timeout, log_dir, run_dir, not args.full, tools)
            outcomes.append(outcome)
            print(f"{test} {outcome.status} {outcome.seconds}s", " | ".join(outcome.detail[:1]), flush=True)
            args.out.write_text(json.dumps([asdict(o) for o in outcomes], indent=1) + "\n")
    finally:
        minikafka("cluster", "down", "--dir", str(run_dir))
    write_markdown(outcomes, args.out.with_suffix(".md"))
    passed = sum(o.status == "PASS" for o in outcomes)
    print(f"{passed}/{len(outcomes)} passed; logs in {log_dir}; results in {args.out}")


if __name__ == "__main__":
    main()

"""The `minikafka` command line as a user runs it (a real subprocess)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.common.record_batch import Record, build_batch
from minikafka.deploy.local_cluster import free_ports

GROUPS = [
    "controller",
    "broker",
    "dump-log",
    "topics",
    "produce",
    "consume",
    "quorum",
    "perf",
    "cluster",
    "fault",
    "analyze",
    "chaos",
    "scenario",
    "demo",
]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka.launcher", *args], capture_output=True, text=True, timeout=60
    )


def test_help_lists_every_command_group() -> None:
    result = run("--help")
    assert result.returncode == 0
    for group in GROUPS:
        assert f"    {group}" in result.stdout, group


def test_bad_config_fails_with_one_line_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.properties"
    config.write_text(
        "node.id=1\nprocess.roles=broker\nlisteners=PLAINTEXT://127.0.0.1:9092\n"
        "controller.quorum.voters=10@127.0.0.1:9093\nlog.dirs=/tmp/x\nreplica.lag.time.max=10\n"
    )
    result = run("broker", "--config", str(config))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "replica.lag.time.max" in lines[0]
    assert "Traceback" not in result.stderr


def test_a_broker_no_controller_registers_exits_after_the_initial_registration_timeout(tmp_path: Path) -> None:
    broker_port, controller_port = free_ports(2)
    config = tmp_path / "broker.properties"
    config.write_text(
        f"node.id=1\nprocess.roles=broker\nlisteners=PLAINTEXT://127.0.0.1:{broker_port}\n"
        f"controller.quorum.voters=10@127.0.0.1:{controller_port}\nlog.dirs={tmp_path / 'data'}\n"
        "initial.broker.registration.timeout.ms=1000\n"
    )
    result = run("broker", "--config", str(config))
    assert result.returncode == 1, result.stderr
    assert "broker_registration_timed_out" in result.stderr and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("minikafka broker: error: REQUEST_TIMED_OUT (7)"), last


def test_bad_flag_is_one_line() -> None:
    result = run("topics", "describe", "--no-such-flag")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--no-such-flag" in result.stderr


# Bad input the issue lists: each refused in one line naming what is wrong, with a non-zero exit, before any
# process starts or any connection is made (no cluster exists in these runs).
BAD_INPUTS = [
    (("produce", "t", "--max-in-flight", "0"), 1, "max.in.flight.requests.per.connection"),
    (
        ("produce", "t", "--request-timeout-ms", "0"),
        1,
        "INVALID_CONFIG (40): Invalid value 0 for configuration request",
    ),
    (("produce", "t", "--linger-ms", "-1"), 1, "linger.ms"),
    (("produce", "t", "--num-records", "-1"), 2, "--num-records"),
    (
        ("perf", "produce", "t", "--num-records", "1", "--producer-props", "max.in.flight.requests.per.connection=0"),
        1,
        "max.in.flight.requests.per.connection",
    ),
    (("perf", "produce", "t", "--num-records", "1", "--producer-props", "batch.size=big"), 1, "batch.size"),
    (("topics", "create", "t", "--partitions", "3000000000"), 2, "INVALID_PARTITIONS"),
    (("topics", "create", "t", "--partitions", "-1"), 2, "INVALID_PARTITIONS"),
    (("topics", "create", "t", "--partitions", "0"), 2, "INVALID_PARTITIONS"),
    (("topics", "create", "t", "--replication-factor", "40000"), 2, "INVALID_REPLICATION_FACTOR"),
    (("topics", "create", "t", "--partitions", "2", "--replica-assignment", "1:2"), 1, "--replica-assignment"),
    (("topics", "create", "t", "--replica-assignment", "1:x"), 1, "INVALID_REPLICA_ASSIGNMENT"),
    (("topics", "create", "t", "--config", "segment.bytes=99999999999"), 1, "INVALID_CONFIG"),
    (("topics", "create", "t", "--config", "no.such=1"), 1, "INVALID_CONFIG"),
    (("topics", "create", "--topic=-bad%name"), 1, "INVALID_TOPIC_EXCEPTION"),
    (("chaos", "RUN", "--duration", "5", "--partitions", "0"), 2, "INVALID_PARTITIONS"),
    (("chaos", "RUN", "--duration", "0"), 2, "--duration"),
    (("chaos", "RUN", "--duration", "5", "--brokers", "2"), 2, "--brokers"),
    (("cluster", "up", "--dir", "RUN", "--brokers", "0"), 2, "--brokers"),
    (("demo", "--records", "0"), 2, "--records"),
    (("fault", "kill", "x"), 2, "ID"),
]


def _kill_nodes_started_under(directory: Path) -> None:
    """SIGKILL the processes whose command line names `directory` (this test's own, unique tmp_path)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(directory) in command:
            try:
                os.kill(int(proc.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize(("args", "status", "named"), BAD_INPUTS, ids=[" ".join(a) for a, _s, _n in BAD_INPUTS])
def test_bad_input_is_one_line_and_starts_nothing(
    tmp_path: Path, args: tuple[str, ...], status: int, named: str
) -> None:
    run_dir = tmp_path / "run"
    try:
        result = subprocess.run(
            [sys.executable, "-m", "minikafka.launcher", *(str(run_dir) if a == "RUN" else a for a in args)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,  # no ./runs/ here: a command that got past its checks would fail on the missing cluster
        )
    finally:
        _kill_nodes_started_under(tmp_path)  # a command that wrongly started a cluster leaves nothing running
    assert result.returncode == status, result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert named in result.stderr
    assert not run_dir.exists()


def test_a_topic_name_may_start_with_a_dash(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "minikafka.launcher", "topics", "create", "--topic=-events", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "no cluster in" in result.stderr  # past the argument checks


def test_produce_history_into_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    history = tmp_path / "missing" / "history.jsonl"
    result = run("produce", "t", "--history", str(history), "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert "--history" in result.stderr and "No such file or directory" in result.stderr


def _segment(path: Path, batches: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        for n in range(batches):
            out.write(build_batch([Record(b"v" * 100, timestamp_ms=n)], base_offset=n))
    return path


def test_dump_log_of_a_directory_is_one_line(tmp_path: Path) -> None:
    _segment(tmp_path / "t-0" / "00000000000000000000.log", 1)
    result = run("dump-log", str(tmp_path / "t-0"))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert "is a directory" in result.stderr


def test_dump_log_into_a_closed_pipe_prints_no_traceback(tmp_path: Path) -> None:
    segment = _segment(tmp_path / "00000000000000000000.log", 200)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write, as `| head` after its lines
    try:
        result = subprocess.run(
            [sys.executable, "-m", "minikafka.launcher", "dump-log", str(segment), "--print-data-log"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert result.returncode != 0
    assert result.stderr == ""


def test_tools_and_nodes_do_not_import_the_simulator() -> None:
    """Every node and tool starts through `minikafka`; the simulator (every node's code) is imported only for
    `simulate`, so the others do not pay for it."""
    probe = (
        "import sys; from minikafka.cli import build_parser; build_parser('topics').parse_args(['topics', 'list']); "
        "print('minikafka.sim.world' in sys.modules, end=' '); build_parser('simulate'); "
        "print('minikafka.sim.world' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["False", "True"]

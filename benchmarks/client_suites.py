"""The Kafka clients' own integration suites against a minikafka cluster's Kafka listeners.

    benchmarks/client_suites.py kafka-python --source DIR [--tests test/integration] [--out results.json]
    benchmarks/client_suites.py aiokafka --source DIR [--tests tests/test_admin.py,...] [--out results.json]
    benchmarks/client_suites.py kafkajs --source DIR [--tests src/admin,src/producer,src/consumer] [--out F]

`--source` is the client's source at the release installed here (its third-party code is never committed): a
checkout of kafka-python (its `test/` is run with the kafka-python installed in this venv), of aiokafka (its
`tests/`, with the installed aiokafka; its tests/coordinator needs pytest-mock) or of kafkajs (its specs run with
its own `src/`; jest and the other devDependencies the specs need are installed with npm into `DIR/node_modules`
when missing). Each suite runs in a copy of its tests made under the run directory, with the suite's fixtures
pointed at the cluster the way its own CI points them at a Kafka (environment variables, or a fixture override
appended to the copy); nothing in `--source` is changed.

The script starts 3 controllers and 3 brokers (`cluster up --network host`; `--brokers 1` for one, as a
single-broker fixture), with the broker ids and the broker settings of the Kafka the suite's CI starts (its
partitions, replication factor, and an authorizer allowing everyone when no ACL is found), runs the suite, writes
one JSON record per test (passed, failed, error or skipped, seconds, the first lines of its failure) and a summary,
and stops the cluster. docs/client-suites.md has the results and the commands. Not part of CI: a suite takes
minutes to tens of minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

# The Kafka version the suites are told the broker is: minikafka follows Kafka 4.0's APIs.
KAFKA_VERSION = "4.0.0"
# Every suite's Kafka runs an authorizer that lets everyone do what no ACL covers (their ACL tests need one).
AUTHORIZER = (
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found=true",
)
REASON_LINES = 4


@dataclass(frozen=True)
class TestResult:
    test: str
    status: str  # passed, failed, error (in a fixture) or skipped
    seconds: float
    reason: str  # the first lines of the failure or the skip reason


@dataclass(frozen=True)
class Suite:
    name: str
    broker_ids: str
    settings: tuple[str, ...]
    default_tests: str
    run: Callable[[argparse.Namespace, list[str], Path], list[TestResult]]
    kafka_listeners: tuple[str, ...] = ()  # each broker's Kafka listeners beyond PLAINTEXT (cluster up's)


def minikafka(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minikafka.launcher", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def cluster_up(run_dir: Path, suite: Suite, brokers: int) -> list[str]:
    """Start the cluster; its brokers' Kafka listener addresses, by broker id."""
    settings = [arg for setting in (*suite.settings, *AUTHORIZER) for arg in ("--set", setting)]
    ids = ",".join(suite.broker_ids.split(",")[:brokers])
    command = ["cluster", "up", "--dir", str(run_dir), "--network", "host", "--brokers", str(brokers)]
    command += [arg for name in suite.kafka_listeners for arg in ("--kafka-listener", name)]
    started = minikafka(*command, "--broker-ids", ids, *settings)
    if started.returncode != 0:
        raise SystemExit(f"cluster up failed: {started.stderr.strip()}")
    described = json.loads((run_dir / "cluster.json").read_text())
    return [broker["kafka_address"] for broker in described["brokers"]]


def listener_addresses(run_dir: Path, name: str) -> list[str]:
    """The brokers' addresses of their Kafka listener `name` (one of the suite's `kafka_listeners`)."""
    described = json.loads((run_dir / "cluster.json").read_text())
    return [broker["kafka_listeners"][name] for broker in described["brokers"]]


def first_lines(text: str | None) -> str:
    lines = [line.rstrip() for line in (text or "").strip().splitlines() if line.strip()]
    return "\n".join(lines[:REASON_LINES])


def junit_results(path: Path) -> list[TestResult]:
    """pytest's (and jest-junit's) JUnit XML: one record per test case."""
    if not path.exists():
        return []
    results = []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        status, reason = "passed", ""
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is not None:
                status = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                reason = first_lines(element.get("message") or element.text)
                break
        results.append(TestResult(name, status, round(float(case.get("time") or 0), 1), reason))
    return results


def run_logged(command: list[str], cwd: Path, env: dict[str, str], log: Path, timeout_s: float) -> None:
    with log.open("w") as out:
        try:
            subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            out.write(f"\n*** the suite ran past {timeout_s} s and was stopped\n")


# ---- kafka-python ----


def run_kafka_python(args: argparse.Namespace, brokers: list[str], run_dir: Path) -> list[TestResult]:
    """kafka-python's fixtures take an external broker from KAFKA_URI and the broker's version from KAFKA_VERSION.
    Its `test/` is copied without its `kafka/` package, so that the installed kafka-python is the one tested."""
    work = run_dir / "kafka-python"
    shutil.copytree(args.source / "test", work / "test")
    # The fixture insists on a Kafka installation directory even for an external broker; it runs nothing in it.
    kafka_root = work / "no-kafka-installation"
    kafka_root.mkdir()
    env = {
        **os.environ,
        "KAFKA_VERSION": KAFKA_VERSION,
        "KAFKA_URI": f"PLAINTEXT://{brokers[0]}",
        "KAFKA_ROOT": str(kafka_root),
    }
    junit = run_dir / "kafka-python.xml"
    tests = [f"test/{t.removeprefix('test/')}" for t in args.tests.split(",")]
    command = [sys.executable, "-m", "pytest", *tests, "-p", "no:cacheprovider", "-o", "addopts=", "-q"]
    command += ["--timeout=300", "-n", "0", f"--junitxml={junit}"]
    run_logged(command, work, env, run_dir / "kafka-python.log", args.timeout)
    return junit_results(junit)


# ---- aiokafka ----

# Appended to the copy of aiokafka's tests/conftest.py: later definitions of a fixture in the same module replace
# the docker-based ones. The container's Kafka tools that its helpers run (kafka-acls.sh for ACLManager,
# kafka-configs.sh for KafkaConfig's SCRAM users) become minikafka's `acls` and `configs`, which take Kafka's flags;
# KerberosUtils gets none (minikafka has no GSSAPI): a test that uses it fails, and says so.
AIOKAFKA_FIXTURES = """

# ---- minikafka: the cluster in MINIKAFKA_BROKERS instead of a docker container ----
import shlex
import subprocess


class _NoKerberos:
    def __getattr__(self, name):
        raise RuntimeError("needs Kerberos in aiokafka's docker container: minikafka's SASL has no GSSAPI")


class _MinikafkaTools:
    _TOOLS = {"kafka-acls.sh": "acls", "kafka-configs.sh": "configs"}
    _ZOOKEEPER = {"--authorizer-properties", "zookeeper.connect=localhost:2181", "--zookeeper", "localhost:2181"}

    def exec_run(self, cmd):
        words = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        tool = self._TOOLS.get(words[0].rsplit("/", 1)[-1])
        if tool is None:
            return 1, f"minikafka runs no {words[0]}".encode()
        args = [word for word in words[1:] if word not in self._ZOOKEEPER]
        command = [os.environ["MINIKAFKA_PYTHON"], "-m", "minikafka.launcher", tool]
        done = subprocess.run([*command, "--dir", os.environ["MINIKAFKA_RUN"], *args], capture_output=True)
        return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="session")
def docker(request):
    yield None


@pytest.fixture(scope="session")
def kafka_image(request):
    return request.config.getoption("--docker-image")


@pytest.fixture(scope="session")
def ssl_folder(docker, kafka_image):
    return pathlib.Path(os.environ["MINIKAFKA_SSL_FOLDER"])


@pytest.fixture(scope="session")
def kafka_server(kafka_image, docker):
    host, port = os.environ["MINIKAFKA_BROKERS"].split(",")[0].rsplit(":", 1)
    ssl, sasl_plaintext, sasl_ssl = (int(port) for port in os.environ["MINIKAFKA_LISTENER_PORTS"].split(","))
    yield KafkaServer(host, int(port), ssl, sasl_plaintext, sasl_ssl, _MinikafkaTools())


@pytest.fixture(scope="class")
def kerberos_utils(kafka_server):
    return _NoKerberos()
"""
# What its gen-ssl-certs.sh makes and the tests read: the CA, and a client certificate and key (the run's admin's).
AIOKAFKA_SSL_FILES = (("ca.pem", "ca.crt"), ("admin.pem", "client.crt"), ("admin.key", "client.key"))


def run_aiokafka(args: argparse.Namespace, brokers: list[str], run_dir: Path) -> list[TestResult]:
    """aiokafka's fixtures start a docker container; the copy's conftest points them at the cluster instead, and
    the Kafka version is read from the image tag, as its Makefile passes it."""
    work = run_dir / "aiokafka"
    shutil.copytree(args.source / "tests", work / "tests")
    shutil.copy(args.source / "pyproject.toml", work / "pyproject.toml")  # its pytest settings (asyncio mode, ...)
    conftest = work / "tests" / "conftest.py"
    text = conftest.read_text().replace(
        "import docker as libdocker\n",
        "libdocker = type(sys)('docker')  # minikafka: no docker\n"
        "libdocker.models = type('m', (), {'containers': type('c', (), {'Container': object})})\n",
    )
    conftest.write_text(text + AIOKAFKA_FIXTURES)
    ssl_folder = run_dir / "aiokafka-ssl"
    ssl_folder.mkdir()
    for made, name in AIOKAFKA_SSL_FILES:
        shutil.copy(run_dir / "certs" / made, ssl_folder / name)
    listeners = (
        listener_addresses(run_dir, name)[0].rpartition(":")[2] for name in ("SSL", "SASL_PLAINTEXT", "SASL_SSL")
    )
    env = {
        **os.environ,
        "MINIKAFKA_BROKERS": ",".join(brokers),
        "MINIKAFKA_LISTENER_PORTS": ",".join(listeners),
        "MINIKAFKA_SSL_FOLDER": str(ssl_folder),
        "MINIKAFKA_RUN": str(run_dir),
        "MINIKAFKA_PYTHON": sys.executable,
    }
    junit = run_dir / "aiokafka.xml"
    command = [sys.executable, "-m", "pytest", *args.tests.split(","), "-p", "no:cacheprovider", "-q", "-n", "0"]
    command += [f"--docker-image=aiolibs/kafka:2.13_{KAFKA_VERSION}", "--no-pull", f"--junitxml={junit}"]
    # its settings turn warnings into errors: pytest-asyncio's own about this unset option would stop the run
    command += ["--timeout=300", "-o", "asyncio_default_fixture_loop_scope=function", "--continue-on-collection-errors"]
    # and a newer pytest's deprecation of generator parametrize would stop the collection of test_requests.py
    command += ["-W", "ignore::pytest.PytestRemovedIn10Warning"]
    run_logged(command, work, env, run_dir / "aiokafka.log", args.timeout)
    return junit_results(junit)


# ---- kafkajs ----

# The devDependencies kafkajs 2.2.4's specs need (its package.json's versions), installed when missing.
KAFKAJS_DEV_PACKAGES = (
    "jest@25",
    "jest-circus@25",
    "jest-extended@0.11.2",
    "jest-junit@10",
    "execa@2",
    "uuid@3",
    "semver@6",
    "jsonwebtoken@9",
    "glob@7",
    "ip@1",
    "mockdate@2",
)
_FIRST_SSL_PORT = "Number(process.env.MINIKAFKA_SSL_BROKERS.split(',')[0].split(':')[1])"
_FIRST_SASL_PORT = "Number(process.env.MINIKAFKA_SASL_BROKERS.split(',')[0].split(':')[1])"
# testHelpers/index.js names its brokers' PLAINTEXT listeners localhost:9092, 9095 and 9098 (its docker-compose's),
# their SSL ones 9093, 9096 and 9099 and their SASL_SSL ones 9094, 9097 and 9100, and connects to the first broker's
# by port: the copy takes the run's addresses from MINIKAFKA_BROKERS, MINIKAFKA_SSL_BROKERS and
# MINIKAFKA_SASL_BROKERS instead (every listener of a broker is on its one address).
KAFKAJS_HELPER_EDITS = (
    (
        "const plainTextBrokers = (host = getHost()) => [`${host}:9092`, `${host}:9095`, `${host}:9098`]",
        "const plainTextBrokers = () => process.env.MINIKAFKA_BROKERS.split(',')",
    ),
    (
        "const sslBrokers = (host = getHost()) => [`${host}:9093`, `${host}:9096`, `${host}:9099`]",
        "const sslBrokers = () => process.env.MINIKAFKA_SSL_BROKERS.split(',')",
    ),
    (
        "const saslBrokers = (host = getHost()) => [`${host}:9094`, `${host}:9097`, `${host}:9100`]",
        "const saslBrokers = () => process.env.MINIKAFKA_SASL_BROKERS.split(',')",
    ),
    ("    port: 9093,\n", f"    port: {_FIRST_SSL_PORT},\n"),
    ("    port: 9094,\n", f"    port: {_FIRST_SASL_PORT},\n"),
    (
        "brokers: [`${getHost()}:9092`]",
        "brokers: plainTextBrokers()",
    ),
    (
        "  host: getHost(),\n  port: 9092,\n",
        "  host: process.env.MINIKAFKA_BROKERS.split(',')[0].split(':')[0],\n"
        "  port: Number(process.env.MINIKAFKA_BROKERS.split(',')[0].split(':')[1]),\n",
    ),
)
# Specs that name the first broker's SASL_SSL port themselves.
KAFKAJS_SPEC_EDITS = {"src/broker/__tests__/connect.spec.js": (("port: 9094,", f"port: {_FIRST_SASL_PORT},"),)}


def kafkajs_modules(source: Path) -> Path:
    modules = source / "node_modules"
    if not (modules / "jest" / "package.json").exists():
        deps = source / ".minikafka-devdeps"
        deps.mkdir(exist_ok=True)
        command = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(deps), *KAFKAJS_DEV_PACKAGES]
        subprocess.run(command, check=True, cwd=deps)
        if not modules.exists():
            modules.symlink_to(deps / "node_modules")
    return modules


# Its docker-compose's SASL users: PLAIN's from the brokers' JAAS file, SCRAM's made by its createScramCredentials.sh.
KAFKAJS_SCRAM_USER = (
    "testscram",
    "SCRAM-SHA-256=[iterations=8192,password=testtestscram=256],SCRAM-SHA-512=[password=testtestscram=512]",
)
# Its addPartitions.sh runs kafka-topics in its Kafka container; the copy's does the same CreatePartitions with
# confluent-kafka's admin client.
KAFKAJS_ADD_PARTITIONS = """#!/bin/sh -e
exec "{python}" -c '
import os, sys
from confluent_kafka.admin import AdminClient, NewPartitions
admin = AdminClient({{"bootstrap.servers": os.environ["MINIKAFKA_BROKERS"]}})
for future in admin.create_partitions([NewPartitions(os.environ["TOPIC"], int(os.environ["PARTITIONS"]))]).values():
    future.result()
'
"""


def kafkajs_copy(source: Path, work: Path) -> None:
    """The checkout copied, its helpers pointed at the run's listeners and its Kafka-container scripts replaced."""
    shutil.copytree(source, work, symlinks=True, ignore=shutil.ignore_patterns(".git", "website", "docs"))
    for name, edits in {"testHelpers/index.js": KAFKAJS_HELPER_EDITS, **KAFKAJS_SPEC_EDITS}.items():
        path = work / name
        text = path.read_text()
        for old, new in edits:
            if old not in text:
                raise SystemExit(f"{name} is not kafkajs 2.2.4's: {old!r} not found")
            text = text.replace(old, new)
        path.write_text(text)
    script = work / "scripts" / "addPartitions.sh"
    script.write_text(KAFKAJS_ADD_PARTITIONS.format(python=sys.executable))
    script.chmod(0o755)


def run_kafkajs(args: argparse.Namespace, brokers: list[str], run_dir: Path) -> list[TestResult]:
    """kafkajs's specs with its jest setup (jest-circus, one worker), against the run's brokers."""
    kafkajs_modules(args.source)
    work = run_dir / "kafkajs"
    kafkajs_copy(args.source, work)
    user, scram = KAFKAJS_SCRAM_USER
    made = minikafka("configs", "--dir", str(run_dir), "--alter", "--entity-type", "users", "--entity-name", user,
                     "--add-config", scram)  # fmt: skip
    if made.returncode != 0:
        raise SystemExit(f"the SCRAM user {user} was not made: {made.stderr.strip()}")
    junit = run_dir / "kafkajs.xml"
    env = {
        **os.environ,
        "MINIKAFKA_BROKERS": ",".join(brokers),
        "MINIKAFKA_SSL_BROKERS": ",".join(listener_addresses(run_dir, "SSL")),
        "MINIKAFKA_SASL_BROKERS": ",".join(listener_addresses(run_dir, "SASL_SSL")),
        "KAFKA_VERSION": "2.4",  # the newest its specs know: every version-gated spec runs
        "NODE_ENV": "test",
        "JEST_JUNIT_OUTPUT_DIR": str(run_dir),
        "JEST_JUNIT_OUTPUT_NAME": junit.name,
        "JEST_JUNIT_CLASSNAME": "{filepath}",
        "JEST_JUNIT_TITLE": "{classname} {title}",
    }
    command = ["node", "node_modules/jest/bin/jest.js", "--ci", "--runInBand", "--forceExit", "--no-watchman"]
    command += ["--verbose"]  # a line per test as each spec file ends
    command += args.tests.split(",")
    run_logged(command, work, env, run_dir / "kafkajs.log", args.timeout)
    return junit_results(junit)


SUITES = {
    # kafka-python's KRaft properties (test/../servers/resources/default/kafka.properties): node 0, 4 partitions,
    # one replica, a short group rebalance delay.
    "kafka-python": Suite(
        "kafka-python",
        "0,1,2",
        (
            "num.partitions=4",
            "default.replication.factor=1",
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=2",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "group.min.session.timeout.ms=1000",
            "group.initial.rebalance.delay.ms=0",
            "min.insync.replicas=1",
        ),
        "test/integration",
        run_kafka_python,
    ),
    # aiokafka's docker image: one broker, NUM_PARTITIONS=2, its internal topics with one replica; an SSL listener
    # asking clients for certificates, SASL_PLAINTEXT and SASL_SSL ones (its JAAS file's PLAIN users).
    "aiokafka": Suite(
        "aiokafka",
        "0,1,2",
        (
            "num.partitions=2",
            "default.replication.factor=1",
            "group.initial.rebalance.delay.ms=0",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "SASL_SSL:SASL_SSL,GRPC:GRPC,BROKER:GRPC,CONTROLLER:GRPC",
            "ssl.client.auth=required",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "sasl.plain.users=admin:admin,test:test,test2:test2",
        ),
        "tests",
        run_aiokafka,
        ("SSL", "SASL_PLAINTEXT", "SASL_SSL"),
    ),
    # kafkajs's docker-compose.2_4.yml: brokers 0, 1 and 2, 2 partitions, replication factor 2, each with a
    # PLAINTEXT, an SSL and a SASL_SSL listener (its PLAIN users, SCRAM user testscram).
    "kafkajs": Suite(
        "kafkajs",
        "0,1,2",
        (
            "num.partitions=2",
            "default.replication.factor=2",
            "group.initial.rebalance.delay.ms=0",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,GRPC:GRPC,BROKER:GRPC,"
            "CONTROLLER:GRPC",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "sasl.plain.users=test:testtest,bob:bobbob,alice:alicealice",  # its server-jaas.conf
        ),
        "src/admin,src/producer,src/consumer",
        run_kafkajs,
        ("SSL", "SASL_SSL"),
    ),
}


def summary(results: list[TestResult]) -> dict[str, int]:
    counts = Counter(result.status for result in results)
    return {status: counts.get(status, 0) for status in ("passed", "failed", "error", "skipped")} | {
        "total": len(results)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", choices=sorted(SUITES))
    parser.add_argument("--source", type=Path, required=True, help="the client's source at its installed release")
    parser.add_argument("--tests", default=None, help="comma-separated test paths (default: the suite's)")
    parser.add_argument("--out", type=Path, default=None, help="the results JSON (default: SUITE-results.json)")
    parser.add_argument("--run-dir", type=Path, default=None, help="the cluster's run directory (default: new)")
    parser.add_argument("--timeout", type=float, default=5400, help="seconds the whole suite may take")
    parser.add_argument("--brokers", type=int, default=3, help="how many brokers (3; 1 as a single-broker fixture)")
    args = parser.parse_args()
    suite = SUITES[args.suite]
    args.source = args.source.resolve()
    args.tests = args.tests or suite.default_tests
    out = args.out or Path(f"{suite.name}-results.json")
    run_dir = (args.run_dir or Path(tempfile.mkdtemp(prefix=f"{suite.name}-suite-"))).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        brokers = cluster_up(run_dir, suite, args.brokers)
        results = suite.run(args, brokers, run_dir)
    finally:
        minikafka("cluster", "down", "--dir", str(run_dir))
    counts = summary(results)
    report = {
        "suite": suite.name,
        "tests": args.tests,
        "seconds": round(time.monotonic() - started),
        "summary": counts,
        "results": [asdict(result) for result in results],
    }
    out.write_text(json.dumps(report, indent=1) + "\n")
    for result in results:
        if result.status in ("failed", "error"):
            print(f"{result.status.upper()} {result.test}: {result.reason.splitlines()[0] if result.reason else ''}")
    print(
        ", ".join(f"{count} {status}" for status, count in counts.items()) + f"; log and cluster in {run_dir}",
        flush=True,
    )
    if not results:
        print(f"no results: see {run_dir}/{suite.name}.log", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

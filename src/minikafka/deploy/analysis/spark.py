"""One SparkSession for the analysis, configured for a 2-core machine (local mode) or a given master."""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession

# A run's logs are small: an analysis is some 170 short jobs, whose cost is code generation and JIT compilation
# rather than data. With these settings a new session's first analysis takes about half the CPU it did.
SMALL_DATA_SETTINGS = {
    "spark.sql.adaptive.enabled": "false",  # re-planning at every shuffle multiplies the jobs and gains nothing here
    "spark.sql.codegen.wholeStage": "false",  # compiling Java for each stage costs more than running it on tiny data
    # Expressions interpreted, not compiled, for the same reason: a fresh session's analysis of a small run took
    # 0.89 of the wall time (median of 3 paired runs).
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # A broadcast join runs a job of its own to collect its small side: a warm analysis of a small run was 118 jobs
    # with them, 60 without (sort-merge joins over one shuffle partition), 40 s down to 33 s on a loaded machine.
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    # Spark's status store keeps every finished job, stage, task and SQL execution even with the UI off, by default
    # the last 1,000 jobs and stages, 100,000 tasks and 1,000 executions: a test run's shared session holds hundreds
    # of analyses. Nothing here reads them back.
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
    "spark.ui.retainedTasks": "1000",
    "spark.sql.ui.retainedExecutions": "20",
}
# The driver and executor JVMs (one JVM in local mode): the quick C1 compiler only, since C2's optimisation of
# short-lived jobs burns a core for seconds and never pays back; a standalone master's executors start with each
# analysis, so they never warm up either. C1 alone reserves 48 MiB for compiled code, which a long-lived session (a
# test run's hundreds of analyses) filled until the JVM died ("Out of space in CodeCache").
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"
LOCAL_DRIVER_MEMORY = "2g"


# A run read with at most this many rows of a kind is kept on the driver (below); the tests' runs and short demos are.
SMALL_RUN_ROWS = 20_000


def kept_for_checks(spark: SparkSession, frame: DataFrame) -> DataFrame:
    """The frame's rows stored once for the checks. A small run's rows become a local relation on the driver: Spark's
    optimizer then applies the checks' filters to them while planning, and a check whose rows all filter away (an
    event the run never logged) runs no job at all (14 analyses of the tests' small runs: 160-189 CPU s where
    checkpointed they took 316-329). A larger run's are checkpointed on the executors, and one executor lost
    mid-analysis then fails the analysis instead of recomputing them."""
    rows = frame._jdf.limit(SMALL_RUN_ROWS + 1).collectAsList()  # noqa: SLF001 - no public way to keep rows in the JVM
    if rows.size() > SMALL_RUN_ROWS:
        return frame.localCheckpoint()
    return DataFrame(spark._jsparkSession.createDataFrame(rows, frame._jdf.schema()), spark)  # noqa: SLF001


def release_cached(spark: SparkSession, kept: frozenset[int] = frozenset()) -> None:
    """Free what analyses cached: the cached DataFrames and every persisted RDD but `kept` (RDD ids), local
    checkpoints and the replica-log reader's rows included, which `clearCache` does not know of."""
    spark.catalog.clearCache()
    for rdd_id, rdd in persisted_rdds(spark).items():
        if rdd_id not in kept:
            rdd.unpersist(False)


def persisted_rdds(spark: SparkSession) -> dict[int, Any]:
    """The session's persisted RDDs (JVM JavaRDD handles) by id."""
    return dict(spark.sparkContext._jsc.getPersistentRDDs())  # noqa: SLF001 - pyspark lists them nowhere else


def spark_session_alive(session: SparkSession) -> bool:
    """Whether the session's JVM still answers and its context is not stopped."""
    return _context_alive(session.sparkContext)


def _context_alive(context: SparkContext) -> bool:
    try:
        return not context._jsc.sc().isStopped()  # noqa: SLF001 - pyspark exposes no public check
    except Exception:  # noqa: BLE001 - a dead JVM fails in py4j in several ways, all meaning "not alive"
        return False


def _forget_dead_session() -> None:
    """pyspark keeps its context and gateway in class attributes: after the JVM died, getOrCreate would hand back
    the dead session. Forget them so a new JVM starts."""
    active = SparkContext._active_spark_context  # noqa: SLF001
    if active is None or _context_alive(active):
        return
    SparkContext._active_spark_context = None  # noqa: SLF001
    SparkContext._gateway = None  # noqa: SLF001
    SparkContext._jvm = None  # noqa: SLF001
    SparkSession._instantiatedSession = None  # noqa: SLF001
    SparkSession._activeSession = None  # noqa: SLF001


def spark_session(master: str = "local[2]", app_name: str = "minikafka-analysis") -> SparkSession:
    # Loopback only, no UI, few shuffle partitions: runs are small and the machines have 2 cores.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Spark's Python workers must import minikafka (the replica-log reader runs in them): use this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    _forget_dead_session()
    builder = SparkSession.builder.master(master)
    for key, value in SMALL_DATA_SETTINGS.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.driver.extraJavaOptions", JAVA_OPTIONS)
    builder = builder.config("spark.executor.extraJavaOptions", JAVA_OPTIONS)
    if master.startswith("local"):
        # The driver is the executor in local mode: Spark's 1 GiB default ran out of heap parsing a history line
        # with a 64 MiB value (Java holds it as UTF-16, and more than once) once earlier jobs had cached data.
        builder = builder.config("spark.driver.memory", LOCAL_DRIVER_MEMORY)
    session = (
        builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")  # run logs are small: one task per shuffle is fastest
        .config("spark.default.parallelism", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session

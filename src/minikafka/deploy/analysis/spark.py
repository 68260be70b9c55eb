"""One SparkSession for the analysis, configured for a 2-core machine (local mode) or a given master."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def spark_session(master: str = "local[2]", app_name: str = "minikafka-analysis") -> SparkSession:
    # Loopback only, no UI, few shuffle partitions: runs are small and the machines have 2 cores.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Spark's Python workers must import minikafka (the replica-log reader runs in them): use this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master(master)
        .appName(app_name)
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

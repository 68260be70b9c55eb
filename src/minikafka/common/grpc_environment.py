"""The environment gRPC core reads once, when grpc is imported: set for every minikafka process before that.

I/O engine. grpcio 1.85 runs connections on its EventEngine by default: a socket is read in one of the engine's own
threads, which hands the completion to grpc.aio's poller thread, which wakes the event loop. Its classic I/O, still in
the library behind the experiments `event_engine_client` and `event_engine_listener`, reads in the poller's thread:
one thread hop less per message. Measured here with a producer's 15 KiB batch, one at a time: a bare echo between two
processes carried 21-30% more unary calls and 60-77% more stream messages on it, and a 3+3 cluster produced 31% more
with acks=all and 22% more with acks=1 (medians of four rounds). Small messages with many in flight, bound by
Python's CPU, were the same either way. The benchmarks' echo runs on the same engine as the cluster.

Fork support. No minikafka process forks and then uses gRPC: every child is exec'd (nodes, the echo server, Spark's
JVM). gRPC's fork handlers have nothing to do, and left on they print a warning whenever `analyze` starts Spark.

Verbosity. gRPC core logs through absl, which before it is initialised (never, in Python) writes INFO lines to stderr
unless GRPC_VERBOSITY says otherwise: a client that gets a GOAWAY with an error code from a stopping node prints
"Got goaway [...]" into the test output and every command's stderr. ERROR (what an unset GRPC_VERBOSITY meant before
gRPC moved to absl) keeps gRPC's errors and drops its INFO and WARNING lines; GRPC_VERBOSITY=INFO brings them back.

`import minikafka` applies these (every `minikafka` command and every node it starts), as do the benchmarks and the
tests. A variable already set is left as it is (`GRPC_EXPERIMENTS=` gives gRPC's default engine). A grpcio that no
longer has these experiments logs "Unknown experiment" once and uses its default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from types import MappingProxyType
from typing import Final

GRPC_ENVIRONMENT: Final[Mapping[str, str]] = MappingProxyType(
    {
        "GRPC_EXPERIMENTS": "-event_engine_client,-event_engine_listener",
        "GRPC_ENABLE_FORK_SUPPORT": "0",
        "GRPC_VERBOSITY": "ERROR",
    }
)


def configure_grpc_environment(environ: MutableMapping[str, str] = os.environ) -> None:
    for name, value in GRPC_ENVIRONMENT.items():
        environ.setdefault(name, value)

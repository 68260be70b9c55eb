"""Which of gRPC core's I/O engines a minikafka process runs on: chosen before grpc is imported.

grpcio 1.85 runs connections on its EventEngine by default: a socket is read in one of the engine's own threads,
which hands the completion to grpc.aio's poller thread, which wakes the event loop. Its classic I/O, still in the
library behind the experiments `event_engine_client` and `event_engine_listener`, reads in the poller's thread: one
thread hop less per message. Measured here with a producer's 15 KiB batch, one at a time: a bare echo between two
processes carried 21-30% more unary calls and 60-77% more stream messages on it, and a 3+3 cluster produced 31% more
with acks=all and 22% more with acks=1 (medians of four rounds). Small messages with many in flight, bound by
Python's CPU, were the same either way. The benchmarks' echo runs on the same engine as the cluster.

grpc reads GRPC_EXPERIMENTS once, when it is imported, so this must run first: `import minikafka` does it (every
`minikafka` command and every node it starts), as do the benchmarks and the tests. A GRPC_EXPERIMENTS already set
is left as it is. A grpcio that no longer has these experiments logs "Unknown experiment" once and uses its default.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

CLASSIC_IO_EXPERIMENTS = "-event_engine_client,-event_engine_listener"


def use_classic_io(environ: MutableMapping[str, str] = os.environ) -> None:
    environ.setdefault("GRPC_EXPERIMENTS", CLASSIC_IO_EXPERIMENTS)

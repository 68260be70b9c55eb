"""The `minikafka` entry point: it only gathers the commands each package defines. Importing it sets gRPC's I/O
engine for the process before anything imports grpc (`common/grpc_engine.py`)."""

from common.grpc_engine import use_classic_io

use_classic_io()

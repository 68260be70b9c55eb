"""The `minikafka` entry point: it only gathers the commands each package defines. Importing it sets the environment
gRPC core reads for the process before anything imports grpc (`common/grpc_environment.py`)."""

from minikafka.common.grpc_environment import configure_grpc_environment

configure_grpc_environment()

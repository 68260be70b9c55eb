"""SASL on the gRPC client API (a GRPC_SASL_SSL listener): the SASL exchange of the Kafka listener run on one
stream, a session token for the calls that follow, and the interceptor that refuses calls without one."""

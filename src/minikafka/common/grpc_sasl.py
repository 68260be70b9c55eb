"""What the two ends of SASL on the gRPC client API (a GRPC_SASL_SSL listener) agree on."""

from __future__ import annotations

SESSION_METADATA_KEY = "minikafka-sasl-session"  # the session token every call carries; gRPC keys are lower case
SASL_AUTHENTICATE_METHOD = "/minikafka.Broker/SaslAuthenticate"

#!/usr/bin/env bash
# Runs docker-compose.yml for real where a container engine exists (docker or podman; CI has none): builds the
# image, starts the 3+3 cluster, uses it from the host, kills a broker through `minikafka fault --compose`, copies
# the logs and data out in the layout `minikafka analyze` reads, and tears everything down (volumes included).
# Needs the CLI on the host (`make venv`, then this script uses .venv/bin/minikafka). Usage: deploy/compose-smoke.sh [RUN]
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINE="${MINIKAFKA_CONTAINER_ENGINE:-$(command -v docker >/dev/null && echo docker || echo podman)}"
command -v "$ENGINE" >/dev/null || { echo "compose-smoke: neither docker nor podman is installed" >&2; exit 1; }
COMPOSE=("$ENGINE" compose -f docker-compose.yml)
MINIKAFKA="${MINIKAFKA:-.venv/bin/minikafka}"
RUN="${1:-runs/compose-$(date +%Y%m%d-%H%M%S)}"
export MINIKAFKA_COMPOSE_FILE=docker-compose.yml MINIKAFKA_CONTAINER_ENGINE="$ENGINE"
CONTROLLERS=localhost:19101,localhost:19102,localhost:19103
BROKERS=localhost:19091,localhost:19092,localhost:19093

trap '"${COMPOSE[@]}" down -v >/dev/null 2>&1 || true' EXIT
"${COMPOSE[@]}" up -d --build --wait
# The controllers' listener is mutual TLS: the admin certificate from the certs volume, in a client properties file.
mkdir -p "$RUN/history"
"${COMPOSE[@]}" cp certs:/var/lib/minikafka/certs "$RUN/certs"
printf 'security.protocol=SSL\nssl.ca.location=%s\nssl.certificate.location=%s\nssl.key.location=%s\n' \
  "$RUN/certs/ca.pem" "$RUN/certs/admin.pem" "$RUN/certs/admin.key" > "$RUN/admin-client.properties"
ADMIN=(--command-config "$RUN/admin-client.properties")
"$MINIKAFKA" quorum describe --bootstrap-controller "$CONTROLLERS" "${ADMIN[@]}"
"$MINIKAFKA" topics create smoke --partitions 3 --replication-factor 3 --bootstrap-controller "$CONTROLLERS" "${ADMIN[@]}"
if command -v kcat >/dev/null; then kcat -b localhost:29091 -L -m 30 | grep -q "topic \"smoke\""; fi  # the Kafka listener
"$MINIKAFKA" produce smoke --num-records 2000 --history "$RUN/history/produce-smoke.jsonl" --bootstrap-server "$BROKERS"
"$MINIKAFKA" fault kill 1 --dir "$RUN"
"$MINIKAFKA" produce smoke --num-records 2000 --history "$RUN/history/produce-smoke.jsonl" --bootstrap-server "$BROKERS"
"$MINIKAFKA" fault start 1 --dir "$RUN"
"$MINIKAFKA" consume smoke --from-beginning --json --timeout-ms 5000 --bootstrap-server "$BROKERS" \
  > "$RUN/history/consume-smoke.jsonl"
"${COMPOSE[@]}" stop
# The layout analyze reads: RUN/logs/<node>.jsonl (+ faults.jsonl), RUN/history/, RUN/broker-N/data/.
"${COMPOSE[@]}" cp broker-1:/var/lib/minikafka/logs/. "$RUN/logs/"
for n in 1 2 3; do
  mkdir -p "$RUN/broker-$n"
  "${COMPOSE[@]}" cp "broker-$n:/var/lib/minikafka/data" "$RUN/broker-$n/data"
done
echo "compose-smoke: run copied to $RUN; analyze it with: $MINIKAFKA analyze $RUN"

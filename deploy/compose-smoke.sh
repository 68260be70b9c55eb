#!/usr/bin/env bash
# Runs docker-compose.yml for real where a container engine exists (docker or podman; CI has none): builds the
# image, starts the 3+3 cluster, uses it from the host, kills a broker through `minikafka fault --compose`, copies
# the logs and data out in the layout `minikafka analyze` reads, and tears everything down (volumes included).
# Needs the CLI on the host (`make venv`, then this script uses .venv/bin/minikafka). Usage: deploy/compose-smoke.sh [RUN]
# The engine: MINIKAFKA_CONTAINER_ENGINE, else docker if its daemon answers, else podman. The compose tool: the
# engine's `compose` subcommand where it works, else docker-compose or podman-compose (1.0.3 has no --wait and no
# cp: the script then starts the services in order, runs the healthchecks itself and copies with the engine's cp).
# MINIKAFKA_BUILD_NETWORK=host builds the image on the host's network (where the engine's own cannot reach PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
PROJECT_DIR="$(pwd -P)"
MINIKAFKA="${MINIKAFKA:-.venv/bin/minikafka}"
RUN="${1:-runs/compose-$(date +%Y%m%d-%H%M%S)}"
SERVICES=(controller-101 controller-102 controller-103 broker-1 broker-2 broker-3)
HEALTH_DEADLINE_S=240

say() { echo "compose-smoke: $*" >&2; }
answers() { command -v "$1" >/dev/null && "$1" info >/dev/null 2>&1; }
if [[ -n "${MINIKAFKA_CONTAINER_ENGINE:-}" ]]; then ENGINE="$MINIKAFKA_CONTAINER_ENGINE"
elif answers docker; then ENGINE=docker
elif answers podman; then ENGINE=podman
else
  say "no container engine answers: docker needs its daemon running (docker info), or install podman"; exit 1
fi
if "$ENGINE" compose version >/dev/null 2>&1; then COMPOSE=("$ENGINE" compose -f docker-compose.yml)
elif command -v "$ENGINE-compose" >/dev/null; then COMPOSE=("$ENGINE-compose" -f docker-compose.yml)
else
  say "$ENGINE has no compose tool: install the compose plugin (docker) or podman-compose"; exit 1
fi
# `up --wait` (Compose v2) waits for every healthcheck; other tools get the start-up done by hand below.
WAIT=false; "${COMPOSE[@]}" up --help 2>&1 | grep -q -- '--wait' && WAIT=true
say "engine $ENGINE, compose tool: ${COMPOSE[*]:0:${#COMPOSE[@]}-2}, up --wait: $WAIT"
export MINIKAFKA_COMPOSE_FILE=docker-compose.yml MINIKAFKA_CONTAINER_ENGINE="$ENGINE"
CONTROLLERS=localhost:19101,localhost:19102,localhost:19103
BROKERS=localhost:19091,localhost:19092,localhost:19093

# A service's container, by the labels both compose tools set (service, and this directory as the project's).
container() {
  "$ENGINE" ps -a --filter "label=com.docker.compose.service=$1" \
    --filter "label=com.docker.compose.project.working_dir=$PROJECT_DIR" --format '{{.Names}}' | head -n 1
}
# Copies a directory's contents out of a service's container (its /. replaces an older copy instead of nesting).
copy_out() { mkdir -p "$3" && "$ENGINE" cp "$(container "$1"):$2/." "$3/"; }
# podman with no systemd runs no healthcheck on its own: it runs each one here; docker's daemon runs them.
healthy() {
  if [[ "$ENGINE" == podman ]]; then "$ENGINE" healthcheck run "$(container "$1")" >/dev/null 2>&1
  else [[ "$("$ENGINE" inspect -f '{{.State.Health.Status}}' "$(container "$1")")" == healthy ]]; fi
}
wait_healthy() {
  local deadline=$((SECONDS + HEALTH_DEADLINE_S)) service
  for service in "$@"; do
    until healthy "$service"; do
      ((SECONDS < deadline)) || { say "$service not healthy within ${HEALTH_DEADLINE_S}s"; return 1; }
      sleep 2
    done
    say "$service healthy"
  done
}

# podman-compose 1.0.3's down leaves the project's network behind: remove it by the project's label.
teardown() {
  "${COMPOSE[@]}" down -v >/dev/null 2>&1 || true
  [[ -z "${PROJECT:-}" ]] || "$ENGINE" network ls -q --filter "label=com.docker.compose.project=$PROJECT" |
    xargs -r "$ENGINE" network rm >/dev/null 2>&1 || true
}
trap teardown EXIT
"$ENGINE" build ${MINIKAFKA_BUILD_NETWORK:+--network "$MINIKAFKA_BUILD_NETWORK"} -f deploy/Dockerfile \
  -t minikafka:latest .
started=$SECONDS
if $WAIT; then
  "${COMPOSE[@]}" up -d --no-build --wait
else  # the order depends_on gives, which podman-compose 1.0.3 does not wait for (its `up` of a service also runs
  # the services it depends on again: "name already in use" from podman, then it starts the existing container)
  "${COMPOSE[@]}" up -d --no-build certs
  [[ "$("$ENGINE" wait "$(container certs)")" == 0 ]] || { say "the certs service failed"; exit 1; }
  "${COMPOSE[@]}" up -d --no-build "${SERVICES[@]:0:3}"
  wait_healthy "${SERVICES[@]:0:3}"
  "${COMPOSE[@]}" up -d --no-build "${SERVICES[@]:3}"
  wait_healthy "${SERVICES[@]:3}"
fi
say "all services healthy after $((SECONDS - started)) s"
PROJECT="$("$ENGINE" inspect -f '{{index .Config.Labels "com.docker.compose.project"}}' "$(container certs)")"
# The controllers' listener is mutual TLS: the admin certificate from the certs volume, in a client properties file.
mkdir -p "$RUN/history"
copy_out certs /var/lib/minikafka/certs "$RUN/certs"
[[ ! -e "$RUN/certs/ca.key" ]] || { say "the CA's key is in the certs volume"; exit 1; }
printf 'security.protocol=SSL\nssl.ca.location=%s\nssl.certificate.location=%s\nssl.key.location=%s\n' \
  "$RUN/certs/ca.pem" "$RUN/certs/admin.pem" "$RUN/certs/admin.key" > "$RUN/admin-client.properties"
ADMIN=(--command-config "$RUN/admin-client.properties")
"$MINIKAFKA" quorum describe --bootstrap-controller "$CONTROLLERS" "${ADMIN[@]}"
# Healthy brokers are registered and unfenced: replication factor 3 is there at once.
"$MINIKAFKA" topics create smoke --partitions 3 --replication-factor 3 --bootstrap-controller "$CONTROLLERS" "${ADMIN[@]}"
if command -v kcat >/dev/null; then kcat -b localhost:29091 -L -m 30 | grep -q "topic \"smoke\""; fi  # the Kafka listener
"$MINIKAFKA" produce smoke --num-records 2000 --history "$RUN/history/produce-smoke.jsonl" --bootstrap-server "$BROKERS"
"$MINIKAFKA" fault kill 1 --dir "$RUN"
"$MINIKAFKA" produce smoke --num-records 2000 --history "$RUN/history/produce-smoke.jsonl" --bootstrap-server "$BROKERS"
"$MINIKAFKA" fault start 1 --dir "$RUN"
"$MINIKAFKA" consume smoke --from-beginning --json --timeout-ms 5000 --bootstrap-server "$BROKERS" \
  > "$RUN/history/consume-smoke.jsonl"
say "consumed $(grep -vc read_end "$RUN/history/consume-smoke.jsonl") records"
"${COMPOSE[@]}" stop
# The layout analyze reads: RUN/logs/<node>.jsonl (+ faults.jsonl), RUN/history/, RUN/broker-N/data/.
copy_out broker-1 /var/lib/minikafka/logs "$RUN/logs"
for n in 1 2 3; do
  copy_out "broker-$n" /var/lib/minikafka/data "$RUN/broker-$n/data"
done
say "run copied to $RUN; analyze it with: $MINIKAFKA analyze $RUN"

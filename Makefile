# Two commands set everything up: `make demo` and `make test` (both create .venv when missing).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PROTOS := $(wildcard proto/minikafka/pb/*.proto)
PYTEST_ARGS ?=
# Three workers on CI's two cores, a test file each at a time (a module's tests share its cluster): the real-process
# tests mostly wait on their clusters (fences, timeouts, a chaos run's fixed length) while the Spark and simulator
# tests keep a core busy. Two workers took 1,445-1,555 s on a quiet machine; three took 1,420 s beside other work.
# The heaviest modules go first (tests/conftest.py), so xdist's own order (most tests first) is turned off.
PYTEST_WORKERS ?= 3

.PHONY: venv bytecode test demo lint format proto clean system-tools raft-reconfiguration-soak

# The C record walk is built by the install, so editing it installs again.
$(STAMP): pyproject.toml setup.py $(wildcard src/minikafka/*/*.c)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,analysis]"
	touch $(STAMP)

venv: $(STAMP)

# Tools some tests use beyond Python: nft (kernel-mode network cuts) and kcat (the Kafka listener's tests).
# Installed when missing and running as root with apt-get; otherwise those tests skip and say why.
SYSTEM_TOOLS := nft:nftables kcat:kcat
system-tools:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; for pair in $(SYSTEM_TOOLS); do command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; done; \
	  if [ -n "$$missing" ]; then \
	    apt-get install -y -q $$missing >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -q $$missing >/dev/null 2>&1; } || \
	    echo "could not install$$missing: the tests that need them will skip" >&2; \
	  fi; \
	fi

# Where the environment stops Python from writing bytecode (PYTHONDONTWRITEBYTECODE, as on this machine), every node
# process would compile each module it imports again: a node's imports took 1.05 CPU s uncompiled, 0.77 compiled.
# compileall writes it whatever that setting says, and only for the files changed since.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q src

test: $(STAMP) system-tools bytecode
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25 $(PYTEST_ARGS)

demo: $(STAMP) bytecode
	$(BIN)/minikafka demo

# The KRaft simulation with KIP-853 reconfigurations and disk loss over 1,000 seeds (`make test` runs 60 of them).
raft-reconfiguration-soak: $(STAMP)
	MINIKAFKA_RAFT_RECONFIGURATION_SEEDS=1000 $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) \
	  tests/sim/raft/test_raft_simulation.py -k test_raft_schedule_with_reconfiguration_and_disk_loss

# Ruff over everything, then mypy over src/ (configured in pyproject.toml: [tool.mypy]).
lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks

# Regenerate the committed protobuf/gRPC modules; tests/unit/test_proto_up_to_date.py fails when they are stale.
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -Iproto --python_out=src --pyi_out=src --grpc_python_out=src $(PROTOS)

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis

# Two commands set everything up: `make demo` and `make test` (both create .venv when missing).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PROTOS := $(wildcard proto/minikafka_pb/*.proto)
PYTEST_ARGS ?=

.PHONY: venv test demo lint format proto clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,analysis]"
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

demo: $(STAMP)
	$(BIN)/minikafka demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

format: $(STAMP)
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks

# Regenerate the committed protobuf/gRPC modules; tests/unit/test_proto_up_to_date.py fails when they are stale.
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -Iproto --python_out=src --pyi_out=src --grpc_python_out=src $(PROTOS)

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis

"""`evolve` copies a frozen dataclass with changes, as `dataclasses.replace` does, for the values it is used on."""

from __future__ import annotations

import dataclasses
import inspect
from types import ModuleType

import pytest

from minikafka.broker.replica import partition, replica_state
from minikafka.common.evolve import evolve
from minikafka.kraft_controller.raft import core

USERS = (partition, replica_state, core)  # the modules that evolve their state values


def test_evolve_equals_replace_and_leaves_the_original() -> None:
    state = replica_state.ReplicaState(2, log_end_offset=5, last_fetch_ms=10)
    changed = evolve(state, log_end_offset=9)
    assert changed == dataclasses.replace(state, log_end_offset=9)
    assert hash(changed) == hash(dataclasses.replace(state, log_end_offset=9))
    assert state.log_end_offset == 5 and type(changed) is replica_state.ReplicaState
    with pytest.raises(dataclasses.FrozenInstanceError):
        changed.log_end_offset = 1  # type: ignore[misc]


def test_an_unknown_field_is_refused() -> None:
    with pytest.raises(TypeError, match="no field"):
        evolve(replica_state.ReplicaState(2), log_end_ofset=9)


@pytest.mark.parametrize("module", USERS, ids=lambda m: m.__name__)
def test_every_dataclass_of_its_users_is_one_evolve_can_copy(module: ModuleType) -> None:
    """No __post_init__ to skip, no init=False field, no slots: evolve copies __dict__ and runs no __init__."""
    classes = [c for _, c in inspect.getmembers(module, inspect.isclass) if dataclasses.is_dataclass(c)]
    assert classes
    for cls in classes:
        if cls.__module__ != module.__name__:
            continue
        assert cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]
        assert not hasattr(cls, "__post_init__") and "__slots__" not in vars(cls), cls
        assert all(f.init for f in dataclasses.fields(cls)), cls

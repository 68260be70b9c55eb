"""Finding scenarios: the built-in ones (library/) by NAME, or a user's own module by its path."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from minikafka.deploy.scenario import library
from minikafka.deploy.scenario.model import Guard, Topology

REQUIRED = {"NAME": str, "TITLE": str, "GUARD": Guard, "TOPOLOGY": Topology}


class ScenarioError(Exception):
    """A scenario that cannot be found or loaded; the message says which and why, in one line."""


@dataclass(frozen=True)
class ScenarioModule:
    name: str
    title: str
    guard: Guard
    topology: Topology
    module: ModuleType
    source: str  # the file it was loaded from

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "guard": {"key": self.guard.key, "on": self.guard.on, "off": self.guard.off,
                      "protects": self.guard.protects, "without": self.guard.without},
            "brokers": self.topology.brokers,
            "controllers": self.topology.controllers,
            "source": self.source,
        }  # fmt: skip


def checked(module: ModuleType, source: str) -> ScenarioModule:
    for attribute, kind in REQUIRED.items():
        if not isinstance(getattr(module, attribute, None), kind):
            raise ScenarioError(f"{source}: a scenario module needs {attribute} (a {kind.__name__})")
    if not callable(getattr(module, "run", None)):
        raise ScenarioError(f"{source}: a scenario module needs run(s: Steps)")
    return ScenarioModule(module.NAME, module.TITLE, module.GUARD, module.TOPOLOGY, module, source)


def builtin() -> list[ScenarioModule]:
    modules = []
    for info in sorted(pkgutil.iter_modules(library.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{library.__name__}.{info.name}")
        modules.append(checked(module, str(module.__file__)))
    return modules


def load(name_or_path: str) -> ScenarioModule:
    """A built-in scenario by name, else a `.py` file."""
    for scenario in builtin():
        if scenario.name == name_or_path:
            return scenario
    path = Path(name_or_path)
    if path.suffix != ".py":
        names = ", ".join(s.name for s in builtin())
        raise ScenarioError(f"no scenario named '{name_or_path}' (built in: {names}; or give a path to a .py file)")
    if not path.is_file():
        raise ScenarioError(f"no such scenario file: {path}")
    spec = importlib.util.spec_from_file_location(f"minikafka_user_scenario_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001 - a user's file: say what is wrong with it in one line
        raise ScenarioError(f"{path}: cannot load it: {type(error).__name__}: {error}") from None
    return checked(module, str(path.resolve()))

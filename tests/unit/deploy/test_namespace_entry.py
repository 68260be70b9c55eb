"""A command against a run in a network namespace moves into it in place (setns) instead of starting Python again
there, and falls back to running again there when it cannot (a second thread already running)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from minikafka.deploy.network import may_create_namespaces

pytestmark = pytest.mark.skipif(not may_create_namespaces(), reason="needs root and ip/nft to create a namespace")

PROBE = """
import subprocess, sys, threading
from minikafka.deploy.network import enter_namespace, inside
name = sys.argv[1]
if sys.argv[2] == "busy":
    threading.Thread(target=threading.Event().wait, daemon=True).start()
entered = enter_namespace(name)
links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout.splitlines()
print(entered, inside(name), len(links))
"""


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"mk-entry-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def probe(name: str, mode: str) -> list[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, name, mode], capture_output=True, text=True, check=True
    ).stdout.split()


def test_a_single_threaded_process_moves_into_the_namespace_and_its_children_follow(namespace: str) -> None:
    entered, now_inside, links = probe(namespace, "alone")
    assert (entered, now_inside, links) == ("True", "True", "1")  # the namespace's own loopback only


def test_a_process_already_running_threads_stays_where_it_is(namespace: str) -> None:
    entered, now_inside, _ = probe(namespace, "busy")
    assert (entered, now_inside) == ("False", "False")

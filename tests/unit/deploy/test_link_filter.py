"""The in-process link filter: a node's calls to a cut peer hang until their deadline or the heal."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import grpc
import pytest

from minikafka.common.grpc_support import LinkFilter


def write(path: Path, active: list[dict]) -> None:
    path.write_text(json.dumps({"nodes": {"127.0.1.1:9000": 101}, "active": active}))
    stamp = path.stat().st_mtime_ns + 1_000_000  # a new mtime even within the filesystem's clock granularity
    os.utime(path, ns=(stamp, stamp))


def test_the_filter_follows_the_file_and_the_direction(tmp_path: Path) -> None:
    path = tmp_path / "cuts.json"
    link = LinkFilter(path, 1, "127.0.1.1:9000", recheck_s=0)
    assert not link.is_cut()  # no file: no cut
    write(path, [{"from": [1], "to": [101], "one_way": True}])
    assert link.is_cut()
    assert not LinkFilter(path, 2, "127.0.1.1:9000", recheck_s=0).is_cut()
    assert not LinkFilter(path, 1, "127.0.9.9:1", recheck_s=0).is_cut()  # not a node of the run: a client's address
    write(path, [{"from": [101], "to": [1], "one_way": True}])
    assert not link.is_cut()  # only the calls 101 makes to 1 are cut
    write(path, [{"from": [101], "to": [1], "one_way": False}])
    assert link.is_cut()
    write(path, [])
    assert not link.is_cut()


def test_a_cut_call_waits_for_its_deadline_or_the_heal(tmp_path: Path) -> None:
    path = tmp_path / "cuts.json"
    write(path, [{"from": [1], "to": [101], "one_way": False}])
    link = LinkFilter(path, 1, "127.0.1.1:9000", recheck_s=0)

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await link.wait_open(loop.time() + 0.2)
        assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        waiting = asyncio.create_task(link.wait_open(None))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        write(path, [])
        await asyncio.wait_for(waiting, 5)

    asyncio.run(scenario())

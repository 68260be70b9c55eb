"""Closing a fetcher's peer channels with nothing left to close needs no event loop: the garbage collector closes
an unfinished fetcher's coroutine after its loop has ended, and its `finally` closes the channels."""

from __future__ import annotations

import asyncio

import pytest

from minikafka.common.grpc_support import PeerChannels


def test_closing_no_channels_runs_without_an_event_loop() -> None:
    asyncio.run(asyncio.sleep(0))  # a loop ran and ended: this thread has no current loop now
    closing = PeerChannels(None).close()
    with pytest.raises(StopIteration):  # ran to its end at once, outside any loop
        closing.send(None)

"""Byte streams over the simulated network (a broker's Kafka listener and the Kafka wire client): bytes arrive in
order and delayed, are held while the link is cut, a close reaches the peer as EOF after what was written, a
crashed node's connections are reset and nothing listens where it listened."""

from __future__ import annotations

import asyncio
import random

import pytest
from test_network import as_node

from minikafka.sim.network import SimNetwork
from minikafka.sim.virtual_loop import run_virtual

ADDRESS = "127.0.2.1:9094"
SERVER, CLIENT = 1, 1000


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers each line with itself in capitals, until EOF."""
    while line := await reader.readline():
        writer.write(line.upper())
        await writer.drain()
    writer.close()


async def listening(network: SimNetwork) -> None:
    async def listen() -> None:
        network.listen(SERVER, "127.0.2.1", 9094, echo)

    await as_node(network, SERVER, listen)


def test_lines_come_back_in_order_and_a_close_reaches_the_peer_as_eof() -> None:
    async def main() -> tuple[list[bytes], bytes, float]:
        network = SimNetwork(random.Random(1))
        await listening(network)
        reader, writer = await network.open_stream(CLIENT, ADDRESS)
        loop = asyncio.get_running_loop()
        started = loop.time()
        for index in range(20):
            writer.write(f"line {index}\n".encode())
        answers = [await reader.readline() for _ in range(20)]
        elapsed = loop.time() - started
        writer.close()
        return answers, await reader.read(), elapsed

    answers, rest, elapsed = run_virtual(main())
    assert answers == [f"LINE {index}\n".encode() for index in range(20)]
    assert rest == b""  # the server closed after our EOF
    assert elapsed > 0  # every chunk took its network delay


def test_a_cut_link_holds_the_bytes_until_it_heals() -> None:
    async def main() -> tuple[bool, bytes]:
        network = SimNetwork(random.Random(2))
        await listening(network)
        reader, writer = await network.open_stream(CLIENT, ADDRESS)
        network.partition([CLIENT], [SERVER])
        writer.write(b"held\n")
        try:
            await asyncio.wait_for(reader.readline(), 5)
            answered_while_cut = True
        except TimeoutError:
            answered_while_cut = False
        network.heal()
        return answered_while_cut, await asyncio.wait_for(reader.readline(), 5)

    answered_while_cut, answer = run_virtual(main())
    assert not answered_while_cut
    assert answer == b"HELD\n"


def test_a_crashed_node_resets_its_connections_and_refuses_new_ones() -> None:
    async def main() -> tuple[type[BaseException], type[BaseException]]:
        network = SimNetwork(random.Random(3))
        await listening(network)
        reader, writer = await network.open_stream(CLIENT, ADDRESS)
        writer.write(b"one\n")
        await reader.readline()
        network.crashed(SERVER)
        with pytest.raises(ConnectionResetError) as reset:
            await reader.readline()
        with pytest.raises(ConnectionRefusedError) as refused:
            await network.open_stream(CLIENT, ADDRESS)
        return reset.type, refused.type

    assert run_virtual(main()) == (ConnectionResetError, ConnectionRefusedError)

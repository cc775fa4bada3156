"""The etcd client waits for a slow login (etcd's bcrypt under load) longer than for a lease call."""

from __future__ import annotations

import asyncio
import json

import pytest

from halfmq.broker.cluster.etcd import EtcdClient, EtcdCredentials, EtcdUnavailable


async def _slow_etcd(delay: float) -> tuple[asyncio.Server, int]:
    """An HTTP server that answers every call after ``delay`` s: a token for a login, a revision for anything else."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
        await reader.readexactly(length)
        await asyncio.sleep(delay)
        body = json.dumps({"token": "t"} if b"/v3/auth/authenticate" in head else {"header": {"revision": "7"}}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_a_login_slower_than_the_call_timeout_still_succeeds_while_a_slow_call_does_not() -> None:
    server, port = await _slow_etcd(0.8)
    client = EtcdClient(f"http://127.0.0.1:{port}", timeout=0.3, credentials=EtcdCredentials("halfmq", "secret"))
    try:
        assert await client.authenticate(EtcdCredentials("halfmq", "secret")) == "t"
        with pytest.raises(EtcdUnavailable):
            await client.put("k", "v")
    finally:
        await client.aclose()
        server.close()

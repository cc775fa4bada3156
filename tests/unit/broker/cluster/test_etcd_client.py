"""The etcd client waits for a slow login (etcd's bcrypt under load) longer than for a lease call."""

from __future__ import annotations

import asyncio
import json

import pytest

from halfmq.broker.cluster.etcd import EtcdClient, EtcdCredentials, EtcdUnavailable

LOGIN = b"/v3/auth/authenticate"


class SlowEtcd:
    """An HTTP server standing in for etcd: a login is answered (a token) once ``logins_answer`` is set, a call never.

    ``login_asked`` is set when a login arrives, so a test knows the login waits before it lets time pass elsewhere.
    """

    def __init__(self) -> None:
        self.login_asked = asyncio.Event()
        self.logins_answer = asyncio.Event()

    async def answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
        await reader.readexactly(length)
        if LOGIN not in head:
            await reader.read()  # held until the client gives up and hangs up
            writer.close()
            return
        self.login_asked.set()
        await self.logins_answer.wait()
        body = json.dumps({"token": "t"}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()


async def test_a_login_slower_than_the_call_timeout_still_succeeds_while_a_slow_call_does_not() -> None:
    etcd = SlowEtcd()
    server = await asyncio.start_server(etcd.answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    client = EtcdClient(url, timeout=0.3, credentials=EtcdCredentials("halfmq", "secret"))
    witness = EtcdClient(url, timeout=0.3)  # no credentials: its call goes straight to the held answer
    try:
        login = asyncio.ensure_future(client.authenticate(EtcdCredentials("halfmq", "secret")))
        await asyncio.wait_for(etcd.login_asked.wait(), 10)  # a hang guard, not a measurement
        with pytest.raises(EtcdUnavailable):
            await witness.put("k", "v")  # a whole call timeout passes while the login waits
        assert not login.done()
        etcd.logins_answer.set()
        assert await login == "t"
        with pytest.raises(EtcdUnavailable):
            await client.put("k", "v")
    finally:
        await client.aclose()
        await witness.aclose()
        server.close()

"""The client a node calls its peers with, on aiohttp: kept-alive HTTP/1.1, answers whole, the cluster's own errors.

The peer is a local asyncio server that answers what the test says.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from halfmq.broker.cluster.peers import PeerClient, PeerDisconnected, PeerNotTrusted, PeerTimeout, PeerUnreachable
from halfmq.broker.config import BrokerSettings
from tests.support.loop_steps import until
from tests.support.tls import TlsFiles, make_ca_and_server_cert

Answer = Callable[[bytes], bytes | None]  # the request head -> what to write (None: write nothing and close)


class Peer:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.ended = 0  # connections whose socket is closed and whose serving is over
        self.heads: list[bytes] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                self.heads.append(head)
                out = self.answer(head)
                if out is None:
                    break
                writer.write(out)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self.ended += 1


@pytest.fixture
async def peer() -> AsyncIterator[tuple[Peer, str]]:
    state = Peer(lambda head: b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-halfmq-term: 4\r\n\r\nhello")
    server = await asyncio.start_server(state.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield state, f"http://127.0.0.1:{port}"
    finally:
        server.close()


def _client(url: str, **kwargs: float) -> PeerClient:
    return PeerClient({"n1": url}, "s3cret", **kwargs)


async def test_answers_with_a_length_or_chunked_come_back_whole_over_one_kept_alive_connection(peer: tuple[Peer, str]) -> None:
    state, url = peer
    async with _client(url) as client:
        first = await client.post(f"{url}/v1/replication/fetch", json={"from_offset": 0})
        assert (first.status_code, first.content, first.headers["x-halfmq-term"]) == (200, b"hello", "4")
        state.answer = lambda head: b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
        chunked = await client.post(f"{url}/v1/replication/ack", json={"durable_offset": 9})
        assert chunked.content == b"abcde"
    assert state.connections == 1
    head = state.heads[0].lower()
    assert b"authorization: bearer s3cret" in head and b"accept-encoding: identity" in head and b"cookie" not in head


async def test_a_call_on_behalf_of_a_client_carries_its_token_or_none_never_the_clusters(peer: tuple[Peer, str]) -> None:
    state, url = peer
    async with _client(url) as client:
        await client.post_as(f"{url}/v1/producer-ids", {}, "clients-token")
        await client.post_as(f"{url}/v1/producer-ids", {}, None)
    with_token, without = (h.lower() for h in state.heads)
    assert b"authorization: bearer clients-token" in with_token and b"s3cret" not in with_token
    assert b"authorization" not in without and b"s3cret" not in without


async def test_a_kept_alive_connection_the_peer_closed_while_idle_is_replaced_without_an_error(peer: tuple[Peer, str]) -> None:
    state, url = peer
    async with _client(url) as client:
        await client.get(f"{url}/healthz")
        for writer in state.writers:
            writer.close()
        await until(lambda: state.ended == state.connections)
        assert (await client.get(f"{url}/healthz")).content == b"hello"
    assert state.connections == 2


async def test_a_refused_connect_is_an_unreachable_peer_that_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nobody listens
    url = f"http://127.0.0.1:{port}"
    async with _client(url) as client:
        with pytest.raises(PeerUnreachable) as caught:
            await client.get(f"{url}/healthz")
    assert caught.value.refused


async def test_a_peer_that_does_not_answer_in_time_is_a_timeout(peer: tuple[Peer, str]) -> None:
    state, url = peer
    state.answer = lambda head: b""  # reads the request, never answers
    async with _client(url, read_seconds=0.1) as client:
        with pytest.raises(PeerTimeout):
            await client.post(f"{url}/v1/replication/fetch", json={})


async def test_a_peer_that_closes_mid_answer_is_a_disconnection(peer: tuple[Peer, str]) -> None:
    state, url = peer
    state.answer = lambda head: None
    async with _client(url) as client:
        with pytest.raises(PeerDisconnected):
            await client.post(f"{url}/v1/replication/fetch", json={})
    assert state.connections == 2  # tried once more on a new connection, as a connection closed while idle is


async def test_a_redirect_is_answered_as_it_is_never_followed(peer: tuple[Peer, str]) -> None:
    state, url = peer
    state.answer = lambda head: b"HTTP/1.1 302 Found\r\nlocation: /elsewhere\r\ncontent-length: 0\r\n\r\n"
    async with _client(url) as client:
        answer = await client.get(f"{url}/v1/replication/term-end")
    assert answer.status_code == 302 and len(state.heads) == 1


@pytest.fixture(scope="module")
def set_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[TlsFiles, TlsFiles]:
    """The set's CA with the members' certificate, and another CA that signed nothing of theirs."""
    return make_ca_and_server_cert(tmp_path_factory.mktemp("set-ca")), make_ca_and_server_cert(tmp_path_factory.mktemp("other-ca"))


@pytest.fixture
async def tls_peer(set_ca: tuple[TlsFiles, TlsFiles]) -> AsyncIterator[tuple[Peer, str]]:
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(set_ca[0].cert, set_ca[0].key)
    state = Peer(lambda head: b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
    server = await asyncio.start_server(state.serve, "127.0.0.1", 0, ssl=served)  # (it serves a connection once its handshake is done)
    try:
        yield state, f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_a_members_https_url_is_verified_with_the_peer_ca_file(tls_peer: tuple[Peer, str], set_ca: tuple[TlsFiles, TlsFiles]) -> None:
    state, url = tls_peer
    async with PeerClient({"n1": url}, "s3cret", ca_file=set_ca[0].ca) as client:
        assert (await client.get(f"{url}/healthz")).content == b"ok"
    assert b"authorization: bearer s3cret" in state.heads[0].lower()


@pytest.mark.parametrize("trusting", ["another CA", "the system's CAs"])
async def test_a_member_whose_certificate_is_not_trusted_is_not_called_nor_streamed_to(
        tls_peer: tuple[Peer, str], set_ca: tuple[TlsFiles, TlsFiles], trusting: str) -> None:
    state, url = tls_peer
    async with PeerClient({"n1": url}, "s3cret", ca_file=set_ca[1].ca if trusting == "another CA" else None) as client:
        with pytest.raises(PeerNotTrusted, match=r"https://127\.0\.0\.1:\d+: its certificate is not trusted .*HALFMQ_BROKER_PEER_CA_FILE"):
            await client.get(f"{url}/healthz")
        with pytest.raises(PeerNotTrusted) as streamed:
            await client.stream(f"{url}/v1/replication/stream", b"hello")
    assert not streamed.value.refused  # a setting to fix: not the refusal of a dead leader's address
    assert state.connections == 0 and state.heads == []  # not a byte of a request, token included


def test_a_peer_ca_file_that_is_not_a_ca_bundle_refuses_the_settings(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    for path in (tmp_path / "ca.pem", tmp_path / "missing.pem"):
        with pytest.raises(ValidationError, match="peer_ca_file .* is not a readable PEM CA bundle"):
            BrokerSettings(peer_ca_file=path)

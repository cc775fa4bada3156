"""The broker's HTTP limits on both servers: request bodies, request heads, idle and slow connections.

Each test starts a real broker with small limits and talks to it over plain
sockets where a well-behaved client (httpx) would not misbehave on purpose:
half-sent heads, trickled headers, bodies that never end.
"""

from __future__ import annotations

import json
import resource
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import h11
import httpx
import pytest

from tests.integration.broker.api.support import assert_problem, stores_nothing
from tests.support.processes import BrokerProcess

SERVERS = ("granian", "uvicorn")
MAX_REQUEST_BYTES = 1024 * 1024
HEAD_TIMEOUT = 3.0
BODY_TIMEOUT = 3.0
MAX_HEAD_BYTES = 16 * 1024


def limited_broker(server: str, tmp_path: Path, **env: str) -> BrokerProcess:
    return BrokerProcess(tmp_path / "data", tmp_path, {
        "HALFMQ_BROKER_HTTP_SERVER": server,
        "HALFMQ_BROKER_MAX_REQUEST_BYTES": str(MAX_REQUEST_BYTES),
        "HALFMQ_BROKER_REQUEST_HEAD_TIMEOUT": str(HEAD_TIMEOUT),
        "HALFMQ_BROKER_MAX_REQUEST_HEAD_BYTES": str(MAX_HEAD_BYTES),
        "HALFMQ_BROKER_REQUEST_BODY_TIMEOUT": str(BODY_TIMEOUT),
        **env,
    })


@pytest.fixture(params=SERVERS)
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = limited_broker(request.param, tmp_path)
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        yield c


def connect(broker: BrokerProcess, timeout: float = 10.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", broker.port), timeout=timeout)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def read_response(sock: socket.socket) -> Answer | None:
    """The response on ``sock``, or None if the server closed it without answering."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("host", "localhost")]))  # h11 wants a request before a response
    response, body = None, b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data and response is None:
                return None
            conn.receive_data(data)
        elif isinstance(event, h11.Response):
            response = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            assert response is not None
            return Answer(response.status_code, {k.decode(): v.decode() for k, v in response.headers}, body)


def assert_request_too_large(answer: Answer | None) -> None:
    assert answer is not None, "the broker closed the connection without answering"
    assert answer.status == 413, answer.body
    assert answer.headers["content-type"] == "application/problem+json"
    problem = json.loads(answer.body)
    assert (problem["code"], problem["retriable"]) == ("REQUEST_TOO_LARGE", False)


def stream_until_answered(sock: socket.socket, head: bytes, chunks: Iterator[bytes]) -> int:
    """Send ``head`` then each chunk (chunked encoding) until the server answers or stops reading; bytes sent."""
    sock.sendall(head)
    sent = 0
    sock.settimeout(3)
    for chunk in chunks:
        if select.select([sock], [], [], 0)[0]:
            break
        try:
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            break
        sent += len(chunk)
    else:
        sock.sendall(b"0\r\n\r\n")
    sock.settimeout(10)
    return sent


def vm_peak_rss(broker: BrokerProcess) -> int:
    """The broker's peak resident memory in bytes (VmHWM): a body buffered whole shows here even once freed."""
    assert broker.proc is not None
    status = Path(f"/proc/{broker.proc.pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) * 1024


@pytest.mark.parametrize("path", ["/v1/topics/BIG/messages", "/v1/topics"])
def test_a_declared_body_over_the_limit_is_refused_before_it_is_sent(broker: BrokerProcess, client: httpx.Client, path: str) -> None:
    with stores_nothing(client), connect(broker) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
                     f"content-length: {50 * MAX_REQUEST_BYTES}\r\n\r\n".encode() + b'{"messages": [')
        assert_request_too_large(read_response(sock))


def test_a_streamed_batch_over_the_limit_is_refused_while_reading_and_stores_nothing(broker: BrokerProcess, client: httpx.Client) -> None:
    client.post("/v1/topics", json={"name": "BIG", "queues": 1}).raise_for_status()
    message = b'{"body": "' + b"x" * 100_000 + b'"}'
    batch = [b'{"messages": [', *([message + b","] * 399), message, b"]}"]  # 40 MB of valid batch, 400 messages
    peak_before = vm_peak_rss(broker)
    with stores_nothing(client), connect(broker) as sock:
        head = b"POST /v1/topics/BIG/messages HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        sent = stream_until_answered(sock, head, iter(batch))
        assert_request_too_large(read_response(sock))
    assert sent < 20 * MAX_REQUEST_BYTES, f"the broker read {sent} bytes of a body over its {MAX_REQUEST_BYTES}-byte limit"
    assert vm_peak_rss(broker) - peak_before < 15 * MAX_REQUEST_BYTES


def test_a_streamed_body_over_the_limit_is_refused_on_regular_routes_too(broker: BrokerProcess, client: httpx.Client) -> None:
    with stores_nothing(client), connect(broker) as sock:
        head = b"POST /v1/topics HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        stream_until_answered(sock, head, iter([b'{"name": "' + b"N" * 65536] * 40))
        assert_request_too_large(read_response(sock))


def test_a_body_within_the_limit_is_served(client: httpx.Client) -> None:
    sent = client.post("/v1/topics/FITS/messages", json={"messages": [{"body": "x" * 300_000}] * 3})
    assert sent.status_code == 200


def test_a_refused_body_answers_httpx_with_a_problem(client: httpx.Client) -> None:
    refused = client.post("/v1/topics/BIG/messages", json={"messages": [{"body": "x" * 300_000}] * 4})
    assert_problem(refused, 413, "REQUEST_TOO_LARGE")


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``sock`` (reading and dropping whatever it answers), or None if it stayed open."""
    started = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - started < seconds:
        try:
            if sock.recv(65536) == b"":
                return time.monotonic() - started
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - started
    return None


def test_idle_and_half_sent_connections_are_closed_after_the_head_timeout(broker: BrokerProcess) -> None:
    httpx.post(f"{broker.url}/v1/topics", json={"name": "LP", "queues": 1}).raise_for_status()
    silent, partial, kept_alive, trickling = (connect(broker) for _ in range(4))
    partial.sendall(b"POST /v1/topics HTTP/1.1\r\nHost: localhost\r\n")
    kept_alive.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert read_response(kept_alive).status == 200
    trickling.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.3):
            try:
                trickling.sendall(b"X: y\r\n")
            except OSError:
                return

    polled: list[int] = []
    poll = threading.Thread(target=lambda: polled.append(httpx.post(
        f"{broker.url}/v1/consumer-groups/g/topics/LP/receive", json={"wait_seconds": HEAD_TIMEOUT + 2}, timeout=30).status_code))
    threading.Thread(target=trickle, daemon=True).start()
    poll.start()
    try:
        for sock in (silent, partial, kept_alive, trickling):
            took = closed_within(sock, HEAD_TIMEOUT + 4)
            assert took is not None, "the broker kept a connection without a complete request head open"
        poll.join(15)
        assert polled == [200], "a long poll in progress is not idle and must not be cut"
    finally:
        stop.set()
        for sock in (silent, partial, kept_alive, trickling):
            sock.close()


@pytest.mark.parametrize("path", ["/v1/topics/SLOW/messages", "/v1/topics"])
def test_a_body_that_trickles_in_is_refused_at_the_body_deadline(broker: BrokerProcess, client: httpx.Client, path: str) -> None:
    body = json.dumps({"messages": [{"body": "late"}]} if "messages" in path else {"name": "SLOW"}).encode()
    with stores_nothing(client), connect(broker) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
                     f"content-length: {len(body)}\r\n\r\n".encode())
        started = time.monotonic()
        for byte in body[:-1]:  # everything but the last byte, a byte every half second
            if select.select([sock], [], [], 0.5)[0]:
                break
            sock.sendall(bytes([byte]))
        answer = read_response(sock)
        assert answer is not None and answer.status == 408, answer
        assert json.loads(answer.body)["code"] == "REQUEST_BODY_TIMEOUT"
        assert BODY_TIMEOUT - 0.5 < time.monotonic() - started < BODY_TIMEOUT + 3
        assert closed_within(sock, 3) is not None


def test_a_huge_header_block_is_refused_before_it_is_read(broker: BrokerProcess) -> None:
    with connect(broker) as sock:
        huge = b"X-Big: " + b"a" * (20 * 1024 * 1024)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        sent = 0
        sock.settimeout(3)
        for start in range(0, len(huge), 65536):
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(huge[start:start + 65536])
            except (TimeoutError, BrokenPipeError, ConnectionResetError):
                break
            sent += 65536
        assert sent < len(huge) // 2, "the broker kept reading a 20 MB header block"
        response = read_response(sock)
        assert response is None or response.status == 431
    assert httpx.get(f"{broker.url}/healthz").status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize("server", SERVERS)
def test_a_thousand_idle_connections_do_not_keep_producers_waiting(server: str, tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    broker = limited_broker(server, tmp_path, HALFMQ_BROKER_REQUEST_HEAD_TIMEOUT="6")
    broker.start()
    held: list[socket.socket] = []
    try:
        with httpx.Client(base_url=broker.url, timeout=5) as producer:
            for topic in ("LOAD", "QUIET"):
                producer.post("/v1/topics", json={"name": topic, "queues": 2}).raise_for_status()
            polled: list[int] = []
            polls = [threading.Thread(target=lambda: polled.append(httpx.post(
                f"{broker.url}/v1/consumer-groups/idle/topics/QUIET/receive", json={"wait_seconds": 8}, timeout=30).status_code))
                for _ in range(8)]
            for poll in polls:
                poll.start()
            opened = time.monotonic()
            idle = [connect(broker, timeout=3) for _ in range(1000)]
            held.extend(idle)
            for sock in idle[:100]:  # these have been served once and now idle in keep-alive
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            for sock in idle[:100]:
                assert read_response(sock).status == 200
            partial = [connect(broker, timeout=3) for _ in range(100)]
            held.extend(partial)
            for sock in partial:
                sock.sendall(b"POST /v1/topics/LOAD/messages HTTP/1.1\r\nHost: localhost\r\ncontent-")
            assert time.monotonic() - opened < 4, "opening the idle connections took too long to prove anything"

            sent = 0
            while time.monotonic() - opened < 5:
                started = time.monotonic()
                answer = httpx.post(f"{broker.url}/v1/topics/LOAD/messages", json={"messages": [{"body": f"m{sent}"}]}, timeout=5)
                assert answer.status_code == 200 and time.monotonic() - started < 3
                assert producer.post("/v1/topics/LOAD/messages", json={"messages": [{"body": "pooled"}]}).status_code == 200
                sent += 1
            assert sent >= 10
            for poll in polls:
                poll.join(20)
            assert polled == [200] * 8

            for sock in (*partial[:20], *idle[::50]):
                assert closed_within(sock, 10) is not None, "an idle or half-sent connection outlived the head timeout"
    finally:
        for sock in held:
            sock.close()
        broker.stop()

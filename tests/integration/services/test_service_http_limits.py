"""The order and credit services under the broker's HTTP limits (issue 30, item 8).

Each test starts the service as a real process (``halfmq order`` / ``halfmq credit``) with a short head
deadline and does what a slowloris client does: a thousand connections that send half a request head
and then nothing. The service must keep answering normal requests while they are held, and close every
one of them at the deadline, instead of holding them (and their descriptors) for ever.
"""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.broker.serving.test_broker_http_limits import closed_within, read_response
from tests.support.processes import BrokerProcess, ServiceProcess

HEAD_TIMEOUT = 3.0
HALF_SENT = 1000


@pytest.fixture(params=["order", "credit"])
def service(request: pytest.FixtureRequest, broker: BrokerProcess, tmp_path: Path) -> Iterator[ServiceProcess]:
    kind = request.param
    prefix = kind.upper()
    proc = ServiceProcess(kind, tmp_path, {
        f"{prefix}_DATABASE_URL": f"sqlite:///{tmp_path}/{kind}.db", f"{prefix}_BROKER_URL": broker.url,
        f"{prefix}_REQUEST_HEAD_TIMEOUT": str(HEAD_TIMEOUT),
    })
    proc.start()
    yield proc
    proc.stop()


def connect(service: ServiceProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", service.port), timeout=3)


def answers_a_normal_request(service: ServiceProcess) -> None:
    started = time.monotonic()
    health = httpx.get(f"{service.url}/healthz", timeout=5)
    assert health.status_code == 200 and time.monotonic() - started < 3, health.text
    if service.kind == "order":
        placed = httpx.post(f"{service.url}/orders", json={"user_id": "u1", "amount": "1.00"}, timeout=10)
        assert placed.status_code == 201, placed.text
    else:
        assert httpx.get(f"{service.url}/users/u1/credits", timeout=5).status_code == 200


def test_a_thousand_half_sent_heads_are_closed_at_the_head_timeout_and_the_service_answers_meanwhile(service: ServiceProcess) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    held: list[socket.socket] = []
    try:
        opened = time.monotonic()
        for _ in range(HALF_SENT):
            sock = connect(service)
            held.append(sock)
            sock.sendall(b"POST /orders HTTP/1.1\r\nHost: x\r\ncontent-")
        idle = connect(service)  # one that sends nothing at all
        held.append(idle)
        assert time.monotonic() - opened < HEAD_TIMEOUT, "opening the connections took too long to prove anything"

        answers_a_normal_request(service)
        kept_alive = connect(service)
        held.append(kept_alive)
        kept_alive.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # one of its names (the Host gate)
        answer = read_response(kept_alive)
        assert answer is not None and answer.status == 200

        deadline = opened + HEAD_TIMEOUT + 6
        for sock in held:  # every half-sent head, the silent one and the idle keep-alive: all closed at the deadline
            assert closed_within(sock, max(0.5, deadline - time.monotonic())) is not None, \
                "the service kept a connection without a complete request head open past its head timeout"
        answers_a_normal_request(service)
    finally:
        for sock in held:
            sock.close()

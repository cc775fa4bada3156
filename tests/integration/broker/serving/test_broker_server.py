"""`halfmq broker` on each HTTP server it can run on: the same answers, the same shutdown, the same refusals.

The rest of the suite runs on the default (uvicorn); these pin what must not
depend on the server: hot and FastAPI routes, problem responses, a hung-up long
poll handing its messages back, SIGTERM ending open long polls promptly, and a
taken port refusing to start instead of being shared.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import ROOT, BrokerProcess, free_port, halfmq_command

SERVERS = ("granian", "uvicorn")


@pytest.fixture(params=SERVERS)
def served(request: pytest.FixtureRequest, tmp_path: Path):
    broker = BrokerProcess(tmp_path / "data", tmp_path, {"HALFMQ_BROKER_HTTP_SERVER": request.param})
    broker.start()
    yield broker
    broker.stop()


def test_hot_and_regular_routes_answer_alike(served: BrokerProcess) -> None:
    with httpx.Client(base_url=served.url, timeout=10) as http:
        assert http.post("/v1/topics", json={"name": "SRV", "queues": 1}).status_code == 201
        sent = http.post("/v1/topics/SRV/messages", json={"messages": [{"body": "one"}]})
        assert sent.status_code == 200 and sent.json()["results"][0]["status"] == "SEND_OK"
        assert http.get("/v1/topics/SRV").json()["queues"][0]["max_offset"] == 1

        bad = http.post("/v1/topics/SRV/messages", content=b"{nope", headers={"content-type": "application/json"})
        assert (bad.status_code, bad.headers["content-type"], bad.json()["code"]) == (400, "application/problem+json", "MALFORMED_JSON")
        wrong_method = http.get("/v1/topics/SRV/messages")
        assert (wrong_method.status_code, wrong_method.headers["allow"]) == (405, "POST")
        assert http.get("/nowhere").json()["code"] == "NOT_FOUND"
        assert http.get("/v1/topics/SRV/queues/0/messages").json()["messages"][0]["body"] == "one"


def test_a_405_lists_every_method_the_path_takes(served: BrokerProcess) -> None:
    with httpx.Client(base_url=served.url, timeout=10) as http:
        for path, allow in [("/v1/topics/T/messages", "POST"),                # hot route only
                            ("/v1/transactions", "GET, POST"),                # hot POST, FastAPI GET
                            ("/v1/topics", "GET, POST"),                      # two FastAPI routes
                            ("/v1/transactions/t1/force-commit", "POST")]:    # one FastAPI route
            refused = http.delete(path)
            assert (refused.status_code, refused.json()["code"], refused.headers.get("allow")) == (405, "METHOD_NOT_ALLOWED", allow), path


def test_a_hung_up_long_poll_hands_its_message_back(served: BrokerProcess) -> None:
    httpx.post(f"{served.url}/v1/topics", json={"name": "HANG", "queues": 1})
    body = b'{"max_messages": 1, "invisible_seconds": 300, "wait_seconds": 10}'
    with socket.create_connection(("127.0.0.1", served.port)) as sock:
        sock.sendall(b"POST /v1/consumer-groups/g/topics/HANG/receive HTTP/1.1\r\nHost: localhost\r\n"
                     b"content-type: application/json\r\n" + f"content-length: {len(body)}\r\n\r\n".encode() + body)
        time.sleep(0.3)
    time.sleep(0.2)
    httpx.post(f"{served.url}/v1/topics/HANG/messages", json={"messages": [{"body": "orphan"}]})
    got = httpx.post(f"{served.url}/v1/consumer-groups/g/topics/HANG/receive", json={"max_messages": 1, "wait_seconds": 3}, timeout=10)
    assert [m["body"] for m in got.json()["messages"]] == ["orphan"]


def test_sigterm_ends_open_long_polls_and_stops_cleanly(served: BrokerProcess) -> None:
    import threading

    httpx.post(f"{served.url}/v1/topics", json={"name": "IDLE", "queues": 1})
    answers: list[int] = []
    poll = threading.Thread(target=lambda: answers.append(httpx.post(
        f"{served.url}/v1/consumer-groups/g/topics/IDLE/receive", json={"wait_seconds": 30}, timeout=40).status_code))
    poll.start()
    time.sleep(0.5)
    started = time.monotonic()
    assert served.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has shut down
    poll.join(10)
    assert time.monotonic() - started < 8, "an idle long poll held shutdown up"
    assert answers == [200]
    assert "broker stopped cleanly" in served.tail()


@pytest.mark.parametrize("server", SERVERS)
def test_a_taken_port_refuses_to_start(server: str, tmp_path: Path) -> None:
    port = free_port()
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # as a granian broker holds its port
        holder.bind(("127.0.0.1", port))
        holder.listen()
        proc = subprocess.run(
            halfmq_command("broker", "--port", str(port), "--data-dir", str(tmp_path / "data")),
            env={"HALFMQ_BROKER_HTTP_SERVER": server, "PATH": "/usr/bin:/bin"}, cwd=ROOT,
            capture_output=True, text=True, timeout=30,
        )
    assert proc.returncode != 0
    assert "in use" in proc.stderr.lower()


def test_protected_mode_refuses_a_non_loopback_bind_without_auth_in_one_line(tmp_path) -> None:
    """Refused before anything binds: no socket is opened on 0.0.0.0."""
    done = subprocess.run(halfmq_command("broker", "--host", "0.0.0.0", "--port", str(free_port()), "--data-dir", str(tmp_path / "d")),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 6
    lines = [line for line in done.stderr.splitlines() if "refusing" in line]
    assert len(lines) == 1 and "--insecure" in lines[0] and "HALFMQ_BROKER_AUTH_FILE" in lines[0]
    assert not (tmp_path / "d").exists()  # nothing opened, nothing written


@pytest.mark.parametrize("content", [None, "{not json", '{"principals": [{"name": "x", "policies": [{"actions": ["root"], "resources": ["*"]}]}]}'])
def test_a_missing_or_broken_auth_file_stops_the_broker_instead_of_serving_it_open(tmp_path, content) -> None:
    auth = tmp_path / "auth.json"
    if content is not None:
        auth.write_text(content)
    done = subprocess.run(halfmq_command("broker", "--port", str(free_port()), "--data-dir", str(tmp_path / "d")),
                          env={**os.environ, "HALFMQ_BROKER_AUTH_FILE": str(auth)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 6, done.stderr[-2000:]
    assert "cannot start: auth file" in done.stderr and "Traceback" not in done.stderr


def test_the_default_server_runs_in_a_mode_its_authors_support_for_production(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HALFMQ_BROKER_HTTP_SERVER", raising=False)
    broker = BrokerProcess(tmp_path / "data", tmp_path, {"HALFMQ_BROKER_LOG_LEVEL": "debug"})
    broker.start()
    try:
        assert httpx.get(f"{broker.url}/healthz", timeout=5).status_code == 200
    finally:
        broker.stop()
    assert "experimental" not in broker.tail(200).lower(), broker.tail(200)

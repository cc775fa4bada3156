"""The SDK's wire behaviour against a tiny scripted HTTP server.

These need no broker: they pin down how answers and failures are mapped,
retried and encoded, which a real broker only shows by accident.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from halfmq.client import (
    AsyncProducer,
    BrokerError,
    BrokerUnavailable,
    LocalTransactionState,
    Producer,
    TransactionProducer,
    endpoints,
)
from halfmq.client.simple_consumer import SimpleConsumer
from halfmq.client.transport import AsyncTransport
from halfmq.errors import FlushDiskTimeout, NotLeader, SystemTopicForbidden, TopicNotFound

SEND_OK = {
    "status": "SEND_OK",
    "msg_id": "ABC",
    "topic": "t",
    "queue_id": 0,
    "queue_offset": 7,
    "commit_log_offset": 1234,
}


@dataclass
class Script:
    """Answers to hand out in order (the last one repeats) and the requests seen."""

    answers: list[tuple[int, str, bytes]] = field(default_factory=list)
    seen: list[tuple[str, str, bytes]] = field(default_factory=list)
    peers: set[tuple[str, int]] = field(default_factory=set)

    def answer(self, status: int, body: Any, content_type: str = "application/json") -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers.append((status, content_type, raw))


@pytest.fixture
def scripted() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, so each client connection shows up as one peer

        def _reply(self) -> None:
            script.peers.add(self.client_address)
            length = int(self.headers.get("content-length") or 0)
            script.seen.append((self.command, self.path, self.rfile.read(length)))
            status, content_type, raw = script.answers.pop(0) if len(script.answers) > 1 else script.answers[0]
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = _reply  # noqa: N815 - http.server's names

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_connection_raises_broker_unavailable_which_is_retriable() -> None:
    with Producer(f"http://127.0.0.1:{closed_port()}", timeout=2.0, retries=1) as producer:
        with pytest.raises(BrokerUnavailable) as caught:
            producer.send("t", "hello")
    assert caught.value.retriable is True
    assert caught.value.code == "BROKER_UNAVAILABLE"


async def test_the_async_transport_also_maps_a_refused_connection_to_broker_unavailable() -> None:
    async with AsyncProducer(f"http://127.0.0.1:{closed_port()}", timeout=2.0, retries=0) as producer:
        with pytest.raises(BrokerUnavailable):
            await producer.send("t", "hello")


def test_a_problem_body_becomes_the_error_class_its_code_names(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(403, SystemTopicForbidden("no writes to system topics").to_problem(), "application/problem+json")
    with Producer(url, retries=3) as producer, pytest.raises(SystemTopicForbidden) as caught:
        producer.send("RMQ_SYS_TRANS_HALF_TOPIC", "x")
    assert caught.value.retriable is False
    assert caught.value.status == 403
    assert caught.value.detail == "no writes to system topics"
    assert len(script.seen) == 1, "a non-retriable error must not be retried"


def test_an_unknown_problem_code_keeps_its_code_status_and_retriable_flag(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(429, {"type": "x", "title": "Slow down", "status": 429, "code": "TOO_MANY", "retriable": True})
    with Producer(url, retries=0) as producer, pytest.raises(BrokerError) as caught:
        producer.get_topic("t")
    assert type(caught.value) is BrokerError
    assert (caught.value.code, caught.value.status, caught.value.retriable) == ("TOO_MANY", 429, True)


def test_a_non_json_error_body_becomes_a_broker_error_with_the_http_status(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(500, b"<html>oops</html>", "text/html")
    with Producer(url, retries=0) as producer, pytest.raises(BrokerError) as caught:
        producer.get_topic("t")
    assert caught.value.status == 500
    assert caught.value.retriable is False
    assert "oops" in caught.value.detail


def test_a_flush_timeout_problem_is_retried_with_the_same_uniq_key_and_the_same_number(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(201, {"producer_id": 5, "epoch": 0})
    script.answer(503, FlushDiskTimeout("disk slow").to_problem(), "application/problem+json")
    script.answer(200, {"results": [SEND_OK]})
    with Producer(url, retries=3) as producer:
        result = producer.send("t", "hello")
    assert result.queue_offset == 7
    assert [(method, path) for method, path, _ in script.seen[:2]] == [("POST", "/v1/producer-ids"), ("POST", "/v1/topics/t/messages")]
    bodies = [json.loads(body) for _, _, body in script.seen[1:]]
    assert len(bodies) == 2
    keys = {b["messages"][0]["properties"]["UNIQ_KEY"] for b in bodies}
    assert len(keys) == 1 and len(keys.pop()) == 32
    assert [(b["producer_id"], b["epoch"], b["sequence"]) for b in bodies] == [(5, 0, 0), (5, 0, 0)]


def test_numbered_sends_take_one_producer_id_and_count_up_and_a_failed_one_takes_a_new_id(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(201, {"producer_id": 5, "epoch": 0})
    script.answer(200, {"results": [SEND_OK]})
    script.answer(200, {"results": [SEND_OK]})
    script.answer(400, TopicNotFound("no").to_problem(), "application/problem+json")
    script.answer(201, {"producer_id": 6, "epoch": 0})
    script.answer(200, {"results": [SEND_OK]})
    with Producer(url) as producer:
        producer.send("t", "a")
        producer.send("t", "b")
        with pytest.raises(TopicNotFound):
            producer.send("t", "c")
        producer.send("t", "d")
    sends = [json.loads(body) for _, path, body in script.seen if path.endswith("/messages")]
    assert [(b["producer_id"], b["sequence"]) for b in sends] == [(5, 0), (5, 1), (5, 2), (6, 0)]


def test_retries_stop_after_the_configured_number(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(503, FlushDiskTimeout().to_problem(), "application/problem+json")
    with Producer(url, retries=2) as producer, pytest.raises(FlushDiskTimeout):
        producer.send("t", "hello")
    assert len(script.seen) == 3


def test_topic_and_group_names_are_percent_encoded_as_one_path_segment(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(404, TopicNotFound("no such topic").to_problem(), "application/problem+json")
    with Producer(url, retries=0) as producer, pytest.raises(TopicNotFound):
        producer.read("%DLQ%group/x", 3, offset=5, max=2)
    with SimpleConsumer(url, "g%1", "%DLQ%g", retries=0) as consumer, pytest.raises(TopicNotFound):
        consumer.ack(["h1"])
    assert script.seen[0][1] == "/v1/topics/%25DLQ%25group%2Fx/queues/3/messages?offset=5&max=2"
    assert script.seen[1][1] == "/v1/consumer-groups/g%251/topics/%25DLQ%25g/ack"


def test_bodies_are_encoded_by_type_and_user_properties_are_kept(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(200, {"results": [SEND_OK, SEND_OK, SEND_OK]})
    with Producer(url, idempotent=False) as producer:
        producer.send_batch("t", ["text", b"\x00\xff", {"a": 1}])
        script.answer(200, {"results": [SEND_OK]})
        script.answers.pop(0)
        producer.send("t", "x", keys=["k1"], tag="TagA", properties={"p": "v", "UNIQ_KEY": "MINE"}, queue_id=1)
    batch = json.loads(script.seen[0][2])["messages"]
    assert [(m["body"], m["body_encoding"]) for m in batch] == [
        ("text", "utf-8"),
        ("AP8=", "base64"),
        ('{"a":1}', "utf-8"),
    ]
    single = json.loads(script.seen[1][2])["messages"][0]
    assert single["properties"] == {"p": "v", "UNIQ_KEY": "MINE"}
    assert (single["keys"], single["tag"], single["queue_id"]) == (["k1"], "TagA", 1)


def test_a_short_send_answer_is_reported_instead_of_mispairing_results(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(200, {"results": [SEND_OK]})
    with Producer(url, idempotent=False) as producer, pytest.raises(BrokerError, match="1 send results for 2 messages"):
        producer.send_batch("t", ["a", "b"])


async def test_the_async_transport_keeps_at_most_pool_size_times_connections_per_client_connections(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answer(200, {"status": "ok"})
    transport = AsyncTransport(url, pool_size=3, connections_per_client=1, max_in_flight=6)
    try:
        await asyncio.gather(*(transport.call(endpoints.health()) for _ in range(12)))
    finally:
        await transport.close()
    assert len(script.seen) == 12
    # 3 x 1 connections: concurrent calls share exactly three keep-alive connections.
    assert len(script.peers) == 3


@pytest.fixture
def hung() -> Iterator[str]:
    """A node that completes TCP handshakes (the kernel does) and never answers: a SIGSTOPped broker, as a client sees it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def _not_leader(leader_url: str) -> tuple[int, Any, str]:
    return 421, NotLeader("follower", leader_url=leader_url).to_problem(), "application/problem+json"


def test_a_numbered_send_a_hung_node_never_answers_is_sent_again_with_its_number_to_the_next_url(
        scripted: tuple[str, Script], hung: str) -> None:
    url, script = scripted
    script.answer(201, {"producer_id": 5, "epoch": 0})
    script.answer(*_not_leader(hung))  # the send is sent to the hung node, which it names as the leader
    script.answer(200, {"results": [SEND_OK]})
    with Producer(f"{url},{hung}", timeout=0.5, retries=1) as producer:
        assert producer.send("t", "hello").status == "SEND_OK"
    sends = [json.loads(body) for method, path, body in script.seen if path == "/v1/topics/t/messages"]
    assert len(sends) == 2 and sends[0] == sends[1] and sends[1]["sequence"] == 0  # the same number: stored once


async def test_the_async_producer_also_leaves_a_hung_node_for_the_next_url(scripted: tuple[str, Script], hung: str) -> None:
    url, script = scripted
    script.answer(201, {"producer_id": 5, "epoch": 0})
    script.answer(*_not_leader(hung))
    script.answer(200, {"results": [SEND_OK]})
    async with AsyncProducer(f"{url},{hung}", timeout=0.5, retries=1) as producer:
        assert (await producer.send("t", "hello")).status == "SEND_OK"
    assert sum(path == "/v1/topics/t/messages" for _, path, _ in script.seen) == 2


class _Listener:
    def __init__(self) -> None:
        self.ran = 0

    def execute_local_transaction(self, msg: Any, arg: Any) -> LocalTransactionState:
        self.ran += 1
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: Any) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW


def test_an_unnumbered_half_send_a_hung_node_never_answers_is_not_sent_again_elsewhere(
        scripted: tuple[str, Script], hung: str) -> None:
    # It may have opened a transaction on the hung node; a second half would open another for the same change.
    url, script = scripted
    script.answer(*_not_leader(hung))
    script.answer(200, {"status": "SEND_OK", "transaction_id": "T2", "msg_id": "M2", "commit_log_offset": 1, "queue_offset": 0})
    listener = _Listener()
    with TransactionProducer(f"{url},{hung}", "g", listener, check_backs=False, idempotent=False, timeout=0.5) as producer:
        with pytest.raises(BrokerUnavailable, match="no answer"):
            producer.send_in_transaction("t", "hello")
    assert sum(path == "/v1/transactions" for _, path, _ in script.seen) == 1 and listener.ran == 0

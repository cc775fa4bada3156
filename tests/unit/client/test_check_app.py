"""The check-back app's own refusals, driven with ASGI messages as a server would send them."""

from __future__ import annotations

import threading
from typing import Any

import orjson

from halfmq.client.check_app import CheckApp
from tests.support.asgi_messages import chunks


async def test_the_check_app_refuses_a_body_over_its_cap_with_a_problem() -> None:
    app = CheckApp(type("L", (), {"check_local_transaction": lambda self, msg: None})(), max_body_bytes=4)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": "POST", "headers": []}, chunks(b"{}", b"{}", b"{}"), send)
    assert sent[0]["status"] == 413
    assert orjson.loads(sent[1]["body"])["code"] == "MESSAGE_TOO_LARGE"


async def test_a_blocking_listener_is_asked_on_a_worker_thread_never_on_the_event_loop() -> None:
    threads: list[int] = []

    class Listener:
        def check_local_transaction(self, msg: Any) -> str:
            threads.append(threading.get_ident())
            return "commit"

    message = {"msg_id": "M1", "topic": "ORDERS", "queue_id": 0, "queue_offset": 0, "commit_log_offset": 0,
               "born_timestamp": 1, "store_timestamp": 1, "body": "o1", "properties": {"TRANSACTION_ID": "tx1"}}
    body = orjson.dumps({"transaction_id": "tx1", "producer_group": "pg", "check_times": 1, "message": message})
    sent: list[dict[str, Any]] = []

    async def send(reply: dict[str, Any]) -> None:
        sent.append(reply)

    await CheckApp(Listener())({"type": "http", "method": "POST", "headers": []}, chunks(body), send)
    assert (sent[0]["status"], orjson.loads(sent[1]["body"])) == (200, {"state": "commit"})
    assert threads and threads[0] != threading.get_ident()

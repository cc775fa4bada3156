"""Request bodies, encoded once: the driver must spend its CPU on requests, not on JSON.

Messages carry 256-byte bodies as in the peers' benchmarks; the baseline
endpoints get the peers' exact 256-byte JSON document.
"""

from __future__ import annotations

import orjson

# The peers' payload (bench/peers/_load.py, post.lua): a 256-byte JSON document.
PEER_PAYLOAD = b'{"topic":"orders","key":"k-000001","body":"' + b"x" * 211 + b'"}'
assert len(PEER_PAYLOAD) == 256


def message_body(size: int = 256) -> str:
    return ("halfmq-bench:" + "x" * size)[:size]


def send(count: int, size: int = 256) -> bytes:
    """POST /v1/topics/{t}/messages with ``count`` messages of ``size`` bytes."""
    body = message_body(size)
    return orjson.dumps({"messages": [{"body": body} for _ in range(count)]})


def half(group: str, topic: str, size: int = 256) -> bytes:
    return orjson.dumps({"producer_group": group, "topic": topic, "message": {"body": message_body(size)}})


def end(group: str, state: str) -> bytes:
    return orjson.dumps({"producer_group": group, "state": state})


def receive(max_messages: int, invisible_seconds: float = 60.0, wait_seconds: float = 0.0) -> bytes:
    return orjson.dumps({"max_messages": max_messages, "invisible_seconds": invisible_seconds, "wait_seconds": wait_seconds})


def ack(handles: list[str]) -> bytes:
    return orjson.dumps({"receipt_handles": handles})


def heartbeat(group: str, client_id: str, check_url: str) -> bytes:
    return orjson.dumps({"producer_group": group, "client_id": client_id, "check_url": check_url})


def order(user_id: str, amount: str = "12.34") -> bytes:
    return orjson.dumps({"user_id": user_id, "amount": amount})

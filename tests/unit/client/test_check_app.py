"""The check-back app's own refusals, driven with ASGI messages as a server would send them."""

from __future__ import annotations

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

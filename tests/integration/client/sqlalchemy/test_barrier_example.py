"""examples/barrier_service.py, exactly as the README prints it, run as a process against a real broker.

POST an order to it and see its message consumed; the README's copy must be the file, byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from halfmq.client import Consumer, Message, message_json
from tests.conftest import BrokerFactory
from tests.support.processes import ROOT, free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

EXAMPLE = ROOT / "examples" / "barrier_service.py"
SUBSECTION = "### Send in your database transaction (the barrier)"


def test_the_readme_shows_the_example_as_it_is() -> None:
    readme = (ROOT / "docs" / "sdk.md").read_text()
    section = readme[readme.index(SUBSECTION):]
    printed = section[section.index("```python\n") + len("```python\n"):section.index("\n```\n")] + "\n"
    assert printed == EXAMPLE.read_text()


def test_the_example_service_sends_its_order_in_its_transaction(start_broker: BrokerFactory, tmp_path: Path) -> None:
    broker = start_broker()
    port = free_port()
    env = {**os.environ, "HALFMQ_URL": broker.url, "PORT": str(port)}
    with (tmp_path / "service.log").open("w") as log:
        service = subprocess.Popen([sys.executable, str(EXAMPLE)], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        def post() -> httpx.Response | None:
            try:
                return httpx.post(f"http://127.0.0.1:{port}/orders", params={"item": "book"}, timeout=10)
            except httpx.TransportError:
                return None

        response = wait_for(post, timeout=30)
        assert response.status_code == 200, response.text
        placed = response.json()
        assert placed["committed"] is True
        assert (tmp_path / "shop.db").is_file()

        received: list[dict[str, str]] = []
        got = threading.Event()

        def handle(message: Message) -> None:
            received.append(message_json(message))
            got.set()

        consumer = Consumer(broker.url, "shop-readers", "ORDERS", handle, wait_seconds=1)
        runner = threading.Thread(target=consumer.run, daemon=True)
        runner.start()
        try:
            assert got.wait(30), "the order's message was never consumed"
        finally:
            consumer.stop()
            runner.join(15)
        assert received == [{"order_id": placed["order_id"], "item": "book"}]
    finally:
        service.terminate()
        service.wait(15)
    assert "Traceback" not in (tmp_path / "service.log").read_text()

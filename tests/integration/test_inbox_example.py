"""examples/inbox_consumer.py, as the README prints it, against a real broker: every order credited exactly once."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest

from tests.conftest import BrokerFactory
from tests.support.processes import ROOT

pytestmark = pytest.mark.slow

EXAMPLE = ROOT / "examples" / "inbox_consumer.py"
SUBSECTION = "### Consume exactly once (the inbox)"


def readme_program() -> str:
    text = (ROOT / "docs" / "sdk.md").read_text()
    section = text[text.index(SUBSECTION):]
    section = section[:re.search(r"^##", section[3:], flags=re.M).start() + 3]  # to the next heading
    [program] = re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)
    return program


def test_the_readme_shows_the_example_file_in_full() -> None:
    assert readme_program() == EXAMPLE.read_text()


def test_the_example_credits_each_order_once_whatever_the_deliveries(start_broker: BrokerFactory, tmp_path: Path) -> None:
    broker = start_broker()
    orders = [{"order_id": "o-1", "user_id": "u1", "points": 5}, {"order_id": "o-2", "user_id": "u1", "points": 3},
              {"order_id": "o-1", "user_id": "u1", "points": 5},  # sent again: a new message about the same order
              {"order_id": "o-3", "user_id": "u2", "points": 7}]
    httpx.post(f"{broker.url}/v1/topics/ORDERS/messages",
               json={"messages": [{"body": orjson.dumps(o).decode()} for o in orders]}).raise_for_status()
    consumer = subprocess.Popen([sys.executable, "-c", readme_program()], env={**os.environ, "HALFMQ_URL": broker.url},
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            group = httpx.get(f"{broker.url}/v1/consumer-groups/credits")
            if group.status_code == 200 and sum(q["lag"] for t in group.json()["topics"] for q in t["queues"]) == 0:
                break
            time.sleep(0.2)
    finally:
        consumer.send_signal(signal.SIGTERM)
        out, err = consumer.communicate(timeout=30)
    assert consumer.returncode == 0, out + err
    assert sorted(line for line in err.splitlines() if line.startswith("credited")) == [
        "credited o-1", "credited o-2", "credited o-3"]
    with sqlite3.connect(tmp_path / "credits.db") as db:
        assert dict(db.execute("SELECT user_id, points FROM balances")) == {"u1": 8, "u2": 7}

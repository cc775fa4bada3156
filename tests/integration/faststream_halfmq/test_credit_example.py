"""examples/faststream_credit.py against a real broker: every order credited exactly once, through a kill -9 of the app and
a kill -9 of the broker under it (the demo's faults for a consumer)."""

from __future__ import annotations

import os
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
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

EXAMPLE = ROOT / "examples" / "faststream_credit.py"


def credited(db: Path) -> list[tuple[str, int]]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            return conn.execute("SELECT inbox_key, points FROM credits ORDER BY inbox_key").fetchall()
        except sqlite3.OperationalError:  # the app has not created its tables yet
            return []


def settled(url: str) -> bool:
    group = httpx.get(f"{url}/v1/consumer-groups/credit_group")
    return group.status_code == 200 and all(q["lag"] == 0 and q["in_flight"] == 0 for t in group.json()["topics"] for q in t["queues"])


def test_the_example_credits_every_order_once_through_a_kill_of_the_app_and_of_the_broker(
        start_broker: BrokerFactory, tmp_path: Path) -> None:
    broker, db = start_broker(), tmp_path / "credits.db"
    every = [{"order_id": f"o-{n}", "user_id": f"u{n % 3}", "amount": "10.50"} for n in range(80)]
    orders, late = every[:60], every[60:]  # late: sent once the killed broker is back
    resent = orders[:5]  # the order service sent these again (a retried send after a lost answer)
    refund = {"order_id": "o-7", "user_id": "u1", "amount": "10.50", "kind": "refund"}
    poison = {"order_id": "bad", "user_id": "u0", "amount": "lots"}

    def send(bodies: list[dict[str, object]]) -> None:
        httpx.post(f"{broker.url}/v1/topics/ORDER_TOPIC/messages",
                   json={"messages": [{"body": orjson.dumps(b).decode()} for b in bodies]}).raise_for_status()

    env = {**os.environ, "HALFMQ_URL": broker.url, "CREDIT_DB": f"sqlite+aiosqlite:///{db}", "PYTHONPATH": str(ROOT)}

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, str(EXAMPLE)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    send(orders)
    app = start()
    wait_for(lambda: len(credited(db)) >= 10, timeout=60)
    app.send_signal(signal.SIGKILL)  # mid-run: messages in hand are neither acked nor finished
    app.wait(timeout=30)
    send([*resent, refund, poison])
    app = start()
    try:
        wait_for(lambda: len(credited(db)) >= 30, timeout=60)
        broker.kill9()  # under the running app: its receives and acks fail until the broker is back
        broker.restart()
        send(late)
        wait_for(lambda: settled(broker.url) and len(credited(db)) == len(every) + 1, timeout=120)
        time.sleep(1.0)  # anything still to come (a duplicate credit) would show now
    finally:
        app.send_signal(signal.SIGTERM)
        out, _ = app.communicate(timeout=30)
    assert app.returncode == 0, out
    rows = credited(db)
    assert sorted(key for key, _ in rows) == sorted([o["order_id"] for o in every] + ["refund:o-7"])
    assert dict(rows)["refund:o-7"] == -10 and dict(rows)["o-7"] == 10
    with sqlite3.connect(db) as conn:
        balances = dict(conn.execute("SELECT user_id, points FROM balances").fetchall())
    assert balances == {f"u{u}": 10 * sum(1 for n in range(80) if n % 3 == u) - (10 if u == 1 else 0) for u in range(3)}

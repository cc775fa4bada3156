"""A scripted load whose every charted quantity is known: what the metrics tests and the dashboard's test assert.

On topic PAY (2 queues), against a broker started with ``BROKER_ENV``:
commits, rollbacks and discards (a check-back server that answers "unknown");
plain sends; group ``billing`` acks everything, ``audit`` nacks everything until
all of it is in its DLQ, ``reporting`` holds two deliveries and acks nothing;
and one half message is left pending (its producer group never heartbeats, so
its check-backs reach nobody and it is never discarded).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx

from tests.support.check_server import CheckServer
from tests.support.waiting import wait_for

BROKER_ENV = {  # with the test brokers' own (tests/conftest.py): retries 0.2 s, 0.4 s, three reconsumes
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
    "HALFMQ_BROKER_TRANSACTION_CHECK_MAX": "3",
    "HALFMQ_BROKER_CHECK_TIMEOUT": "1.0",
}
MAX_RECONSUME_TIMES = 3  # tests/conftest.py's TEST_BROKER_ENV: a message is delivered 4 times before its DLQ
TOPIC = "PAY"
GROUPS = ("audit", "billing", "reporting")


@dataclass(frozen=True)
class Expected:
    commits: int = 3
    rollbacks: int = 2
    discards: int = 1
    sent: int = 6
    held: int = 2  # deliveries ``reporting`` holds
    pending: int = 1  # half messages left open
    check_max: int = 3

    @property
    def on_topic(self) -> int:
        """Messages stored on PAY: the sends and the committed transactions."""
        return self.sent + self.commits

    @property
    def audit_deliveries(self) -> int:
        return self.on_topic * (1 + MAX_RECONSUME_TIMES)


def _post(client: httpx.Client, url: str, body: dict) -> dict:
    resp = client.post(url, json=body)
    resp.raise_for_status()
    return resp.json()


def _receive(client: httpx.Client, group: str, n: int, invisible: float = 30, wait: float = 0) -> list[str]:
    got = _post(client, f"/v1/consumer-groups/{group}/topics/{TOPIC}/receive",
                {"max_messages": n, "invisible_seconds": invisible, "wait_seconds": wait})
    return [m["receipt_handle"] for m in got["messages"]]


def _settle(client: httpx.Client, verb: str, group: str, handles: list[str]) -> None:
    if handles:
        _post(client, f"/v1/consumer-groups/{group}/topics/{TOPIC}/{verb}", {"receipt_handles": handles})


def _half(client: httpx.Client, group: str, body: str) -> str:
    return _post(client, "/v1/transactions", {"producer_group": group, "topic": TOPIC, "message": {"body": body}})["transaction_id"]


def _nack_all(client: httpx.Client, group: str) -> int:
    """Nack what the group is handed now; its DLQ's depth after."""
    _settle(client, "nack", group, _receive(client, group, 32, wait=0.5))
    return client.get(f"/v1/consumer-groups/{group}/dlq").json()["depth"]


def run(client: httpx.Client, checks: CheckServer, joined: Callable[[], object] = lambda: None, want: Expected = Expected()) -> Expected:
    """Drive the load to its end state (about 5 s) and return what it produced.

    The three groups first join (a receive that finds nothing), so their series exist at 0 before anything
    happens to them; then ``joined()`` (a test waits there for Prometheus to scrape those zeros).
    """
    _post(client, "/v1/topics", {"name": TOPIC, "queues": 2})
    for group in GROUPS:
        assert _receive(client, group, 1) == []
    joined()
    checks.answer_state("unknown")
    _post(client, "/v1/producers/heartbeat", {"producer_group": "pg", "client_id": "c1", "check_url": checks.url})
    for i in range(want.discards):
        _half(client, "pg", f"never-ended-{i}")
    for state, n in (("commit", want.commits), ("rollback", want.rollbacks)):
        for i in range(n):
            _post(client, f"/v1/transactions/{_half(client, 'pg', f'{state}-{i}')}/end", {"producer_group": "pg", "state": state})
    wait_for(lambda: len(client.get("/v1/transactions", params={"state": "discarded"}).json()["transactions"]) == want.discards)
    _post(client, f"/v1/topics/{TOPIC}/messages", {"messages": [{"body": f"m{i}"} for i in range(want.sent)]})
    acked = 0
    while acked < want.on_topic:
        handles = _receive(client, "billing", 32, wait=1)
        _settle(client, "ack", "billing", handles)
        acked += len(handles)
    wait_for(lambda: _nack_all(client, "audit") == want.on_topic)
    assert len(_receive(client, "reporting", want.held, invisible=300)) == want.held
    _half(client, "pg-quiet", "left-pending")
    return want

"""Open producer transactions cannot take the broker's memory: a real broker with small caps on held bytes.

The attack from issue 30 (item 9) scaled down: transactional ids fill open transactions up to the broker-wide
cap; the next request gets 429 OPEN_TRANSACTIONS_FULL and nothing of it is kept; an abort gives the bytes back
and the refused request then succeeds. With auth on, one principal at its own cap does not block another.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from halfmq.broker.security.auth_file import AuthFile, PolicyEntry, PrincipalEntry
from tests.support.auth import bearer

from .http_helpers import path, read_all

BODY = "x" * 100_000  # each message request holds a little over 100 kB
CAPS = {"HALFMQ_BROKER_PRODUCER_TXN_MAX_OPEN_BYTES": "450000", "HALFMQ_BROKER_PRODUCER_TXN_MAX_OPEN_BYTES_PER_PRINCIPAL": "250000"}


class Txn:
    def __init__(self, client: httpx.Client, tid: str) -> None:
        self.client, self.tid = client, tid
        answer = self.post("init", {}).json()
        self.fence = {"producer_id": answer["producer_id"], "epoch": answer["epoch"]}
        assert self.post("begin", {**self.fence, "sequence": 0}).status_code == 200
        self.sequence = 0

    def post(self, verb: str, body: dict) -> httpx.Response:
        return self.client.post(path("v1", "transactional-ids", self.tid, verb), json=body)

    def send(self, topic: str = "OUT", sequence: int | None = None) -> httpx.Response:
        """The next messages request (or a retry of ``sequence``): one message of BODY."""
        if sequence is None:
            self.sequence += 1
        number = self.sequence if sequence is None else sequence
        return self.post("messages", {**self.fence, "sequence": number, "messages": [{"topic": topic, "body": BODY}]})

    def abort(self) -> None:
        assert self.post("abort", self.fence).status_code == 200

    def commit(self) -> dict:
        resp = self.post("commit", self.fence)
        assert resp.status_code == 200, resp.text
        return resp.json()


def held_bytes(client: httpx.Client) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("halfmq_producer_transactions_held_bytes "):
            return float(line.split()[1])
    raise AssertionError("no halfmq_producer_transactions_held_bytes in /metrics")


def assert_full(resp: httpx.Response, scope: str) -> None:
    assert resp.status_code == 429, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json") and resp.headers["retry-after"] == "1"
    problem = resp.json()
    assert (problem["code"], problem["scope"], problem["retriable"]) == ("OPEN_TRANSACTIONS_FULL", scope, True)


@pytest.fixture
def client(start_broker) -> Iterator[httpx.Client]:
    broker = start_broker(CAPS)
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        c.post("/v1/topics", json={"name": "OUT", "queues": 1}).raise_for_status()
        yield c


def test_transactions_fill_the_broker_cap_the_next_request_is_refused_and_an_abort_makes_room(client: httpx.Client) -> None:
    txns = [Txn(client, f"filler-{i}") for i in range(5)]
    for t in txns[:4]:
        assert t.send().status_code == 200
    assert_full(txns[4].send(topic="NEVER_CREATED"), "broker")
    assert client.get(path("v1", "topics", "NEVER_CREATED")).status_code == 404  # nothing of it kept, no topic created
    assert client.get(path("v1", "transactional-ids", "filler-4")).json()["open"]["messages"] == 0
    full = held_bytes(client)
    assert 400_000 < full <= 450_000
    txns[0].abort()
    assert held_bytes(client) == full * 3 / 4
    assert txns[4].send(topic="NEVER_CREATED", sequence=1).status_code == 200  # the same number: it was not used up
    assert txns[4].commit()["messages"] == 1
    for t in txns[1:4]:
        t.commit()
    assert held_bytes(client) == 0
    created = client.get(path("v1", "topics", "NEVER_CREATED")).json()["queues"]
    assert len(read_all(client, "OUT", 0)) == 3 and sum(len(read_all(client, "NEVER_CREATED", q)) for q in range(len(created))) == 1


@pytest.fixture
def as_(start_broker, tmp_path: Path) -> Iterator:
    may_copy = [PolicyEntry(actions=["publish"], resources=["topic:OUT", "transactional-id:{name}-*"])]
    auth = AuthFile(principals=[
        PrincipalEntry(name="admin", policies=[PolicyEntry(actions=["admin"], resources=["*"])]),
        *(PrincipalEntry(name=name, policies=[PolicyEntry(actions=p.actions, resources=[r.format(name=name) for r in p.resources])
                                              for p in may_copy]) for name in ("alice", "bob")),
    ])
    tokens = {p.name: auth.add_token(p.name) for p in auth.principals}
    auth.save(tmp_path / "auth.json")
    broker = start_broker({**CAPS, "HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    clients = {name: httpx.Client(base_url=broker.url, timeout=15, headers=bearer(token)) for name, token in tokens.items()}
    clients["admin"].post("/v1/topics", json={"name": "OUT", "queues": 1}).raise_for_status()
    yield clients.__getitem__
    for c in clients.values():
        c.close()


def test_with_auth_on_one_principal_at_its_cap_does_not_block_another(as_) -> None:
    alice = [Txn(as_("alice"), f"alice-{i}") for i in range(3)]
    assert alice[0].send().status_code == 200 and alice[1].send().status_code == 200
    assert_full(alice[2].send(), "principal")  # 2 x 100 kB held: a third passes alice's 250 kB
    bob = [Txn(as_("bob"), f"bob-{i}") for i in range(2)]
    assert all(t.send().status_code == 200 for t in bob)  # the broker holds 400 kB of its 450: bob is not blocked
    alice[0].abort()
    assert alice[2].send(sequence=1).status_code == 200
    assert [t.commit()["messages"] for t in (*alice[1:], *bob)] == [1, 1, 1, 1]
    assert held_bytes(as_("admin")) == 0

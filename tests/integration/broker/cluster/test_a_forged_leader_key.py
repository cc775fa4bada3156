"""Issue 30, item 2: the attacker's steps against a real set (real etcd with auth on, three real brokers with auth on).

Today's code followed whatever `/PREFIX/leader` named: a local process with no credentials put a leader
there and within seconds every node sent it requests with the cluster (admin) token.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from halfmq.broker.cluster.etcd import EtcdClient, EtcdRefused
from tests.support.auth import bearer, write_auth_file
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess

pytestmark = pytest.mark.slow


class FakeLeader:
    """An HTTP server on a free port that answers 200 to anything and counts what it was sent."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.tokens: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                fake.requests.append(f"{self.command} {self.path}")
                if self.headers.get("authorization"):
                    fake.tokens.append(self.headers["authorization"])
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = _any  # noqa: N815 - http.server's names

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def fake_leader() -> Iterator[FakeLeader]:
    server = FakeLeader()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def guarded_set(etcd: EtcdProcess, tmp_path: Path) -> Iterator[tuple[BrokerSet, str]]:
    """Three nodes with broker auth on, replicating with the admin token, as `halfmq up --replicas 3` runs them."""
    _, tokens = write_auth_file(tmp_path / "auth.json")
    (tmp_path / "admin.token").write_text(tokens["admin"] + "\n")
    brokers = BrokerSet(etcd, tmp_path, token=tokens["admin"], env={
        "HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json"), "HALFMQ_BROKER_CLUSTER_TOKEN_FILE": str(tmp_path / "admin.token"),
    }).start()
    try:
        yield brokers, tokens["admin"]
    finally:
        brokers.stop()


def _leader_key(etcd: EtcdProcess) -> dict:
    async def read() -> dict:
        client = EtcdClient(etcd.url, credentials=etcd.root)
        try:
            kv = await client.get("/set/leader")
            assert kv is not None
            return {"claim": kv.json(), "lease": kv.lease}
        finally:
            await client.aclose()
    return asyncio.run(read())


def test_a_put_of_the_leader_key_without_credentials_is_refused_by_etcd(guarded_set: tuple[BrokerSet, str], fake_leader: FakeLeader) -> None:
    brokers, _ = guarded_set
    leader = brokers.leader()
    evil = json.dumps({"node_id": "evil", "url": fake_leader.url})
    refused = httpx.post(f"{brokers.etcd.url}/v3/kv/put", timeout=5,
                         json={"key": base64.b64encode(b"/set/leader").decode(), "value": base64.b64encode(evil.encode()).decode()})
    assert refused.status_code != 200 and "user name is empty" in refused.text

    async def anonymous_put() -> None:
        client = EtcdClient(brokers.etcd.url)
        try:
            await client.put("/set/leader", evil)
        finally:
            await client.aclose()
    with pytest.raises(EtcdRefused):
        asyncio.run(anonymous_put())
    assert _leader_key(brokers.etcd)["claim"]["node_id"] == leader


def test_a_credentialed_writer_naming_a_leader_outside_the_members_is_ignored_and_gets_no_request_and_no_token(
        guarded_set: tuple[BrokerSet, str], fake_leader: FakeLeader) -> None:
    brokers, admin = guarded_set
    leader = brokers.leader()
    url = brokers.nodes[leader].url
    assert httpx.post(f"{url}/v1/topics", json={"name": "orders", "queues": 2}, headers=bearer(admin), timeout=10).status_code in (200, 201)
    forged = [{"node_id": "evil", "url": fake_leader.url},              # an unknown node
              {"node_id": "n2", "url": fake_leader.url},                # a member's id with another URL
              {"node_id": "evil", "url": brokers.nodes["n2"].url}]      # a member's URL with another id
    statuses: list[str] = []

    async def attack(seconds: float) -> None:
        """A compromised etcd writer (root's credentials) keeps putting non-member leaders, with a lease and without."""
        client = EtcdClient(brokers.etcd.url, credentials=brokers.etcd.root)
        try:
            lease = (await client.grant(30)).id
            deadline, i = time.monotonic() + seconds, 0
            while time.monotonic() < deadline:
                await client.put("/set/leader", json.dumps(forged[i % len(forged)]), lease=lease if i % 2 else 0)
                i += 1
                await asyncio.sleep(0.5)
        finally:
            await client.aclose()

    attacker = threading.Thread(target=lambda: asyncio.run(attack(12.0)))
    attacker.start()
    while attacker.is_alive():
        answer = httpx.post(f"{url}/v1/topics/orders/messages", json={"messages": [{"body": "x"}]}, headers=bearer(admin), timeout=15)
        statuses.append(answer.json()["results"][0]["status"] if answer.status_code == 200 else str(answer.status_code))
        time.sleep(0.05)
    attacker.join()

    assert (len(fake_leader.requests), len(fake_leader.tokens)) == (0, 0), fake_leader.requests[:5]
    assert statuses and set(statuses) == {"SEND_OK"}, statuses
    assert brokers.leader(timeout=15) == leader  # the set keeps its real leader ...
    deadline = time.monotonic() + 10
    while _leader_key(brokers.etcd)["claim"] != {"node_id": leader, "url": url} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _leader_key(brokers.etcd)["claim"] == {"node_id": leader, "url": url}  # ... which put its key back
    for node_id in brokers.nodes:
        view = brokers.view(node_id)
        assert view is not None and view["leader"] == {"node_id": leader, "url": url}, (node_id, view)
    answer = httpx.post(f"{url}/v1/topics/orders/messages", json={"messages": [{"body": "after"}]}, headers=bearer(admin), timeout=15)
    assert answer.json()["results"][0]["status"] == "SEND_OK"
    brokers.caught_up()

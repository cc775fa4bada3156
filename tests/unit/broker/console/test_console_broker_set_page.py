"""The console's Broker set page is a table of GET /v1/cluster's nodes, its names inert; on a follower the console renders the
pages a follower has the data of under a banner naming the leader, and answers the rest with a readable page that names the
leader, while an API client still gets the 421 problem+json for what only the leader serves."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from halfmq.broker.config import BrokerSettings
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.runtime.app import create_app
from halfmq.errors import NotLeader
from tests.support.cluster_answers import LEADER_ANSWER, with_node_named
from tests.support.crafted_names import CRAFTED
from tests.support.fake_cluster_node import app_with_fake_node

LEADER_URL = "http://127.0.0.1:36731"
MARKUP = CRAFTED["markup"]


class _Node:
    """What the gate and the cluster route ask of a node, no etcd behind it: it answers ``answer`` and leads while ``writable``."""

    def __init__(self, state: Any) -> None:
        self.state, self.writable, self.answer = state, True, LEADER_ANSWER
        self.leader_url: str | None = LEADER_URL

    @property
    def runtime(self) -> BrokerRuntime:
        rt: BrokerRuntime = self.state.runtime
        return rt

    def not_leader(self) -> NotLeader:
        return NotLeader("this node follows n2", leader_url=self.leader_url)

    async def view(self) -> dict[str, Any]:
        return self.answer


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, _Node]]:
    async with app_with_fake_node(tmp_path, _Node) as (client, app):
        yield client, app.state.cluster


def _rows(page: str) -> list[str]:
    return page.split("<tbody>")[1].split("</tbody>")[0].split("<tr ")[1:]


async def test_the_broker_set_page_is_one_row_per_node_under_the_term_and_the_last_failover(node: Any) -> None:
    client, _ = node
    page = (await client.get("/console/cluster")).text
    rows = _rows(page)
    assert len(rows) == 3 and "<td>leader</td>" in rows[1] and "<td>3072</td>" in rows[2] and "<td>no</td>" in rows[2]
    assert "term 3, leader n2" in page and "n2 leads since term 3, after n1" in page
    assert '<pre>' not in page  # not the raw JSON dump it was


async def test_a_sets_first_election_is_called_so_not_a_failover(node: Any) -> None:
    client, fake = node
    fake.answer = {**LEADER_ANSWER, "last_failover": {"term": 1, "leader": "n2", "previous": None, "timestamp": 1_700_000_000_000}}
    page = (await client.get("/console/cluster")).text
    assert "First election: n2 leads since term 1," in page and "Last failover" not in page


async def test_a_crafted_node_name_comes_out_as_text(node: Any) -> None:
    client, fake = node
    fake.answer = with_node_named(MARKUP)
    page = (await client.get("/console/cluster/fragment")).text
    assert "<img" not in page and html.escape(MARKUP) in page


async def test_on_a_follower_a_console_page_names_the_leader_in_a_readable_page(node: Any) -> None:
    client, fake = node
    fake.writable = False
    answer = await client.get("/console/transactions")
    assert answer.status_code == 421 and answer.headers["content-type"].startswith("text/html")
    assert f'href="{LEADER_URL}/console/transactions"' in answer.text and answer.headers["location"] == f"{LEADER_URL}/console/transactions"
    assert answer.headers["x-frame-options"] == "DENY" and answer.headers["hx-refresh"] == "true"


async def test_on_a_follower_the_broker_set_page_is_served(node: Any) -> None:
    client, fake = node
    fake.writable = False
    answer = await client.get("/console/cluster")
    assert answer.status_code == 200 and len(_rows(answer.text)) == 3


async def test_on_a_follower_with_no_leader_known_the_console_page_retries(node: Any) -> None:
    client, fake = node
    fake.writable, fake.leader_url = False, None
    answer = await client.get("/console/groups")
    assert answer.status_code == 421 and 'http-equiv="refresh"' in answer.text and "location" not in answer.headers


async def test_on_a_follower_an_api_client_still_gets_the_421_problem(node: Any) -> None:
    client, fake = node
    fake.writable = False
    for answer in (await client.get("/v1/transactions"), await client.post("/v1/topics/t/messages", json={"messages": []})):
        assert answer.status_code == 421 and answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["code"] == "NOT_LEADER" and answer.json()["leader_url"] == LEADER_URL


async def test_on_a_follower_the_topics_page_renders_under_a_banner_that_links_to_the_leaders_console(node: Any) -> None:
    client, fake = node
    fake.writable = False
    for path in ("/console/topics", "/console/topics/fragment", "/console/cluster/fragment"):
        answer = await client.get(path)
        assert answer.status_code == 200 and 'id="follower"' in answer.text, path
        assert f'href="{LEADER_URL}{path.removesuffix("/fragment")}"' in answer.text
    assert 'id="follower"' not in (await client.get("/console/topics")).text.split("</header>")[0]  # under the header, once
    fake.writable = True
    assert 'id="follower"' not in (await client.get("/console/topics")).text


async def test_on_a_follower_an_action_answers_the_page_naming_the_leader(node: Any) -> None:
    client, fake = node
    fake.writable = False
    answer = await client.post("/console/groups/g/dlq/0/resend", headers={"x-csrf-token": "x"})
    assert answer.status_code == 421 and f"{LEADER_URL}/console/groups/g/dlq/0/resend" in answer.headers["location"]


async def test_on_a_follower_the_console_opens_on_the_broker_set_and_with_no_leader_known_its_banner_says_so(node: Any) -> None:
    client, fake = node
    fake.writable, fake.leader_url = False, None
    assert (await client.get("/console")).headers["location"] == "/console/cluster"
    page = (await client.get("/console/cluster")).text
    assert "not known yet" in page and 'id="leader"' not in page
    fake.writable = True
    assert (await client.get("/console")).headers["location"] == "/console/transactions"


def test_a_crafted_leader_url_or_detail_comes_out_as_text() -> None:
    from halfmq.broker.console.follower import not_leader_page

    body, _ = not_leader_page("/console/transactions", f'http://x/"{MARKUP}', MARKUP)
    assert b"<img" not in body
    body, headers = not_leader_page("/console/transactions", f"javascript:alert(1)//{MARKUP}", "no")
    assert b"javascript:" not in body and b"location" not in dict(headers)


async def test_a_single_broker_shows_one_row_and_says_so(tmp_path: Path) -> None:
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0)
    runtime = BrokerRuntime.open(settings)
    await runtime.start()
    try:
        app = create_app(settings, runtime)
        app.state.runtime = runtime
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:10911") as client:
            page = (await client.get("/console/cluster")).text
    finally:
        await runtime.stop()
        runtime.store.close()
    assert '<p id="cluster-mode">single node</p>' in page and len(_rows(page)) == 1 and "single node (leader of itself)" in page


async def test_on_a_follower_whose_replication_stopped_the_page_says_why_as_text(node: Any) -> None:
    client, fake = node
    fake.answer = {**LEADER_ANSWER, "node_id": "n3", "role": "follower", "writable": False,
                   "replication_error": f"cannot connect to https://127.0.0.1:36731: its certificate is not trusted {MARKUP}"}
    page = (await client.get("/console/cluster")).text
    assert '<p id="replication-error">Replication from the leader stopped: cannot connect to https://127.0.0.1:36731' in page
    assert MARKUP not in page and html.escape(MARKUP) in page
    fake.answer = LEADER_ANSWER
    assert 'id="replication-error"' not in (await client.get("/console/cluster")).text

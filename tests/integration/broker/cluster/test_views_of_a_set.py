"""A set's views, read by an operator: `halfmq admin cluster show` and the console's Broker set page are tables of the nodes,
and a console page a follower does not render is a page that names the leader (an API client gets the 421 problem+json for
what only the leader serves)."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import threading
import time

import httpx
import pytest

from halfmq import wire
from tests.integration.broker.http_helpers import send
from tests.support.broker_set import BrokerSet
from tests.support.processes import ROOT, halfmq_command

pytestmark = pytest.mark.slow


def _cluster_show(url: str, *extra: str) -> str:
    argv = halfmq_command("admin", "cluster", "show", "--broker", url, *extra)
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "250"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_cli_and_the_console_show_one_row_per_node_and_a_follower_console_names_the_leader(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    leader_url = broker_set.nodes[leader].url
    follower = next(n for n in broker_set.nodes if n != leader)
    follower_url = broker_set.nodes[follower].url
    answer = httpx.get(f"{leader_url}/v1/cluster", timeout=5).json()
    print(json.dumps(answer, indent=2))  # the shape the unit tests record (tests/unit/cli/test_admin_cluster_table.py)
    view = wire.decode(answer, wire.ClusterView)
    assert "brokers" not in answer and "mode" not in answer and len(view.nodes) == 3

    table = _cluster_show(leader_url)
    rows = [line for line in table.splitlines() if line.startswith("│") and any(f" {n} " in line for n in broker_set.nodes)]
    assert len(rows) == 3 and sum(" leader " in r for r in rows) == 1 and f"term {view.term}," in table
    assert {n["node_id"] for n in json.loads(_cluster_show(leader_url, "--json"))["nodes"]} == set(broker_set.nodes)

    for url in (leader_url, follower_url):  # the Broker set page is served on every node, as /v1/cluster is
        page = httpx.get(f"{url}/console/cluster", timeout=5)
        assert page.status_code == 200 and page.text.count("<tr data-node=") == 3, page.text

    console = httpx.get(f"{follower_url}/console/transactions", timeout=5)
    assert console.status_code == 421 and console.headers["content-type"].startswith("text/html")
    assert f'href="{html.escape(leader_url)}/console/transactions"' in console.text
    api = httpx.get(f"{follower_url}/v1/transactions", timeout=5)  # (a follower answers the topics: test_follower_reads.py)
    assert api.status_code == 421 and api.headers["content-type"] == "application/problem+json"
    assert api.json()["code"] == "NOT_LEADER" and api.json()["leader_url"] == leader_url


def _rows(view: dict) -> dict[str, tuple]:
    return {n["node_id"]: (n.get("log_end"), n.get("durable_offset"), n.get("lag"), n.get("in_sync")) for n in view["nodes"]}


def _offsets_in_order(view: dict) -> None:
    """Every row's log end is at least its durable offset, and on the leader its own log end at least every follower's."""
    rows = {n["node_id"]: n for n in view["nodes"]}
    for row in rows.values():
        if row.get("log_end") is not None:
            assert row["log_end"] >= row["durable_offset"], row
    if view["role"] == "leader":
        own = rows[view["node_id"]]["log_end"]
        assert all(r["log_end"] <= own for r in rows.values() if r.get("log_end") is not None), rows


def test_while_sends_run_a_row_never_shows_its_log_end_below_its_durable_offset_nor_the_leaders_below_a_followers(
        broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    leader_url = broker_set.nodes[leader].url
    with httpx.Client(base_url=leader_url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "views", "queues": 1}).raise_for_status()
    done = threading.Event()

    def load() -> None:
        with httpx.Client(base_url=leader_url, timeout=10) as sender:
            while not done.is_set():
                send(sender, "views", *["x" * 100] * 20)

    sender = threading.Thread(target=load)
    sender.start()
    try:
        for _ in range(40):
            for node in broker_set.nodes.values():
                _offsets_in_order(httpx.get(f"{node.url}/v1/cluster", timeout=5).json())
            time.sleep(0.05)
    finally:
        done.set()
        sender.join()


def test_a_follower_shows_the_leaders_figures_of_every_node_and_says_whose_and_how_old(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    leader_url = broker_set.nodes[leader].url
    follower = next(n for n in broker_set.nodes if n != leader)
    follower_url = broker_set.nodes[follower].url
    with httpx.Client(base_url=leader_url, timeout=10) as client:
        client.post("/v1/topics", json={"name": "views", "queues": 1}).raise_for_status()
        send(client, "views", "one", "two", "three")
    broker_set.caught_up()
    deadline, seen = time.monotonic() + 30, ({}, {})
    while time.monotonic() < deadline:  # an idle set: the leader's picture reaches the follower within a second or two
        seen = (httpx.get(f"{leader_url}/v1/cluster", timeout=5).json(), httpx.get(f"{follower_url}/v1/cluster", timeout=5).json())
        if _rows(seen[0]) == _rows(seen[1]):
            break
        time.sleep(0.2)
    on_leader, on_follower = seen
    assert _rows(on_follower) == _rows(on_leader), seen
    assert all(in_sync is True and None not in (end, durable, lag) for end, durable, lag, in_sync in _rows(on_follower).values())
    assert on_follower["in_sync"] == on_leader["in_sync"] == sorted(broker_set.nodes)
    assert on_follower["picture_from"] == leader and 0 <= on_follower["picture_age_seconds"] < 10
    assert on_leader["picture_from"] is None and on_leader["picture_age_seconds"] is None

    table = _cluster_show(follower_url)
    rows = [line for line in table.splitlines() if line.startswith("│") and any(f" {n} " in line for n in broker_set.nodes)]
    assert len(rows) == 3 and all(" yes " in r and " - " not in r for r in rows), table
    assert f"the leader {leader}'s figures" in table and "first election:" in table and "last failover" not in table

    page = httpx.get(f"{follower_url}/console/cluster", timeout=5).text
    cells = re.findall(r'<tr data-node="[^"]+".*?</tr>', page, re.S)
    assert len(cells) == 3 and all(c.count("<td>yes</td>") == 1 and "<td>-</td>" not in c for c in cells), page
    assert f"leader {leader}'s figures" in page and 'id="picture-age"' in page and "First election" in page


def test_a_login_on_a_follower_lands_on_a_page_the_follower_shows(broker_set: BrokerSet) -> None:
    leader = broker_set.leader()
    follower_url = next(p.url for n, p in broker_set.nodes.items() if n != leader)
    with httpx.Client(base_url=follower_url, timeout=10, follow_redirects=True) as browser:
        landed = browser.post("/console/login", data={"token": ""})
    assert landed.status_code == 200 and landed.url.path == "/console/cluster", (landed.url, landed.text)
    assert 'id="follower"' in landed.text and "does not lead" not in landed.text

"""A set's views, read by an operator: `halfmq admin cluster show` and the console's Broker set page are tables of the nodes,
and a console page a follower does not render is a page that names the leader (an API client gets the 421 problem+json for
what only the leader serves)."""

from __future__ import annotations

import html
import json
import os
import subprocess

import httpx
import pytest

from halfmq import wire
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

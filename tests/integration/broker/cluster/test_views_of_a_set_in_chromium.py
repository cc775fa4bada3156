"""A set's Broker set page in a real Chromium, auth on (issue 45): an operator who logs in on a follower lands on that page, not
on a "does not lead" page, and it shows every node in sync with the same figures as the leader's page, saying whose they are."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from halfmq.cli.credentials import ensure_credentials
from tests.integration.broker.console.chromium import wait_until
from tests.integration.broker.http_helpers import send
from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROWS = """return Array.from(document.querySelectorAll('#cluster tbody tr')).map(
    tr => Array.from(tr.querySelectorAll('td')).map(td => td.textContent.trim()));"""



@pytest.fixture
def guarded_set(etcd: EtcdProcess, tmp_path: Path) -> Iterator[tuple[BrokerSet, str]]:
    """Three nodes with auth on, and the admin token an operator logs in with."""
    creds, _ = ensure_credentials(tmp_path / "auth")
    brokers = BrokerSet(etcd, tmp_path, token=creds.token("admin"), env={
        "HALFMQ_BROKER_AUTH_FILE": str(creds.auth_file), "HALFMQ_BROKER_CLUSTER_TOKEN_FILE": str(creds.token_file("admin")),
    }).start()
    try:
        yield brokers, creds.token("admin")
    finally:
        brokers.stop()



def _log_in(browser: Any, url: str, token: str) -> None:
    browser.get(f"{url}/console/login")
    field = browser.find_element("css selector", "input[name=token]")
    field.send_keys(token)
    field.submit()


def _rows(browser: Any, url: str) -> list[list[str]]:
    browser.get(f"{url}/console/cluster")
    wait_until(lambda: len(browser.execute_script(ROWS)) == 3, 15, "three rows")
    rows: list[list[str]] = browser.execute_script(ROWS)
    return [[cell for i, cell in enumerate(row) if i != 2] for row in rows]  # (without the URL column: the same on both)


def test_a_login_on_a_follower_lands_on_its_broker_set_page_with_the_leaders_in_sync_figures(
        guarded_set: tuple[BrokerSet, str], browser: Any) -> None:
    brokers, token = guarded_set
    leader = brokers.leader()
    leader_url = brokers.nodes[leader].url
    follower_url = next(p.url for n, p in brokers.nodes.items() if n != leader)
    with httpx.Client(base_url=leader_url, timeout=10, headers={"authorization": f"Bearer {token}"}) as client:
        client.post("/v1/topics", json={"name": "views", "queues": 1}).raise_for_status()
        send(client, "views", "one", "two", "three")
    brokers.caught_up()

    _log_in(browser, follower_url, token)
    wait_until(lambda: browser.current_url.endswith("/console/cluster"), 15, "the follower's Broker set page after the login")
    assert "does not lead" not in browser.page_source and browser.find_elements("css selector", "#follower")
    on_follower: list[list[str]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the leader's picture reaches the follower within a second or two
        on_follower = _rows(browser, follower_url)
        # (a picture is up to a second old: the first one, sent as the follower started, may predate the sends)
        if all(row[-1] == "yes" for row in on_follower) and len({tuple(row[2:4]) for row in on_follower}) == 1:
            break
        time.sleep(0.5)
    assert all(row[-1] == "yes" and "-" not in row for row in on_follower), on_follower
    assert f"leader {leader}'s figures" in browser.find_element("css selector", "#picture").text

    _log_in(browser, leader_url, token)
    wait_until(lambda: browser.current_url.endswith("/console/transactions"), 15, "the leader's console after the login")
    assert _rows(browser, leader_url) == on_follower

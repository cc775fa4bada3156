"""The console in a real Chromium against a real broker: an operator finds and resolves what hangs.

A half message whose producer never registered hangs (checks never reach
anyone); one whose producer answers "unknown" is discarded after
TRANSACTION_CHECK_MAX checks. The page lists the first, a force commit from it
delivers the message to a consumer; a resend of the second (its producer now
answering commit) delivers it too; a DLQ message resent from the page is
delivered again; lag shows after sends; an order's message, nacked once with a reason, shows its journey. Screenshots go to
$HALFMQ_CONSOLE_SCREENSHOTS (docs/img/ holds one of each page) or the test's tmp dir.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from halfmq.client import Producer
from halfmq.client.simple_consumer import SimpleConsumer
from tests.integration.broker.http_helpers import path, receive, send
from tests.support.auth import write_auth_file
from tests.support.waiting import wait_for

from .chromium import click_and_confirm, wait_for_css, wait_until

FAST_CHECKS = {
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
    "HALFMQ_BROKER_TRANSACTION_CHECK_MAX": "3",
    "HALFMQ_BROKER_CHECK_TIMEOUT": "1.0",
}


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    where = Path(os.environ.get("HALFMQ_CONSOLE_SCREENSHOTS") or tmp_path / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    return where



def half(client: httpx.Client, group: str, body: str) -> str:
    resp = client.post("/v1/transactions", json={"producer_group": group, "topic": "ORDERS", "message": {"body": body}})
    resp.raise_for_status()
    return resp.json()["transaction_id"]


def test_an_operator_resolves_hanging_and_discarded_transactions_and_dead_letters_from_the_console(
        start_broker, browser, checks, shots) -> None:
    broker = start_broker(FAST_CHECKS)
    client = httpx.Client(base_url=broker.url, timeout=15)
    client.post("/v1/topics", json={"name": "ORDERS", "queues": 2}).raise_for_status()
    client.post("/v1/producers/heartbeat", json={"producer_group": "pg_unsure", "client_id": "c1", "check_url": checks.url}).raise_for_status()
    hanging = half(client, "pg_gone", "order 42 paid")
    unsure = half(client, "pg_unsure", "order 43 paid")

    browser.get(f"{broker.url}/console/transactions")
    wait_for_css(browser, f'#pending tr.hanging[data-transaction="{hanging}"]')
    wait_for_css(browser, f'#discarded tr[data-transaction="{unsure}"]')  # polled in: no reload
    browser.save_screenshot(str(shots / "console-transactions.png"))

    asked = click_and_confirm(browser, f'#pending tr[data-transaction="{hanging}"] button.commit')
    assert "COMMIT" in asked and hanging in asked
    wait_for_css(browser, f'#pending tr[data-transaction="{hanging}"]', present=False)
    assert client.get(f"/v1/transactions/{hanging}").json()["state"] == "committed"
    assert [m["body"] for m in receive(client, "shipping", "ORDERS", wait=2)] == ["order 42 paid"]

    checks.answer_state("commit")  # the producer knows now: a resend gets it committed
    click_and_confirm(browser, f'#discarded tr[data-transaction="{unsure}"] button.resend')
    wait_for(lambda: client.get(f"/v1/transactions/{unsure}").json()["state"] == "committed", timeout=20)
    assert [m["body"] for m in receive(client, "shipping", "ORDERS", wait=2)] == ["order 43 paid"]

    # Dead letters: conftest's broker moves a message to the DLQ after 3 deliveries.
    send(client, "ORDERS", "poison")

    def nacked_into_dlq() -> bool:
        for m in receive(client, "shipping", "ORDERS", invisible=0.2):
            client.post(path("v1", "consumer-groups", "shipping", "topics", "ORDERS", "nack"), json={"receipt_handles": [m["receipt_handle"]]})
        return client.get("/v1/consumer-groups/shipping/dlq").json()["depth"] == 1

    wait_for(nacked_into_dlq, timeout=20, interval=0.3)
    send(client, "ORDERS", "a", "b", "c")  # lag
    browser.get(f"{broker.url}/console/groups")
    wait_for_css(browser, '[data-group="shipping"] tr[data-dlq-offset="0"]')
    lag = browser.find_element("css selector", '[data-group="shipping"] .lag').text
    assert int(lag) >= 3
    browser.save_screenshot(str(shots / "console-groups.png"))
    click_and_confirm(browser, '[data-group="shipping"] tr[data-dlq-offset="0"] button.dlq-resend')
    wait_for_css(browser, "#flash")
    again = wait_for(lambda: [m for m in receive(client, "shipping", "ORDERS", n=32) if m["body"] == "poison"], timeout=10)
    assert again[0]["properties"]["DLQ_RESENT_FROM"] == "%DLQ%shipping@0"

    client.post("/v1/transactional-ids/copier/init", json={}).raise_for_status()
    for page, css in (("topics", '#topics tr[data-topic="ORDERS"]'), ("producers", "#producers"),
                      ("transactional-ids", '#transactional-ids tr[data-tid="copier"]'), ("cluster", "#cluster-mode")):
        browser.get(f"{broker.url}/console/{page}")
        wait_for_css(browser, css)
        browser.save_screenshot(str(shots / f"console-{page}.png"))
    assert browser.find_element("css selector", "#cluster-mode").text in ("single node", "replicated")
    client.close()


def test_the_messages_page_shows_an_order_s_journey_as_a_timeline(start_broker, browser, shots) -> None:
    broker = start_broker()
    with Producer(broker.url) as producer, SimpleConsumer(broker.url, "billing", "ORDERS") as billing:
        producer.create_topic("ORDERS", 2)
        sent = producer.send("ORDERS", {"order": 1042, "total": "59.90"}, keys=["order-1042"], tag="created")
        [first] = wait_for(lambda: billing.receive(1, wait_seconds=2), timeout=30)
        assert first.receipt_handle
        billing.nack([first.receipt_handle], reason="ValueError: db down")
        [again] = wait_for(lambda: billing.receive(1, wait_seconds=2), timeout=30)
        assert again.receipt_handle
        billing.ack([again.receipt_handle])

    browser.get(f"{broker.url}/console/messages?q=order-1042")
    wait_for_css(browser, f'#messages a[href$="{sent.msg_id}"]')  # the key's messages: this one, linked to its journey
    browser.get(f"{broker.url}/console/messages?q={sent.msg_id}")
    wait_for_css(browser, f'#journey[data-msg-id="{sent.msg_id}"] ol.timeline li.event.acked')
    # read in one script: the page re-renders itself while the test reads it
    events = browser.execute_script("return [...document.querySelectorAll('#journey ol.timeline li.event')]"
                                    ".map(li => [li.classList[1], li.innerText])")
    assert [kind for kind, _ in events] == ["sent", "delivered", "nacked", "delivered", "acked"]
    nacked = events[2][1]
    assert "billing" in nacked and "attempt 1" in nacked and "ValueError: db down" in nacked, nacked
    browser.set_window_size(1100, 640)  # the README's picture: the timeline, not the empty page below it
    browser.save_screenshot(str(shots / "console-messages.png"))


def test_dead_letters_page_by_fifty_say_how_many_and_when_and_producers_show_their_last_heartbeat(start_broker, browser) -> None:
    broker = start_broker()
    client = httpx.Client(base_url=broker.url, timeout=15)
    client.post("/v1/topics", json={"name": "ORDERS", "queues": 1}).raise_for_status()
    client.post("/v1/producers/heartbeat", json={"producer_group": "pg", "client_id": "c1", "check_url": "http://127.0.0.1:9/check"})
    send(client, "ORDERS", *[f"poison {i}" for i in range(55)])

    def nacked_into_dlq() -> bool:  # conftest's broker moves a message to the DLQ after 3 deliveries
        handles = [m["receipt_handle"] for m in receive(client, "shipping", "ORDERS", invisible=0.2)]
        if handles:
            client.post(path("v1", "consumer-groups", "shipping", "topics", "ORDERS", "nack"), json={"receipt_handles": handles})
        return client.get("/v1/consumer-groups/shipping/dlq").json()["depth"] == 55

    wait_for(nacked_into_dlq, timeout=60, interval=0.1)
    browser.get(f"{broker.url}/console/groups")
    wait_for_css(browser, '[data-group="shipping"] tr[data-dlq-offset="49"]')
    assert browser.find_elements("css selector", '[data-group="shipping"] tr[data-dlq-offset="50"]') == []
    counts = browser.find_element("css selector", '[data-group="shipping"] .dlq-page').text
    assert "50 of 55" in counts, counts
    reason = browser.find_element("css selector", '[data-group="shipping"] tr[data-dlq-offset="0"] .dlq-reason').text
    assert reason == "4 deliveries, none acked; the last was nacked", reason  # conftest: 3 reconsumes
    arrived = browser.find_element("css selector", '[data-group="shipping"] tr[data-dlq-offset="0"] time').text
    assert arrived.endswith("ago") or arrived == "now", arrived

    browser.find_element("css selector", '[data-group="shipping"] a.dlq-next').click()
    wait_for_css(browser, '[data-group="shipping"] tr[data-dlq-offset="54"]')
    assert "5 of 55" in browser.find_element("css selector", '[data-group="shipping"] .dlq-page').text
    browser.execute_script("document.body.addEventListener('htmx:afterSwap', () => { window.__swaps = (window.__swaps || 0) + 1 })")
    wait_until(lambda: (browser.execute_script("return window.__swaps || 0") or 0) >= 1, 15, "the page to poll")
    assert browser.find_elements("css selector", '[data-group="shipping"] tr[data-dlq-offset="54"]')  # and still on page two
    assert browser.find_elements("css selector", '[data-group="shipping"] tr[data-dlq-offset="0"]') == []

    browser.get(f"{broker.url}/console/producers")
    wait_for_css(browser, "#producers time")
    heard = browser.find_element("css selector", "#producers time").text
    assert heard.endswith("ago") or heard == "now", heard
    client.close()


def test_under_auth_the_console_asks_for_an_admin_token_and_keeps_it_in_an_httponly_cookie(start_broker, browser, tmp_path) -> None:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    broker = start_broker({"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    browser.get(f"{broker.url}/console/transactions")
    wait_until(lambda: browser.current_url.endswith("/console/login"), 10, "the login page")
    field = browser.find_element("css selector", "input[name=token]")
    field.send_keys(tokens["credit"])  # a valid token, but no admin
    field.submit()
    wait_until(lambda: "may not" in browser.page_source, 10, "a refusal")
    browser.get(f"{broker.url}/console/login")
    field = browser.find_element("css selector", "input[name=token]")
    field.send_keys(tokens["admin"])
    field.submit()
    wait_for_css(browser, "#pending")
    [cookie] = [c for c in browser.get_cookies() if c["name"] == "halfmq_console"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert browser.execute_script("return document.cookie") == ""  # page scripts cannot read the token


def test_a_console_post_without_the_csrf_token_changes_nothing(start_broker) -> None:
    broker = start_broker()
    client = httpx.Client(base_url=broker.url, timeout=15)
    client.post("/v1/topics", json={"name": "ORDERS", "queues": 1}).raise_for_status()
    txid = half(client, "pg", "x")
    assert client.post(f"/console/transactions/{txid}/commit").status_code == 403
    assert client.post(f"/console/transactions/{txid}/commit", headers={"x-csrf-token": "0" * 64}).status_code == 403
    assert client.get(f"/v1/transactions/{txid}").json()["state"] == "pending"
    client.close()

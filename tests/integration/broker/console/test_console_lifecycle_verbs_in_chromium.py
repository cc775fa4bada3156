"""The operator's lifecycle verbs from the console, in a real Chromium against a real broker: plan and apply an offset
reset, redrive a DLQ and stop it while it runs, recall a delayed message, delete a consumer group and a topic; and a
token that may not administer the broker, or a post without the page's CSRF token, changes nothing."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.broker.http_helpers import group_state, path, receive, send
from tests.support.auth import write_auth_file
from tests.support.waiting import wait_for

from .chromium import click_and_confirm, wait_for_css

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]




def _committed(client: httpx.Client, group: str, topic: str) -> int:
    return group_state(client, group)[topic][0]["committed_offset"]


def _ack_all(client: httpx.Client, group: str, topic: str) -> list[str]:
    got = receive(client, group, topic, wait=1)
    if got:
        client.post(path("v1", "consumer-groups", group, "topics", topic, "ack"),
                    json={"receipt_handles": [m["receipt_handle"] for m in got]}).raise_for_status()
    return [m["body"] for m in got]


def _flash_says(browser, words: str, timeout: float = 15) -> str:
    """The action's answer, once the table's refresh shows it (read in one script: the page re-renders itself)."""
    return wait_for(lambda: (text := browser.execute_script("return document.querySelector('#flash')?.textContent || ''"))
                    and words in text and text, timeout=timeout)


def _fill_reset(browser, group: str, topic: str, to: str, value: str = "") -> None:
    from selenium.webdriver.support.ui import Select

    form = browser.find_element("css selector", "#reset-offsets")
    for name, text in (("group", group), ("topic", topic), ("value", value)):
        field = form.find_element("css selector", f"input[name={name}]")
        field.clear()
        field.send_keys(text)
    Select(form.find_element("css selector", "select[name=to]")).select_by_value(to)


def _fill_recall(browser, topic: str, handle: str) -> None:
    form = browser.find_element("css selector", "#recall-message")
    for name, text in (("topic", topic), ("recall_handle", handle)):
        field = form.find_element("css selector", f"input[name={name}]")
        field.clear()
        field.send_keys(text)


def _fill_retention(browser, topic: str, retention: str, retention_bytes: str) -> None:
    form = browser.find_element("css selector", "#topic-retention")
    for name, text in (("topic", topic), ("retention", retention), ("retention_bytes", retention_bytes)):
        field = form.find_element("css selector", f"input[name={name}]")
        field.clear()
        field.send_keys(text)


def _change_retention_says(browser, words: str) -> str:
    """Post the retention form and read its answer. A poll of the table sent before the post and answered after it
    replaces the flash at once (on a loaded machine): the form is posted again then; each post here changes the same
    thing or nothing."""
    for _ in range(3):
        click_and_confirm(browser, "#topic-retention button.retention-change")
        try:
            return _flash_says(browser, words, timeout=5)
        except AssertionError:
            continue
    raise AssertionError(f"the console never answered {words!r}")


def test_an_operator_changes_a_topics_retention_from_the_console_as_the_patch_does(start_broker, browser) -> None:
    broker = start_broker()
    client = httpx.Client(base_url=broker.url, timeout=15)
    client.post("/v1/topics", json={"name": "ORDERS", "queues": 1}).raise_for_status()
    browser.get(f"{broker.url}/console/topics")
    wait_for_css(browser, '#topics tr[data-topic="ORDERS"]')
    _fill_retention(browser, "ORDERS", "12h", "5000")
    asked = click_and_confirm(browser, "#topic-retention button.retention-change")
    assert "older messages unreadable" in asked
    wait_for(lambda: (d := client.get("/v1/topics/ORDERS").json()).get("retention_ms") == 43_200_000
             and d.get("retention_bytes") == 5000, timeout=15)
    wait_for(lambda: browser.find_element("css selector", '#topics tr[data-topic="ORDERS"] td.retention').text
             == "12 h, 5000 bytes a queue", timeout=15)

    _fill_retention(browser, "ORDERS", "", "broker")  # blank leaves the age; "broker" puts the broker's size back
    _change_retention_says(browser, "retention of ORDERS: 12 h by age, the broker's by size")
    described = client.get("/v1/topics/ORDERS").json()
    assert described["retention_ms"] == 43_200_000 and "retention_bytes" not in described

    _fill_retention(browser, "ORDERS", "soon", "")
    _change_retention_says(browser, "refused: INVALID_RETENTION: retention_ms: 'soon' does not read")
    _fill_retention(browser, "ORDERS", "0.5s", "")  # under the API's bounds (1,000 ms the least): its own refusal
    _change_retention_says(browser, "refused: INVALID_RETENTION: retention_ms is 1000")
    _fill_retention(browser, "NOPE", "1h", "")
    _change_retention_says(browser, "TOPIC_NOT_FOUND")
    assert client.get("/v1/topics/ORDERS").json()["retention_ms"] == 43_200_000  # the refusals changed nothing
    client.close()


def test_an_operator_plans_and_applies_a_reset_redrives_a_dlq_and_deletes_a_group_and_a_topic_from_the_console(
        start_broker, browser) -> None:
    broker = start_broker({"HALFMQ_BROKER_DLQ_REDRIVE_RATE": "0.1"})  # one resend each 10 s: still running when stopped
    client = httpx.Client(base_url=broker.url, timeout=15)
    for topic in ("ORDERS", "JOBS", "SCRATCH"):
        client.post("/v1/topics", json={"name": topic, "queues": 1}).raise_for_status()
    send(client, "ORDERS", "m0", "m1", "m2")
    assert _ack_all(client, "billing", "ORDERS") == ["m0", "m1", "m2"]
    wait_for(lambda: _committed(client, "billing", "ORDERS") == 3, timeout=10)

    browser.get(f"{broker.url}/console/groups")
    wait_for_css(browser, '[data-group="billing"]')
    _fill_reset(browser, "billing", "ORDERS", "earliest")
    browser.find_element("css selector", "#reset-offsets button.reset-plan").click()
    planned = _flash_says(browser, "plan (dry run)")
    assert "q0 3→0" in planned, planned
    assert _committed(client, "billing", "ORDERS") == 3  # a plan changes nothing

    asked = click_and_confirm(browser, "#reset-offsets button.reset-apply")
    assert "committed offsets" in asked
    wait_for(lambda: _committed(client, "billing", "ORDERS") == 0, timeout=10)
    assert _ack_all(client, "billing", "ORDERS") == ["m0", "m1", "m2"]  # read again from the earliest

    _fill_reset(browser, "billing", "ORDERS", "timestamp", "not a time")
    browser.find_element("css selector", "#reset-offsets button.reset-plan").click()
    _flash_says(browser, "INVALID_OFFSET_RESET")

    # Three dead letters for "shipping" (the test broker dead-letters after 3 reconsumes), redriven at 0.5/s: stopped
    # while it runs, with what it resent so far shown.
    send(client, "JOBS", "p0", "p1", "p2")

    def nacked_into_dlq() -> bool:
        handles = [m["receipt_handle"] for m in receive(client, "shipping", "JOBS", invisible=0.2)]
        if handles:
            client.post(path("v1", "consumer-groups", "shipping", "topics", "JOBS", "nack"), json={"receipt_handles": handles})
        return client.get("/v1/consumer-groups/shipping/dlq").json()["depth"] == 3

    wait_for(nacked_into_dlq, timeout=30, interval=0.2)
    browser.get(f"{broker.url}/console/groups")
    asked = click_and_confirm(browser, '[data-group="shipping"] button.redrive-start')
    assert "3 dead letters" in asked
    _flash_says(browser, "redriving 3 dead letters of shipping at 0.1/s")
    wait_for_css(browser, '[data-group="shipping"] button.redrive-stop')  # running: its progress and a stop
    browser.find_element("css selector", '[data-group="shipping"] button.redrive-stop').click()
    _flash_says(browser, "stopped the redrive of shipping's DLQ")
    wait_for_css(browser, '[data-group="shipping"] .redrive-state')
    assert browser.find_element("css selector", '[data-group="shipping"] .redrive-state').text == "stopped"
    redrive = client.get("/v1/consumer-groups/shipping/dlq/redrive").json()
    assert redrive["state"] == "stopped" and redrive["resent"] < 3

    # The group, then the topic.
    asked = click_and_confirm(browser, '[data-group="billing"] button.group-delete')
    assert "Delete consumer group billing" in asked
    wait_for_css(browser, '[data-group="billing"]', present=False)
    assert client.get(path("v1", "consumer-groups", "billing")).status_code == 404

    browser.get(f"{broker.url}/console/topics")
    asked = click_and_confirm(browser, '#topics tr[data-topic="SCRATCH"] button.topic-delete')
    assert "Delete topic SCRATCH" in asked
    wait_for_css(browser, '#topics tr[data-topic="SCRATCH"]', present=False)
    assert client.get("/v1/topics/SCRATCH").status_code == 404
    assert client.get("/v1/topics/ORDERS").status_code == 200
    client.close()


def test_an_operator_recalls_a_delayed_message_from_the_console_and_a_made_up_handle_is_refused(start_broker, browser) -> None:
    broker = start_broker()
    client = httpx.Client(base_url=broker.url, timeout=15)
    client.post("/v1/topics", json={"name": "ORDERS", "queues": 1}).raise_for_status()
    [timed] = send(client, "ORDERS", "late", delay_ms=60_000)
    browser.get(f"{broker.url}/console/messages")
    _fill_recall(browser, "ORDERS", "not-a-handle")
    click_and_confirm(browser, "#recall-message button.recall")
    _flash_says(browser, "INVALID_RECALL_HANDLE")
    _fill_recall(browser, "ORDERS", timed["recall_handle"])
    asked = click_and_confirm(browser, "#recall-message button.recall")
    assert "never be delivered" in asked
    assert "recalled already" not in _flash_says(browser, f"recalled {timed['msg_id']} on ORDERS")
    again = client.post(path("v1", "topics", "ORDERS", "recall"), json={"recall_handle": timed["recall_handle"]})
    assert again.status_code == 200 and again.json()["duplicate"] is True

    client.close()


def test_a_verb_posted_without_an_admin_session_or_without_the_pages_csrf_token_changes_nothing(start_broker, tmp_path) -> None:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    broker = start_broker({"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")})
    admin = httpx.Client(base_url=broker.url, timeout=15, headers={"authorization": f"Bearer {tokens['admin']}"})
    admin.post("/v1/topics", json={"name": "ORDERS", "queues": 1}).raise_for_status()

    [timed] = send(admin, "ORDERS", "late", delay_ms=60_000)
    for cookie in (tokens["credit"], tokens["admin"]):  # not an admin; an admin, but no CSRF token
        answer = httpx.post(f"{broker.url}/console/topics/ORDERS/delete", cookies={"halfmq_console": cookie}, timeout=15)
        assert answer.status_code == 403, answer.text
        answer = httpx.post(f"{broker.url}/console/messages/recall", cookies={"halfmq_console": cookie}, timeout=15,
                            data={"topic": "ORDERS", "recall_handle": timed["recall_handle"]})
        assert answer.status_code == 403, answer.text
        answer = httpx.post(f"{broker.url}/console/topics/retention", cookies={"halfmq_console": cookie}, timeout=15,
                            data={"topic": "ORDERS", "retention": "1s"})
        assert answer.status_code == 403, answer.text
    assert admin.get("/v1/topics/ORDERS").status_code == 200
    assert "retention_ms" not in admin.get("/v1/topics/ORDERS").json()  # the refused retention form changed nothing
    first = admin.post(path("v1", "topics", "ORDERS", "recall"), json={"recall_handle": timed["recall_handle"]})
    assert first.status_code == 200 and "duplicate" not in first.json()  # the refused posts recalled nothing
    admin.close()

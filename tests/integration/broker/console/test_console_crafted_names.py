"""A transactional id with a crafted name, aborted from the console in a real Chromium, aborts that id and nothing else.

The API now refuses such a name (broker/messages/names.py), but a broker older than the
rule took any: the id is written into the store below the rule, as an old log
would hold it, and the broker restarted on it. Before the console encoded its
path segments, the id ``..\\transactions\\<victim>\\rollback#`` put into
``hx-post="/console/transactional-ids/{tid}/abort"`` made Chromium post
``/console/transactions/<victim>/rollback``: the operator's confirmed "Abort"
rolled back another group's pending order.
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import httpx

from tests.conftest import TEST_BROKER_ENV
from tests.integration.broker.http_helpers import path
from tests.support.auth import bearer, write_auth_file
from tests.support.crafted_names import CRAFTED, steering_name, write_stored_init, write_stored_inits

from .chromium import click_and_confirm, wait_for_css, wait_until
from .test_console_in_chromium import half

STORED_PRODUCER_ID = 4242


class OpenTxn:
    def __init__(self, client: httpx.Client, tid: str, producer_id: int, epoch: int) -> None:
        self.client, self.tid, self.fence = client, tid, {"producer_id": producer_id, "epoch": epoch}

    def post(self, verb: str, **body: object) -> dict:
        resp = self.client.post(path("v1", "transactional-ids", self.tid, verb), json={**self.fence, **body})
        assert resp.status_code == 200, resp.text
        return resp.json()

    def open_with(self, topic: str, body: str) -> None:
        self.post("begin", sequence=0)
        self.post("messages", sequence=1, messages=[{"topic": topic, "body": body}])


def tid_state(client: httpx.Client, tid: str) -> dict:
    [view] = [t for t in client.get("/v1/transactional-ids").json()["transactional_ids"] if t["transactional_id"] == tid]
    return view


def path_segment(name: str) -> str:
    return quote(name, safe="")  # what the console's segment filter must write (tests/unit/broker/console/test_console_templates.py)


def css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def test_aborting_a_crafted_transactional_id_from_the_console_aborts_only_that_id(start_broker, browser, tmp_path) -> None:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    broker = start_broker({"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json"), "HALFMQ_BROKER_TRANSACTION_CHECK_MAX": "1000"})
    client = httpx.Client(base_url=broker.url, timeout=15, headers=bearer(tokens["admin"]))
    client.post("/v1/topics", json={"name": "ORDER_TOPIC", "queues": 1}).raise_for_status()
    victim = half(client, "order_producer_group", "order 42 paid")  # the order flow's pending half: not the operator's target
    crafted = steering_name(victim)

    broker.stop()  # what an older broker left on disk: an id under the crafted name
    write_stored_init(broker.data_dir, crafted, STORED_PRODUCER_ID, int(TEST_BROKER_ENV["HALFMQ_BROKER_SEGMENT_BYTES"]))
    broker.start()
    OpenTxn(client, crafted, STORED_PRODUCER_ID, 0).open_with("COPIES", "stuck")
    copier = client.post("/v1/transactional-ids/copier/init", json={}).json()
    OpenTxn(client, "copier", copier["producer_id"], copier["epoch"]).open_with("COPIES", "bystander")

    browser.get(f"{broker.url}/console/login")
    field = browser.find_element("css selector", "input[name=token]")
    field.send_keys(tokens["admin"])
    field.submit()
    wait_for_css(browser, "#pending")
    browser.get(f"{broker.url}/console/transactional-ids")
    row = f"#transactional-ids tr[data-tid={css_string(crafted)}]"
    wait_for_css(browser, f"{row} button.abort")
    asked = click_and_confirm(browser, f"{row} button.abort")
    assert crafted in asked
    wait_for_css(browser, "#flash")

    assert client.get(f"/v1/transactions/{victim}").json()["state"] == "pending", "the abort reached the victim's transaction"
    wait_until(lambda: tid_state(client, crafted)["state"] == "COMPLETE_ABORT", 10, "the crafted id's transaction aborted")
    assert tid_state(client, crafted)["aborted_by"] == "operator"
    assert tid_state(client, "copier")["state"] == "ONGOING"
    audit = broker.log_path.read_text(errors="replace")
    assert f"/console/transactions/{victim}/rollback" not in audit
    assert f"path=/console/transactional-ids/{crafted}/abort" in audit
    client.close()


def test_ids_stored_under_crafted_names_are_still_listed_and_abortable_from_the_console_without_a_500(start_broker) -> None:
    broker = start_broker()
    broker.stop()
    stored = {name: 5000 + n for n, name in enumerate(n for n in CRAFTED.values() if n)}
    write_stored_inits(broker.data_dir, stored, int(TEST_BROKER_ENV["HALFMQ_BROKER_SEGMENT_BYTES"]))
    broker.start()
    client = httpx.Client(base_url=broker.url, timeout=15)
    addressable = [name for name in stored if name != ".."]  # a bare ".." segment is resolved by every client: no URL names it
    for name in addressable:
        OpenTxn(client, name, stored[name], 0).open_with("COPIES", "stuck")

    page = client.get("/console/transactional-ids/fragment")
    assert page.status_code == 200
    assert html.escape(CRAFTED["markup"]) in page.text and CRAFTED["markup"] not in page.text
    csrf = re.search(r'"X-CSRF-Token": "([0-9a-f]+)"', client.get("/console/transactional-ids").text).group(1)
    for name in addressable:
        assert f'hx-post="/console/transactional-ids/{path_segment(name)}/abort"' in page.text
        done = client.post(f"/console/transactional-ids/{path_segment(name)}/abort", headers={"x-csrf-token": csrf})
        assert done.status_code == 200 and "refused" not in done.text, (name, done.text[:300])
        assert tid_state(client, name)["state"] == "COMPLETE_ABORT", name
    client.close()

"""Bulk DLQ redrives against a real broker process: paced jobs to watch and stop, one per group, under the ACLs."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_for

from .http_helpers import path, receive, send, settle

REDRIVE = "/v1/consumer-groups/{}/dlq/redrive"


@pytest.fixture
def client(broker: BrokerProcess):
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        yield c


def dead_letters(client: httpx.Client, group: str, topic: str, n: int) -> None:
    """``n`` messages of ``topic`` nacked by ``group`` until all are in its DLQ (conftest: 3 retries, fast)."""
    client.post("/v1/topics", json={"name": topic, "queues": 1}).raise_for_status()
    send(client, topic, *[f"{topic}-{i}" for i in range(n)])
    deadline = time.monotonic() + 30
    while client.get(path("v1", "consumer-groups", group, "dlq")).json()["depth"] < n:
        assert time.monotonic() < deadline, "the messages never reached the DLQ"
        got = receive(client, group, topic, n=64, wait=1)
        if got:
            settle(client, "nack", group, topic, [m["receipt_handle"] for m in got])


def watch(client: httpx.Client, group: str) -> dict:
    answer = client.get(REDRIVE.format(group))
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_redrive_resends_every_dead_letter_at_its_rate_and_says_how_far_it_got(client: httpx.Client) -> None:
    dead_letters(client, "g", "POISON", 6)
    started = client.post(REDRIVE.format("g"), json={"rate_per_second": 20})
    assert started.status_code == 202, started.text
    assert started.json()["state"] == "running" and started.json()["total"] == 6
    wait_for(lambda: watch(client, "g")["state"] == "done", timeout=30)
    job = watch(client, "g")
    assert (job["resent"], job["missing"], job["next_offset"], job["rate_per_second"]) == (6, 0, 6, 20)
    again = receive(client, "g", "POISON", n=64, wait=2)
    assert sorted(m["body"] for m in again) == [f"POISON-{i}" for i in range(6)]
    assert all(m["properties"]["DLQ_RESENT_FROM"].startswith("%DLQ%g@") for m in again)


def test_a_redrive_can_be_stopped_and_resends_no_more(client: httpx.Client) -> None:
    dead_letters(client, "g", "SLOW", 6)
    client.post(REDRIVE.format("g"), json={"rate_per_second": 2}).raise_for_status()
    time.sleep(0.3)
    stopped = client.delete(REDRIVE.format("g"))
    assert stopped.status_code == 200 and stopped.json()["state"] == "stopped"
    resent = stopped.json()["resent"]
    time.sleep(1.5)
    assert watch(client, "g")["resent"] == resent < 6


def test_max_messages_bounds_a_redrive_and_one_runs_per_group(client: httpx.Client) -> None:
    dead_letters(client, "g", "SOME", 5)
    client.post(REDRIVE.format("g"), json={"rate_per_second": 1, "max_messages": 3}).raise_for_status()
    busy = client.post(REDRIVE.format("g"), json={})
    assert (busy.status_code, busy.json()["code"]) == (409, "DLQ_REDRIVE_RUNNING")
    client.delete(REDRIVE.format("g")).raise_for_status()
    client.post(REDRIVE.format("g"), json={"rate_per_second": 100, "max_messages": 3}).raise_for_status()
    wait_for(lambda: watch(client, "g")["state"] == "done", timeout=30)
    assert (watch(client, "g")["total"], watch(client, "g")["resent"]) == (3, 3)


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"rate_per_second": 1e9}, 400, "INVALID_DLQ_REDRIVE"),
    ({"rate_per_second": 0}, 400, "INVALID_REQUEST"),
    ({"max_messages": 0}, 400, "INVALID_REQUEST"),
    ({"what": 1}, 400, "INVALID_REQUEST"),
])
def test_bad_input_is_a_problem_and_starts_nothing(client: httpx.Client, body: dict, status: int, code: str) -> None:
    answer = client.post(REDRIVE.format("g"), json=body)
    assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
    assert client.get(REDRIVE.format("g")).json()["code"] == "DLQ_REDRIVE_NOT_FOUND"


def test_past_the_jobs_limit_a_redrive_is_refused(start_broker) -> None:
    broker = start_broker({"HALFMQ_BROKER_DLQ_REDRIVE_JOBS": "1"})
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        dead_letters(client, "a", "A", 3)
        client.post(REDRIVE.format("a"), json={"rate_per_second": 1}).raise_for_status()
        refused = client.post(REDRIVE.format("b"), json={})
        assert (refused.status_code, refused.json()["code"]) == (429, "TOO_MANY_DLQ_REDRIVES")
        client.delete(REDRIVE.format("a")).raise_for_status()
        assert client.post(REDRIVE.format("b"), json={}).status_code == 202  # a stopped one makes room


def test_only_an_admin_of_the_group_may_redrive_its_dlq(as_) -> None:
    admin, credit, mallory = as_("admin"), as_("credit"), as_("mallory")
    for who in (credit, mallory):
        for answer in (who.post(REDRIVE.format("credit_group"), json={}), who.get(REDRIVE.format("credit_group")),
                       who.delete(REDRIVE.format("credit_group"))):
            assert (answer.status_code, answer.json()["code"]) == (403, "ACCESS_DENIED")
    assert admin.get(REDRIVE.format("credit_group")).json()["code"] == "DLQ_REDRIVE_NOT_FOUND"  # nothing started
    assert admin.post(REDRIVE.format("credit_group"), json={}).status_code == 202

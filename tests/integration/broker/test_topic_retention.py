"""A topic's own retention on a real broker process (decision 052, "Per-topic limits"): POST/PATCH/GET, what a short
limit hides while another topic in the same segments keeps everything, what a long limit keeps of the shared log,
bad input and rights."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.integration.broker.api.support import assert_problem
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_for

from .http_helpers import group_state, path, read_all, receive, send, settle

QUICK_PASSES = {"HALFMQ_BROKER_RETENTION_CHECK_INTERVAL": "0.2"}


def skipped(client: httpx.Client, group: str, topic: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        m = re.fullmatch(r"halfmq_retention_skipped_messages_total\{(.*)\} (\S+)", line)
        if m and {f'consumer_group="{group}"', f'topic="{topic}"'} <= set(m.group(1).split(",")):
            return float(m.group(2))
    return 0.0


def first_offset(client: httpx.Client, topic: str, queue_id: int = 0) -> int:
    return client.get(path("v1", "topics", topic)).json()["queues"][queue_id]["min_offset"]


@pytest.fixture
def quick(start_broker) -> BrokerProcess:
    return start_broker(QUICK_PASSES)


def test_a_topic_with_a_short_retention_loses_its_old_messages_while_another_in_the_same_segments_keeps_them(
        quick: BrokerProcess) -> None:
    with httpx.Client(base_url=quick.url, timeout=15) as client:
        for name in ("SHORT", "KEEPS"):
            client.post("/v1/topics", json={"name": name, "queues": 1}).raise_for_status()
        for n in range(3):  # interleaved: the two topics' messages share every segment
            send(client, "SHORT", f"short-{n}")
            send(client, "KEEPS", f"keeps-{n}")
        first = receive(client, "slow", "SHORT", 1)
        assert settle(client, "ack", "slow", "SHORT", [first[0]["receipt_handle"]]) == ["OK"]

        altered = client.patch(path("v1", "topics", "SHORT"), json={"retention_ms": 1000})
        assert altered.status_code == 200, altered.text
        assert altered.json()["retention_ms"] == 1000 and "retention_bytes" not in altered.json()

        wait_for(lambda: first_offset(client, "SHORT") == 3, timeout=30)  # a second on, the next pass hides them
        assert read_all(client, "SHORT", 0) == []
        assert [m["body"] for m in read_all(client, "KEEPS", 0)] == ["keeps-0", "keeps-1", "keeps-2"]
        assert first_offset(client, "KEEPS") == 0

        send(client, "SHORT", "fresh")
        resumed = receive(client, "slow", "SHORT", 10)  # the group continues from the earliest retained offset
        assert [(m["body"], m["queue_offset"]) for m in resumed] == [("fresh", 3)]
        assert skipped(client, "slow", "SHORT") == 2  # short-1 and short-2, never received
        assert group_state(client, "slow")["SHORT"][0]["retention_skipped"] == 2

    quick.kill9()
    quick.start()
    with httpx.Client(base_url=quick.url, timeout=15) as client:
        described = client.get(path("v1", "topics", "SHORT")).json()
        assert described["retention_ms"] == 1000, described  # the definition survives a kill -9
        assert "retention_ms" not in client.get(path("v1", "topics", "KEEPS")).json()
        wait_for(lambda: first_offset(client, "SHORT") >= 3, timeout=30)
        assert [m["body"] for m in read_all(client, "KEEPS", 0)] == ["keeps-0", "keeps-1", "keeps-2"]


@pytest.mark.parametrize("stop", ["kill -9", "SIGTERM"])
def test_a_restarted_broker_hides_what_a_topics_own_limit_hid_from_its_first_request(quick: BrokerProcess, stop: str) -> None:
    with httpx.Client(base_url=quick.url, timeout=15) as client:
        client.post("/v1/topics", json={"name": "SHORT", "queues": 1}).raise_for_status()
        send(client, "SHORT", "old-0", "old-1")
        client.patch(path("v1", "topics", "SHORT"), json={"retention_ms": 1000}).raise_for_status()
        wait_for(lambda: first_offset(client, "SHORT") == 2, timeout=30)  # a pass moved the queue's floor
    quick.kill9() if stop == "kill -9" else quick.stop()
    quick.env["HALFMQ_BROKER_RETENTION_CHECK_INTERVAL"] = "3600"  # no pass after the restart: the open alone must hide them
    quick.start()
    with httpx.Client(base_url=quick.url, timeout=15) as client:
        assert read_all(client, "SHORT", 0) == []  # the first request
        assert first_offset(client, "SHORT") == 2
        assert receive(client, "late", "SHORT", 10) == []
        send(client, "SHORT", "fresh")
        assert [m["body"] for m in read_all(client, "SHORT", 0)] == ["fresh"]


def test_a_topic_with_a_bytes_limit_keeps_only_its_newest_messages_within_it(quick: BrokerProcess) -> None:
    with httpx.Client(base_url=quick.url, timeout=15) as client:
        created = client.post("/v1/topics", json={"name": "SIZED", "queues": 1, "retention_bytes": 10**9})
        assert created.status_code == 201 and created.json()["retention_bytes"] == 10**9, created.text
        send(client, "SIZED", *[f"m{n}" + "x" * 200 for n in range(5)])
        time.sleep(0.5)  # passes run: a gigabyte holds them all
        assert first_offset(client, "SIZED") == 0
        client.patch(path("v1", "topics", "SIZED"), json={"retention_bytes": 1}).raise_for_status()
        wait_for(lambda: first_offset(client, "SIZED") == 4, timeout=30)  # the newest always stays
        assert [m["body"][:2] for m in read_all(client, "SIZED", 0)] == ["m4"]


SHARED_LOG = {
    "HALFMQ_BROKER_RETENTION": "2s",
    "HALFMQ_BROKER_RETENTION_CHECK_INTERVAL": "0.2",
    "HALFMQ_BROKER_SEGMENT_BYTES": "4096",
    "HALFMQ_BROKER_STATE_SNAPSHOT_INTERVAL": "0.2",
}


def _log_start(client: httpx.Client) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("halfmq_commit_log_start_offset "):
            return float(line.split()[1])
    raise AssertionError("no halfmq_commit_log_start_offset")


def test_a_topic_with_a_retention_longer_than_the_brokers_keeps_the_segments_holding_its_messages(start_broker) -> None:
    broker = start_broker(SHARED_LOG)
    commitlog = broker.data_dir / "commitlog"
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        client.post("/v1/topics", json={"name": "LONG", "queues": 1, "retention_ms": 3_600_000}).raise_for_status()
        client.post("/v1/topics", json={"name": "T", "queues": 1}).raise_for_status()
        send(client, "LONG", "kept for an hour")
        for n in range(60):  # some ten segments after LONG's message
            send(client, "T", f"t{n}" + "x" * 500)
        for n in range(2):  # state records and snapshots past everything: only LONG's limit holds the log now
            send(client, "MARK", f"mark-{n}")
            got = receive(client, "marker", "MARK", 1)
            settle(client, "ack", "marker", "MARK", [got[0]["receipt_handle"]])
        segments = len(list(commitlog.iterdir()))
        time.sleep(4.0)  # the broker's retention twice over, twenty passes
        assert _log_start(client) == 0 and len(list(commitlog.iterdir())) >= segments
        assert [m["body"] for m in read_all(client, "LONG", 0)] == ["kept for an hour"]

        client.patch(path("v1", "topics", "LONG"), json={"retention_ms": None}).raise_for_status()  # the broker's again
        wait_for(lambda: _log_start(client) > 0, timeout=30)
        assert read_all(client, "LONG", 0) == [] and first_offset(client, "LONG") == 1


def test_bad_retention_is_400_with_a_stable_code_and_changes_nothing(broker: BrokerProcess) -> None:
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        for body in ({"retention_ms": 999}, {"retention_ms": 11 * 365 * 86_400_000}, {"retention_bytes": 0},
                     {"retention_bytes": -1}):
            assert_problem(client.post("/v1/topics", json={"name": "BAD", "queues": 1, **body}), 400, "INVALID_RETENTION")
        assert_problem(client.get(path("v1", "topics", "BAD")), 404, "TOPIC_NOT_FOUND")
        client.post("/v1/topics", json={"name": "OK", "queues": 1, "retention_ms": 60_000}).raise_for_status()
        assert_problem(client.patch(path("v1", "topics", "OK"), json={"retention_ms": 60_000, "retention_bytes": 0}),
                       400, "INVALID_RETENTION")
        assert client.patch(path("v1", "topics", "OK"), json={"retention_ms": "soon"}).status_code == 400
        assert_problem(client.patch(path("v1", "topics", "OK"), json={"retention": 5}), 400, "INVALID_REQUEST")
        described = client.get(path("v1", "topics", "OK")).json()
        assert (described["retention_ms"], described.get("retention_bytes")) == (60_000, None)
        assert_problem(client.post("/v1/topics", json={"name": "OK", "queues": 1, "retention_ms": 5_000}), 409, "TOPIC_EXISTS")
        assert client.post("/v1/topics", json={"name": "OK", "queues": 1}).status_code == 200  # no retention named: the same
        assert_problem(client.patch(path("v1", "topics", "NOPE"), json={"retention_ms": 60_000}), 404, "TOPIC_NOT_FOUND")
        assert_problem(client.patch(path("v1", "topics", "RMQ_SYS_TRANS_HALF_TOPIC"), json={"retention_ms": 60_000}), 403,
                       "SYSTEM_TOPIC_FORBIDDEN")


def test_only_an_administrator_changes_a_topics_retention(as_) -> None:
    admin, mallory = as_("admin"), as_("mallory")
    admin.post("/v1/topics", json={"name": "MALLORY_OWN", "queues": 1}).raise_for_status()
    assert_problem(as_(None).patch(path("v1", "topics", "MALLORY_OWN"), json={"retention_ms": 1000}), 401, "UNAUTHENTICATED")
    assert_problem(mallory.patch(path("v1", "topics", "MALLORY_OWN"), json={"retention_ms": 1000}), 403, "ACCESS_DENIED")
    assert_problem(mallory.post("/v1/topics", json={"name": "MALLORY_NEW", "queues": 1, "retention_ms": 1000}), 403,
                   "ACCESS_DENIED")
    assert "retention_ms" not in admin.get(path("v1", "topics", "MALLORY_OWN")).json()
    assert admin.patch(path("v1", "topics", "MALLORY_OWN"), json={"retention_ms": 86_400_000}).json()["retention_ms"] == 86_400_000


def test_the_consoles_topic_view_shows_each_topics_retention(broker: BrokerProcess) -> None:
    with httpx.Client(base_url=broker.url, timeout=15) as client:
        client.post("/v1/topics", json={"name": "OWN", "queues": 1, "retention_ms": 7_200_000, "retention_bytes": 5000}).raise_for_status()
        client.post("/v1/topics", json={"name": "PLAIN", "queues": 1}).raise_for_status()
        page = client.get("/console/topics/fragment").text
        cells = dict(re.findall(r'<tr data-topic="(\w+)">.*?<td class="retention">(.*?)</td>', page, re.S))
        assert cells["OWN"] == "2 h, 5000 bytes a queue", cells
        assert cells["PLAIN"] in ("broker's", "broker&#39;s", "broker&#x27;s"), cells

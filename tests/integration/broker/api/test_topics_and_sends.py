"""Topics, sends and offset reads over HTTP against one real broker process (DESIGN sections 3 and 6)."""

from __future__ import annotations

import base64
import itertools
import os
import subprocess
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import TEST_BROKER_ENV
from tests.support.processes import BrokerProcess, free_port, halfmq_command

from ..http_helpers import path, send
from .support import ModuleBrokerFactory, topic_names

DEFAULT_QUEUES = 4
_names = itertools.count()


def fresh(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


@pytest.fixture(scope="module")
def broker(module_broker_factory: ModuleBrokerFactory) -> BrokerProcess:
    return module_broker_factory()


@pytest.fixture(scope="module")
def client(broker: BrokerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=broker.url, timeout=15) as c:
        yield c


def create(client: httpx.Client, name: str, queues: int | None) -> httpx.Response:
    return client.post("/v1/topics", json={"name": name} if queues is None else {"name": name, "queues": queues})


def describe(client: httpx.Client, topic: str) -> dict:
    resp = client.get(path("v1", "topics", topic))
    resp.raise_for_status()
    return resp.json()


def read(client: httpx.Client, topic: str, queue_id: int, offset: int = 0, max: int = 32) -> dict:  # noqa: A002 - as the API calls it
    resp = client.get(path("v1", "topics", topic, "queues", queue_id, "messages"), params={"offset": offset, "max": max})
    resp.raise_for_status()
    assert resp.headers["content-type"].startswith("application/json")
    return resp.json()


def send_batch(client: httpx.Client, topic: str, messages: list[dict]) -> list[dict]:
    resp = client.post(path("v1", "topics", topic, "messages"), json={"messages": messages})
    assert resp.status_code == 200, resp.text
    results = resp.json()["results"]
    assert [r["status"] for r in results] == ["SEND_OK"] * len(messages)
    return results


def queue_rows(queues: int, max_offsets: dict[int, int] | None = None) -> list[dict]:
    max_offsets = max_offsets or {}
    return [{"queue_id": q, "min_offset": 0, "max_offset": max_offsets.get(q, 0)} for q in range(queues)]


# --- topics -------------------------------------------------------------------------------------


def test_created_topic_is_listed_and_described_with_min_and_max_offsets(client: httpx.Client) -> None:
    topic = fresh("ORDERS")
    resp = create(client, topic, 3)
    assert resp.status_code == 201
    assert resp.json() == {"name": topic, "queues": queue_rows(3)}

    listed = {t["name"]: t for t in client.get("/v1/topics").json()["topics"]}
    assert listed[topic] == {"name": topic, "queues": queue_rows(3)}

    send_batch(client, topic, [{"body": "a", "queue_id": 1}, {"body": "b", "queue_id": 1}, {"body": "c", "queue_id": 2}])
    assert describe(client, topic) == {"name": topic, "queues": queue_rows(3, {1: 2, 2: 1})}
    listed = {t["name"]: t for t in client.get("/v1/topics").json()["topics"]}
    assert listed[topic]["queues"] == queue_rows(3, {1: 2, 2: 1})


def test_recreating_a_topic_with_the_same_queue_count_is_idempotent(client: httpx.Client) -> None:
    topic = fresh("AGAIN")
    first = create(client, topic, 2)
    assert first.status_code == 201
    send(client, topic, "keep me", queue_id=0)
    again = create(client, topic, 2)
    assert again.status_code == 200
    assert again.json() == {"name": topic, "queues": queue_rows(2, {0: 1})}  # existing data untouched
    assert [t["name"] for t in client.get("/v1/topics").json()["topics"]].count(topic) == 1


def test_creating_a_topic_without_a_queue_count_gives_the_default_four(client: httpx.Client) -> None:
    topic = fresh("NOCOUNT")
    resp = create(client, topic, None)
    assert resp.status_code == 201
    assert resp.json()["queues"] == queue_rows(DEFAULT_QUEUES)


def test_first_send_auto_creates_the_topic_with_the_default_four_queues(client: httpx.Client) -> None:
    topic = fresh("AUTO")
    assert topic not in topic_names(client)
    [result] = send(client, topic, "first")
    assert result["status"] == "SEND_OK" and result["topic"] == topic
    info = describe(client, topic)
    assert [q["queue_id"] for q in info["queues"]] == list(range(DEFAULT_QUEUES))
    assert sum(q["max_offset"] for q in info["queues"]) == 1


# --- choosing a queue ---------------------------------------------------------------------------


def test_round_robin_spreads_sends_evenly_over_all_queues(client: httpx.Client) -> None:
    topic = fresh("RR")
    create(client, topic, 4).raise_for_status()
    one_by_one = [send(client, topic, f"single-{i}")[0]["queue_id"] for i in range(8)]
    assert Counter(one_by_one) == {0: 2, 1: 2, 2: 2, 3: 2}
    in_a_batch = [r["queue_id"] for r in send_batch(client, topic, [{"body": f"batch-{i}"} for i in range(8)])]
    assert Counter(in_a_batch) == {0: 2, 1: 2, 2: 2, 3: 2}
    assert [q["max_offset"] for q in describe(client, topic)["queues"]] == [4, 4, 4, 4]


def test_the_same_sharding_key_always_lands_on_the_same_queue(client: httpx.Client) -> None:
    topic = fresh("SHARD")
    create(client, topic, 8).raise_for_status()
    by_key: dict[str, set[int]] = {}
    for round_ in range(3):
        # Interleave keys across requests and batches so neither position nor request can explain the queue.
        results = send_batch(client, topic, [{"body": f"{k}-{round_}", "sharding_key": f"user-{k}"} for k in range(12)])
        for k, r in enumerate(results):
            by_key.setdefault(f"user-{k}", set()).add(r["queue_id"])
        [single] = send(client, topic, "alone", sharding_key="user-3")
        by_key["user-3"].add(single["queue_id"])
    assert all(len(queues) == 1 for queues in by_key.values()), by_key
    assert len({q for queues in by_key.values() for q in queues}) > 1, "12 keys all hashed to one queue"

    # Per-key order within the queue is the send order.
    [qid] = by_key["user-5"]
    bodies = [m["body"] for m in read(client, topic, qid, max=100)["messages"]]
    assert [b for b in bodies if b.startswith("5-")] == ["5-0", "5-1", "5-2"]


def test_an_explicit_queue_id_is_honoured_over_round_robin_and_sharding_key(client: httpx.Client) -> None:
    topic = fresh("EXPLICIT")
    create(client, topic, 4).raise_for_status()
    results = send_batch(client, topic, [{"body": f"m{i}", "queue_id": 2, "sharding_key": f"k{i}"} for i in range(5)])
    assert [r["queue_id"] for r in results] == [2] * 5
    assert [r["queue_offset"] for r in results] == [0, 1, 2, 3, 4]
    assert [m["body"] for m in read(client, topic, 2)["messages"]] == [f"m{i}" for i in range(5)]
    assert [q["max_offset"] for q in describe(client, topic)["queues"]] == [0, 0, 5, 0]


# --- batches and offset reads -------------------------------------------------------------------


def test_a_batch_of_100_gets_consecutive_offsets_per_queue_and_pages_through_offset_reads(client: httpx.Client) -> None:
    topic = fresh("BATCH")
    create(client, topic, 3).raise_for_status()
    send(client, topic, "before", queue_id=1)  # queue 1 does not start at 0 for the batch
    bodies = [f"msg-{i:03d}" for i in range(100)]
    results = send_batch(client, topic, [{"body": b} for b in bodies])

    sent_per_queue: dict[int, list[tuple[int, str]]] = {}
    for body, r in zip(bodies, results, strict=True):
        sent_per_queue.setdefault(r["queue_id"], []).append((r["queue_offset"], body))
    for qid, entries in sent_per_queue.items():
        first = 1 if qid == 1 else 0
        assert [off for off, _ in entries] == list(range(first, first + len(entries))), f"queue {qid} offsets not consecutive"
    clo = [r["commit_log_offset"] for r in results]
    assert clo == sorted(clo) and len(set(clo)) == 100  # one write group, appended in order
    assert len({r["msg_id"] for r in results}) == 100

    total = 0
    for qid in range(3):
        max_offset = describe(client, topic)["queues"][qid]["max_offset"]
        offset, pages, read_back = 0, [], []
        while True:
            page = read(client, topic, qid, offset=offset, max=7)
            pages.append(len(page["messages"]))
            read_back.extend(page["messages"])
            if not page["messages"]:
                assert page["next_offset"] == offset == max_offset
                break
            assert [m["queue_offset"] for m in page["messages"]] == list(range(offset, offset + len(page["messages"])))
            assert page["next_offset"] == offset + len(page["messages"])
            offset = page["next_offset"]
        assert all(n == 7 for n in pages[:-2]) and pages[-1] == 0 and 0 < pages[-2] <= 7
        expected = ([(0, "before")] if qid == 1 else []) + sent_per_queue[qid]
        assert [(m["queue_offset"], m["body"]) for m in read_back] == expected
        by_offset = {r["queue_offset"]: r for r in results if r["queue_id"] == qid}
        for m in read_back:
            if m["body"] != "before":
                r = by_offset[m["queue_offset"]]
                assert (m["msg_id"], m["topic"], m["queue_id"], m["commit_log_offset"]) == (r["msg_id"], topic, qid, r["commit_log_offset"])
        total += len(sent_per_queue[qid])
    assert total == 100


def test_offset_read_past_the_end_returns_no_messages_and_next_offset_at_max_offset(client: httpx.Client) -> None:
    topic = fresh("PASTEND")
    create(client, topic, 2).raise_for_status()
    send_batch(client, topic, [{"body": f"m{i}", "queue_id": 0} for i in range(3)])
    for offset in (3, 4, 1000, 10**15):
        assert read(client, topic, 0, offset=offset) == {"messages": [], "next_offset": 3}
    assert read(client, topic, 1, offset=0) == {"messages": [], "next_offset": 0}  # an empty queue
    assert [m["body"] for m in read(client, topic, 0, offset=2)["messages"]] == ["m2"]


# --- message content ----------------------------------------------------------------------------


def test_utf8_and_base64_bodies_round_trip_with_their_encoding(client: httpx.Client) -> None:
    topic = fresh("BODIES")
    create(client, topic, 1).raise_for_status()
    text = "héllo wörld ✓ 日本語 🚀 \"quoted\" \\ back\nnewline"
    raw = bytes(range(256)) + b"\x00\xff\xfe"
    encoded = base64.b64encode(raw).decode()
    send_batch(client, topic, [
        {"body": text},
        {"body": text, "body_encoding": "utf-8"},
        {"body": encoded, "body_encoding": "base64"},
        {"body": "", "body_encoding": "utf-8"},
        {"body": "", "body_encoding": "base64"},
    ])
    got = [(m["body"], m["body_encoding"]) for m in read(client, topic, 0)["messages"]]
    assert got == [(text, "utf-8"), (text, "utf-8"), (encoded, "base64"), ("", "utf-8"), ("", "base64")]
    assert base64.b64decode(got[2][0]) == raw


def test_keys_tag_and_properties_round_trip(client: httpx.Client) -> None:
    topic = fresh("PROPS")
    create(client, topic, 1).raise_for_status()
    results = send_batch(client, topic, [
        {"body": "a", "keys": ["order-1", "user-9"], "tag": "TagA", "properties": {"trace": "t-1", "note": "ünïcode ✓", "empty": ""}},
        {"body": "b", "keys": "order-2"},
        {"body": "c"},
    ])
    a, b, c = read(client, topic, 0)["messages"]

    assert a["keys"] == ["order-1", "user-9"] and a["tag"] == "TagA"
    assert {k: a["properties"][k] for k in ("trace", "note", "empty")} == {"trace": "t-1", "note": "ünïcode ✓", "empty": ""}
    assert b["keys"] == ["order-2"] and b["tag"] is None
    assert c["keys"] == [] and c["tag"] is None
    for message, result in zip((a, b, c), results, strict=True):
        assert message["msg_id"] == result["msg_id"] == message["properties"]["UNIQ_KEY"]
        assert "KEYS" not in message["properties"] and "TAGS" not in message["properties"]  # surfaced as keys / tag
        assert message["born_timestamp"] <= message["store_timestamp"]
        assert isinstance(message["store_timestamp"], int) and message["store_timestamp"] > 1_600_000_000_000  # epoch ms


# --- operations ---------------------------------------------------------------------------------


def test_healthz_is_ok_and_metrics_count_sent_messages(client: httpx.Client) -> None:
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"

    def sent_total() -> float:
        metrics = client.get("/metrics")
        assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
        return sum(float(ln.split()[-1]) for ln in metrics.text.splitlines() if ln.startswith("halfmq_messages_in_total{"))

    before = sent_total()
    send_batch(client, fresh("METRICS"), [{"body": "x"}, {"body": "y"}, {"body": "z"}])
    assert sent_total() == before + 3


def test_a_second_broker_on_the_same_data_dir_exits_non_zero_saying_it_is_in_use(broker: BrokerProcess, client: httpx.Client) -> None:
    topic = fresh("LOCKED")
    send(client, topic, "survives")
    argv = halfmq_command("broker", "--port", str(free_port()), "--data-dir", str(broker.data_dir))
    second = subprocess.run(argv, env={**os.environ, **TEST_BROKER_ENV}, capture_output=True, text=True, timeout=30, cwd=broker.log_path.parent)
    assert second.returncode != 0
    assert "in use" in second.stdout + second.stderr, second.stdout + second.stderr

    # The first broker still owns the directory and serves it.
    assert client.get("/healthz").status_code == 200
    assert [m["body"] for q in range(DEFAULT_QUEUES) for m in read(client, topic, q)["messages"]] == ["survives"]

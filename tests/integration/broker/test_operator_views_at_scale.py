"""A broker with 3,000 topics and 2,000 consumer groups: /metrics and the console stay bounded and never stall it.

The data dir is built in-process (tests/support/crowded_store.py) before a real broker opens it: topics of one queue
(3,000 queue files are quicker to make than 12,000), each group reading two of them; 200 groups then hold two
a delivery each. Issue 42 measured, on this shape, a scrape of 60k series that stalled sends for 1.9 s and a refresh
of the console's groups fragment that blocked them for 6.7 s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from halfmq.broker.usecases.views import DLQ_PAGE
from tests.conftest import TEST_BROKER_ENV
from tests.support.crowded_store import fill, group_name, topic_name, topics_of
from tests.support.liveness import HealthProbe
from tests.support.processes import BrokerProcess

TOPICS, GROUPS, QUEUES, TOPICS_PER_GROUP = 3000, 2000, 1, 2
HOLDING = 200  # groups that hold a delivery each
DEAD = (10, 30)  # the first 10 groups have 30 dead letters each
MAX_TOPICS, MAX_GROUP_TOPICS, PAGE_ROWS = 20, 30, 25
LIMITS = {"HALFMQ_BROKER_METRICS_MAX_TOPICS": str(MAX_TOPICS), "HALFMQ_BROKER_METRICS_MAX_GROUP_TOPICS": str(MAX_GROUP_TOPICS),
          "HALFMQ_BROKER_CONSOLE_PAGE_ROWS": str(PAGE_ROWS)}
OTHER = "(other)"
LIVENESS_SECONDS = 1.0  # today each such request waits 20-40 ms; before issue 42, seconds
Samples = list[tuple[str, dict[str, str], float]]


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("crowded")
    fill(root / "data", TOPICS, GROUPS, QUEUES, TOPICS_PER_GROUP, DEAD)
    broker = BrokerProcess(root / "data", root, {**TEST_BROKER_ENV, **LIMITS}).start(timeout=120)

    def hold(first: int) -> None:
        with httpx.Client(base_url=broker.url, timeout=60) as client:
            for g in range(first, HOLDING, 8):
                client.post(f"/v1/consumer-groups/{group_name(g)}/topics/{topics_of(g, TOPICS, TOPICS_PER_GROUP)[0]}/receive",
                            json={"max_messages": 1, "invisible_seconds": 600, "wait_seconds": 0}).raise_for_status()

    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(hold, range(8)))
        yield broker
    finally:
        broker.stop()


def scrape(client: httpx.Client) -> Samples:
    answer = client.get("/metrics")
    answer.raise_for_status()
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(answer.text) for s in f.samples]


def rows(samples: Samples, name: str, *labels: str) -> dict[tuple[str, ...], float]:
    """``name``'s samples summed by the values of ``labels`` (PromQL's ``sum by``)."""
    out: dict[tuple[str, ...], float] = {}
    for n, ls, v in samples:
        if n == name:
            key = tuple(ls[k] for k in labels)
            out[key] = out.get(key, 0) + v
    return out


def test_a_scrape_shows_the_configured_rows_and_sums_the_rest_under_other(crowded: BrokerProcess) -> None:
    with httpx.Client(base_url=crowded.url, timeout=60) as client:
        scrape(client)  # the first scrape picks the rows the event counts keep
        samples = scrape(client)
        probed = sum(q["max_offset"] for q in client.get(f"/v1/topics/{topic_name(1)}").json()["queues"]) - QUEUES  # the liveness test's sends
    messages_in = rows(samples, "halfmq_messages_in_total", "topic")
    assert len(messages_in) == MAX_TOPICS + 1 and (OTHER,) in messages_in
    assert sum(messages_in.values()) == TOPICS * QUEUES + probed  # the rest is summed, not dropped
    for name in ("halfmq_consumer_lag_messages", "halfmq_consumer_ready_messages", "halfmq_consumer_inflight_messages",
                 "halfmq_fifo_groups_waiting", "halfmq_messages_out_total", "halfmq_ack_messages_total", "halfmq_nack_messages_total",
                 "halfmq_send_to_dlq_messages_total"):
        pairs = rows(samples, name, "consumer_group", "topic")
        assert len(pairs) <= MAX_GROUP_TOPICS + 1, name
    lag = rows(samples, "halfmq_consumer_lag_messages", "consumer_group", "topic")
    assert (OTHER, OTHER) in lag and sum(lag.values()) == GROUPS * TOPICS_PER_GROUP * QUEUES
    assert sum(rows(samples, "halfmq_consumer_inflight_messages").values()) == HOLDING
    assert sum(rows(samples, "halfmq_messages_out_total").values()) == HOLDING
    dlq = rows(samples, "halfmq_dlq_messages", "consumer_group")
    assert len(dlq) == MAX_GROUP_TOPICS + 1 and sum(dlq.values()) == DEAD[0] * DEAD[1]
    assert rows(samples, "halfmq_consumer_group_number")[()] == GROUPS and rows(samples, "halfmq_topic_number")[()] == TOPICS
    per_row = QUEUES + 3 + 6  # lag per queue, ready, in flight, FIFO waiting; out, ack ok/expired, nack ok/expired, to DLQ
    assert len(samples) <= 2 * (MAX_TOPICS + 1) + (MAX_GROUP_TOPICS + 1) * (per_row + 1) + 200  # 200: the fixed series


def test_the_console_shows_one_page_of_groups_and_topics(crowded: BrokerProcess) -> None:
    with httpx.Client(base_url=crowded.url, timeout=60) as client:
        groups = client.get("/console/groups/fragment", params={"page": 3}).text
        first = client.get("/console/groups/fragment").text
        asked = client.get("/console/groups/fragment", params={"dlq_group": group_name(9), "dlq_offset": 10}).text
        topics = client.get("/console/topics/fragment", params={"q": "T001"}).text
        malformed, past = (client.get("/console/groups/fragment", params={"page": p}) for p in ("x", "99999999"))
    assert groups.count("data-group=") == PAGE_ROWS and f'data-group="{group_name(2 * PAGE_ROWS)}"' in groups
    assert f'<span class="pager-count">{GROUPS}</span> · page 3 of {GROUPS // PAGE_ROWS}' in groups
    assert topics.count("data-topic=") == PAGE_ROWS and '<span class="pager-count">100</span>' in topics  # T00100..T00199
    assert first.count("data-dlq-offset=") == DLQ_PAGE  # 30 of the first group's, 20 of the second's, then links
    assert first.count('class="dlq-show"') == DEAD[0] - 2
    assert asked.count("data-dlq-offset=") == DLQ_PAGE and "10–29: <span class=\"dlq-shown\">20</span>" in asked
    assert malformed.status_code == 200 and f'data-group="{group_name(0)}"' in malformed.text  # the first page
    assert past.status_code == 200 and f'data-group="{group_name(GROUPS - 1)}"' in past.text  # the last page


def test_sends_and_health_checks_are_answered_while_scrapes_and_console_refreshes_run(crowded: BrokerProcess) -> None:
    slowest_send, sent = 0.0, 0
    done = threading.Event()

    def send() -> None:
        nonlocal slowest_send, sent
        with httpx.Client(base_url=crowded.url, timeout=60) as client:
            while not done.is_set():
                started = time.monotonic()
                client.post(f"/v1/topics/{topic_name(1)}/messages", json={"messages": [{"body": "b"}]}).raise_for_status()
                slowest_send = max(slowest_send, time.monotonic() - started)
                sent += 1

    def views(paths: tuple[str, ...]) -> None:
        with httpx.Client(base_url=crowded.url, timeout=120) as client:
            for _ in range(3):
                for path in paths:
                    client.get(path).raise_for_status()

    sender = threading.Thread(target=send)
    with HealthProbe(crowded.url) as health:
        sender.start()
        try:
            time.sleep(0.3)
            with ThreadPoolExecutor(2) as pool:  # Prometheus and an operator's console tab at once
                list(pool.map(views, [("/metrics",), ("/console/groups/fragment", "/console/topics/fragment",
                                                      "/console/transactions/fragment")]))
        finally:
            done.set()
            sender.join()
    assert sent > 0 and health.answered > 0
    assert slowest_send < LIVENESS_SECONDS and health.slowest < LIVENESS_SECONDS, (slowest_send, health.slowest)

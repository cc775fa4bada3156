"""A message-group head that holds its queue at FIFO_WINDOW, seen by a real Prometheus and its shipped alert (issue 42).

Past the window, one unsettled head stops every other group of its queue until it is acked or dead-lettered (hours by
default) and no series said so. A real broker (``HALFMQ_BROKER_FIFO_WINDOW=4``, auth on as in compose) gets a held head
with the window full behind it and one message of another group past it; Debian's ``prometheus`` scrapes it every
second with the shipped configuration and rules.yml: ``halfmq_fifo_window_stalled_seconds`` climbs, the shipped
alert's expression (its threshold lowered to a few seconds, so the test does not wait out a minute) names the group and
topic, and an ack ends both. That the shipped rule fires past 60 s and not before is promtool's rule test
(tests/test_monitoring_files.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import TEST_BROKER_ENV
from tests.support.auth import bearer, write_auth_file
from tests.support.processes import BrokerProcess
from tests.support.prometheus import MONITORING, PrometheusProcess, config_for
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

WINDOW = 4
TOPIC, GROUP = "ORDERS", "billing"
STALLED = f'halfmq_fifo_window_stalled_seconds{{consumer_group="{GROUP}",topic="{TOPIC}"}}'
ALERT = "HalfmqFifoQueueStalled"
SOON = 3  # seconds: the threshold the shipped expression is evaluated with here


def shipped_expression(threshold: int) -> str:
    """The shipped rule's expression with another threshold (the rule's own 60 s is promtool's to test)."""
    [rule] = [r for g in yaml.safe_load((MONITORING / "rules.yml").read_text())["groups"] for r in g["rules"] if r.get("alert") == ALERT]
    expr = str(rule["expr"])
    assert expr.endswith("> 60"), expr
    return f"{expr[: -len('60')]}{threshold}"


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[httpx.Client, PrometheusProcess]]:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    (tmp_path / "admin.token").write_text(tokens["admin"] + "\n")
    broker = BrokerProcess(tmp_path / "data", tmp_path, {**TEST_BROKER_ENV, "HALFMQ_BROKER_FIFO_WINDOW": str(WINDOW),
                                                         "HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")}).start()
    prometheus = PrometheusProcess(tmp_path, config_for(f"127.0.0.1:{broker.port}", tmp_path / "admin.token", MONITORING / "rules.yml"))
    try:
        prometheus.start(timeout=60)
        with httpx.Client(base_url=broker.url, timeout=15, headers=bearer(tokens["admin"])) as client:
            yield client, prometheus
    finally:
        prometheus.stop()
        broker.stop()


def receive(client: httpx.Client) -> list[dict]:
    answer = client.post(f"/v1/consumer-groups/{GROUP}/topics/{TOPIC}/receive", json={"max_messages": 32, "invisible_seconds": 3600})
    answer.raise_for_status()
    return answer.json()["messages"]


def alert_state(prometheus: PrometheusProcess) -> str:
    return str(prometheus.rules()[ALERT]["state"])


def test_a_head_held_past_the_window_shows_in_the_series_and_the_alerts_expression_until_it_is_acked(watched) -> None:
    client, prometheus = watched
    client.post("/v1/topics", json={"name": TOPIC, "queues": 1}).raise_for_status()
    messages = [{"body": f"stuck-{i}", "message_group": "stuck"} for i in range(WINDOW)] + [{"body": "free", "message_group": "free"}]
    client.post(f"/v1/topics/{TOPIC}/messages", json={"messages": messages}).raise_for_status()

    [head] = receive(client)  # stuck-0, held for an hour; stuck-1..3 wait behind it and fill the window; "free" is past it
    assert head["body"] == "stuck-0" and receive(client) == []
    wait_for(lambda: prometheus.query(f"{STALLED} > 0"), timeout=30)
    assert alert_state(prometheus) == "inactive"  # under a minute: a head may be in flight that long

    stalled = wait_for(lambda: prometheus.query(shipped_expression(SOON)), timeout=60)  # the rule's rows, on the real series
    assert {(row["metric"]["consumer_group"], row["metric"]["topic"]) for row in stalled} == {(GROUP, TOPIC)}
    assert float(stalled[0]["value"][1]) > SOON

    client.post(f"/v1/consumer-groups/{GROUP}/topics/{TOPIC}/ack", json={"receipt_handles": [head["receipt_handle"]]}).raise_for_status()
    assert sorted(m["body"] for m in receive(client)) == ["free", "stuck-1"]  # the queue moves again, the other group first of all
    wait_for(lambda: prometheus.query(f"{STALLED} == 0"), timeout=30)
    assert prometheus.query(shipped_expression(SOON)) == []  # nothing would fire
    assert alert_state(prometheus) == "inactive"

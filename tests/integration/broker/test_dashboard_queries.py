"""Every panel of the shipped Grafana dashboard, evaluated by a real Prometheus scraping a real broker.

Debian's ``prometheus`` runs the shipped configuration (docker/monitoring/prometheus.yml and rules.yml) with the
broker's address and token file swapped in and a 1 s scrape; the broker (auth on, as in compose) takes the
scripted load of tests/support/operator_load.py, whose every charted quantity is known. Each panel's queries are
read from the dashboard JSON and sent to Prometheus' /api/v1/query: each must return exactly the series the load
made, with the load's values for gauges and a positive rate where the counter moved while Prometheus watched.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.conftest import TEST_BROKER_ENV
from tests.support import operator_load
from tests.support.auth import bearer, write_auth_file
from tests.support.check_server import CheckServer
from tests.support.operator_load import Expected
from tests.support.processes import BrokerProcess
from tests.support.prometheus import MONITORING, PrometheusProcess, config_for, promtool
from tests.support.waiting import wait_for

DASHBOARD = MONITORING / "grafana" / "dashboards" / "halfmq-dashboard.json"
PANELS = {p["title"]: p for p in json.loads(DASHBOARD.read_text())["panels"]}
POSITIVE, ANY = "> 0", "any"  # a rate the load moved; a value that depends on timing
W = Expected()


def groups(**values: Any) -> dict[tuple[tuple[str, str], ...], Any]:
    return {(("consumer_group", g),): v for g, v in values.items()}


# Per panel, per target (refId): the series the query must return, by labels, and their values.
PANEL_SERIES: dict[str, dict[str, dict[tuple[tuple[str, str], ...], Any]]] = {
    "Messages in per topic (msg/s)": {"A": {(("topic", "PAY"),): POSITIVE}},
    "Deliveries per group (msg/s, redeliveries included)": {"A": groups(audit=POSITIVE, billing=POSITIVE, reporting=POSITIVE)},
    "Acked per group (msg/s)": {"A": groups(audit=0, billing=POSITIVE, reporting=0)},  # audit and reporting never ack
    "Consumer lag per group and topic": {"A": {
        (("consumer_group", "audit"), ("topic", "PAY")): 0, (("consumer_group", "billing"), ("topic", "PAY")): 0,
        (("consumer_group", "reporting"), ("topic", "PAY")): W.on_topic}},
    "In flight per group": {"A": groups(audit=0, billing=0, reporting=W.held)},
    "Ready per group": {"A": groups(audit=0, billing=0, reporting=W.on_topic - W.held)},
    "Moved to the DLQ per group (msg/s)": {"A": groups(audit=POSITIVE, billing=0, reporting=0)},
    "Messages in the DLQ per group": {"A": groups(audit=W.on_topic, billing=0, reporting=0)},
    "Half messages awaiting commit or rollback": {"A": {(): W.pending}},
    "Half messages by age": {"A": {(("age", "le_10s"),): ANY, (("age", "le_1m"),): ANY, (("age", "le_10m"),): 0,
                                   (("age", "le_1h"),): 0, (("age", "gt_1h"),): 0}},
    "Commits / rollbacks / discards (per s)": {"A": {(): POSITIVE}, "B": {(): POSITIVE}, "C": {(): POSITIVE}},
    "Check-backs by result (per s)": {"A": {(("result", "unknown"),): POSITIVE, (("result", "no_producer"),): ANY}},
    "Send latency p99 (s)": {"A": {(): POSITIVE}},
    "Open producer transactions": {"A": {(): 0}},
    # a single broker has no set series: these panels are asserted on a real set (cluster/test_set_metrics.py)
    "Set: leader per node (1 leads)": {"A": {}},
    "Set: replication lag per follower (s)": {"A": {}},
    "Set: nodes in sync": {"A": {}},
}


@dataclass
class Observed:
    prometheus: PrometheusProcess
    want: Expected


def _settled(prometheus: PrometheusProcess, want: Expected) -> bool:
    """Prometheus has scraped the load's end state."""
    def value(expr: str) -> float:
        result = prometheus.query(expr)
        return float(result[0]["value"][1]) if result else math.nan
    return (value('sum(halfmq_dlq_messages{consumer_group="audit"})') == want.on_topic
            and value("sum(halfmq_consumer_inflight_messages)") == want.held
            and value("sum(halfmq_half_messages)") == want.pending
            and bool(prometheus.query('rate(halfmq_check_requests_total{result="no_producer"}[1m])'))  # 2 samples: a rate
            and value('sum(halfmq_messages_out_total{consumer_group="reporting"})') == want.held)


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    root = tmp_path_factory.mktemp("dashboard")
    _, tokens = write_auth_file(root / "auth.json")
    (root / "admin.token").write_text(tokens["admin"] + "\n")
    broker = BrokerProcess(root / "data", root, {**TEST_BROKER_ENV, **operator_load.BROKER_ENV,
                                                 "HALFMQ_BROKER_AUTH_FILE": str(root / "auth.json")}).start()
    prometheus = PrometheusProcess(root, config_for(f"127.0.0.1:{broker.port}", root / "admin.token", MONITORING / "rules.yml"))
    checks = CheckServer()
    try:
        prometheus.start(timeout=60)
        wait_for(lambda: prometheus.query('up{job="halfmq-broker"} == 1'), timeout=30)  # a first scrape, before the load
        with httpx.Client(base_url=broker.url, timeout=15, headers=bearer(tokens["admin"])) as client:
            want = operator_load.run(client, checks, joined=lambda: wait_for(
                lambda: prometheus.query(f"halfmq_consumer_group_number == {len(operator_load.GROUPS)}"), timeout=30))
        wait_for(lambda: _settled(prometheus, want), timeout=30)
        yield Observed(prometheus, want)
    finally:
        checks.close()
        prometheus.stop()
        broker.stop()


def _vector(result: list[dict[str, Any]]) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(r["metric"].items())): float(r["value"][1]) for r in result}


def test_every_panel_of_the_dashboard_has_its_expected_series_here() -> None:
    assert set(PANEL_SERIES) == set(PANELS)
    for title, panel in PANELS.items():
        assert {t["refId"] for t in panel["targets"]} == set(PANEL_SERIES[title]), title


@pytest.mark.parametrize("title", list(PANEL_SERIES))
def test_the_panel_query_returns_the_series_the_load_made(observed: Observed, title: str) -> None:
    for target in PANELS[title]["targets"]:
        want = PANEL_SERIES[title][target["refId"]]
        got = _vector(observed.prometheus.query(target["expr"]))
        assert set(got) == set(want), f"{title} {target['refId']}: {target['expr']}"
        for labels, expected in want.items():
            if expected == POSITIVE:
                assert got[labels] > 0, f"{title}: {labels}"
            elif expected != ANY:
                assert got[labels] == expected, f"{title}: {labels}"


def test_commit_rollback_and_discard_rates_stand_in_the_loads_proportions(observed: Observed) -> None:
    """The three series share their scrapes, so their rates over one window are in the counts' ratio."""
    panel = PANELS["Commits / rollbacks / discards (per s)"]
    at = time.time()
    rates = {t["legendFormat"]: float(observed.prometheus.query(t["expr"], at)[0]["value"][1]) for t in panel["targets"]}
    want = observed.want
    per_event = {rates["commits"] / want.commits, rates["rollbacks"] / want.rollbacks, rates["discards"] / want.discards}
    assert max(per_event) - min(per_event) < 1e-9 * max(per_event)


def test_the_alert_rules_load_and_the_dlq_and_discard_alerts_fire(observed: Observed) -> None:
    rules = observed.prometheus.rules()
    assert {name: r["health"] for name, r in rules.items()} == dict.fromkeys(
        ["HalfmqBrokerDown", "HalfmqTransactionOlderThan10Minutes", "HalfmqTransactionsDiscarded", "HalfmqMessagesDeadLettered",
         "HalfmqFifoQueueStalled", "HalfmqDiskPastEarlyDeleteMark", "HalfmqDiskSendsRefused",
         "HalfmqSetNoLeader", "HalfmqSetLeaderChanged", "HalfmqSetFollowerBehind"], "ok")
    firing = wait_for(lambda: {n for n, r in observed.prometheus.rules().items() if r["state"] == "firing"} or None, timeout=10)
    assert firing == {"HalfmqTransactionsDiscarded", "HalfmqMessagesDeadLettered"}


def test_promtool_passes_the_shipped_config_once_its_token_file_exists(observed: Observed) -> None:
    checked = promtool("check", "config", str(observed.prometheus.config_file))
    assert checked.returncode == 0, checked.stdout + checked.stderr

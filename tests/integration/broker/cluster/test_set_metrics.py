"""A broker set's /metrics, scraped on every node of a real set on etcd: each node says its role and the term, the leader
the in-sync count, under-replication and each follower's lag, and a send is counted once in ``halfmq_messages_in_total``
over the set (the followers count what they replicate as ``halfmq_replica_messages_in_total``)."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.broker.http_helpers import send
from tests.support.broker_set import BrokerSet
from tests.support.prometheus import MONITORING, PrometheusProcess, config_for
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

TOPIC = "set_metrics"
SENT = 7


def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = httpx.get(f"{url}/metrics", timeout=10)
    answer.raise_for_status()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(answer.text) for s in family.samples}


def _value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_every_node_says_its_role_and_the_leader_its_followers_lag_and_a_send_counts_once(broker_set: BrokerSet,
                                                                                         tmp_path: Path) -> None:
    leader = broker_set.leader()
    with httpx.Client(base_url=broker_set.nodes[leader].url, timeout=10) as client:
        send(client, TOPIC, *(f"m{i}" for i in range(SENT)))
    broker_set.caught_up()
    followers = [n for n in broker_set.nodes if n != leader]
    deadline = time.monotonic() + 30
    while True:  # the followers' topic counts follow their replicated log; the leader sees them caught up
        scraped = {n: _samples(node.url) for n, node in broker_set.nodes.items()}
        replicated = [_value(s, "halfmq_replica_messages_in_total", topic=TOPIC) for n, s in scraped.items() if n != leader]
        settled = (_value(scraped[leader], "halfmq_cluster_in_sync_replicas") == 3
                   and all(_value(scraped[leader], "halfmq_replication_lag_bytes", follower=f) == 0 for f in followers))
        if (replicated == [SENT, SENT] and settled) or time.monotonic() > deadline:
            break
        time.sleep(0.2)

    assert replicated == [SENT, SENT]
    assert sum(_value(s, "halfmq_messages_in_total", topic=TOPIC) or 0 for s in scraped.values()) == SENT
    terms = {_value(s, "halfmq_cluster_term") for s in scraped.values()}
    assert len(terms) == 1 and next(iter(terms)) >= 1
    for node, samples in scraped.items():
        role = "leader" if node == leader else "follower"
        assert _value(samples, "halfmq_cluster_role", role=role) == 1
        assert _value(samples, "halfmq_cluster_role", role="fenced") == 0
        assert (_value(samples, "halfmq_cluster_leader_changes_total") or 0) >= 1
    on_leader = scraped[leader]
    assert _value(on_leader, "halfmq_cluster_in_sync_replicas") == 3
    assert _value(on_leader, "halfmq_cluster_under_replicated") == 0
    for follower in (n for n in broker_set.nodes if n != leader):
        assert _value(on_leader, "halfmq_replication_lag_bytes", follower=follower) == 0
        assert _value(on_leader, "halfmq_replication_lag_seconds", follower=follower) is not None
        assert _value(scraped[follower], "halfmq_cluster_in_sync_replicas") is None  # only the leader knows

    _the_shipped_prometheus_sees_the_set_and_counts_each_send_once(broker_set, leader, tmp_path)


def _the_shipped_prometheus_sees_the_set_and_counts_each_send_once(broker_set: BrokerSet, leader: str, root: Path) -> None:
    """The shipped configuration and rules scraping the three nodes (one set per module: a second set costs ~15 s)."""
    (root / "admin.token").write_text("unused\n")  # the set runs without auth
    config = config_for("unused", root / "admin.token", MONITORING / "rules.yml")
    config["scrape_configs"][0]["static_configs"] = [{"targets": [urlsplit(n.url).netloc for n in broker_set.nodes.values()]}]
    prometheus = PrometheusProcess(root, config)
    try:
        prometheus.start(timeout=60)

        def vector(expr: str) -> dict[str, float] | None:
            got = {",".join(f"{v}" for _, v in sorted(r["metric"].items())): float(r["value"][1]) for r in prometheus.query(expr)}
            return got or None

        # what the "Messages in per topic" panel takes the rate of: each send once over the set, not once per node
        assert wait_for(lambda: vector(f'sum by (topic) (halfmq_messages_in_total{{topic="{TOPIC}"}})'), timeout=20) == {TOPIC: SENT}
        leaders = wait_for(lambda: (v := vector('halfmq_cluster_role{role="leader"}')) and len(v) == 3 and v, timeout=20)
        assert sorted(leaders.values()) == [0, 0, 1]
        # each a scrape of the node's state at its moment: waited for, as a scrape under load may land mid-fetch
        assert wait_for(lambda: vector("max(halfmq_cluster_in_sync_replicas)") == {"": 3} or None, timeout=20)
        assert wait_for(lambda: vector("max(halfmq_cluster_under_replicated)") == {"": 0} or None, timeout=20)
        lag_zero = {n: 0 for n in broker_set.nodes if n != leader}
        assert wait_for(lambda: vector("max by (follower) (halfmq_replication_lag_bytes)") == lag_zero or None, timeout=20)
        names = ("HalfmqSetNoLeader", "HalfmqSetLeaderChanged", "HalfmqSetFollowerBehind")
        wait_for(lambda: (r := prometheus.rules()) and all(r[n]["health"] == "ok" for n in names) or None, timeout=30)
        # a first evaluation before every node was scraped may have seen no leader (pending, for 30 s): it must clear
        wait_for(lambda: prometheus.rules()["HalfmqSetNoLeader"]["state"] == "inactive" or None, timeout=30)
    finally:
        prometheus.stop()

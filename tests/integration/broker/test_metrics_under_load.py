"""Every series of docs/metrics.md read from a real broker's /metrics after a scripted load whose counts are known.

One broker and one load (tests/support/operator_load.py) for the module; each test reads the scrape for one
concept. The producer-transaction, damaged-store and auth series are driven by their own features' tests
(test_producer_transactions, test_open_transaction_bytes, test_damaged_store, test_access_control).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import TEST_BROKER_ENV
from tests.support import operator_load
from tests.support.check_server import CheckServer
from tests.support.operator_load import Expected
from tests.support.processes import ROOT, BrokerProcess
from tests.support.prometheus import SET_SERIES

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Expected]]:
    root = tmp_path_factory.mktemp("metrics")
    broker = BrokerProcess(root / "data", root, {**TEST_BROKER_ENV, **operator_load.BROKER_ENV}).start()
    checks = CheckServer()
    try:
        with httpx.Client(base_url=broker.url, timeout=15) as client:
            yield client, operator_load.run(client, checks)
    finally:
        checks.close()
        broker.stop()


def scrape(client: httpx.Client) -> tuple[Samples, dict[str, str]]:
    """Every sample by (name, sorted labels), and every family's type."""
    families = list(text_string_to_metric_families(client.get("/metrics").text))
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}
    return samples, {f.name: f.type for f in families}


def series(samples: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def by(samples: Samples, name: str, *keys: str) -> dict[tuple[str, ...], float]:
    """``name``'s samples summed by the label values ``keys`` (PromQL's ``sum by``)."""
    out: dict[tuple[str, ...], float] = {}
    for labels, v in series(samples, name).items():
        key = tuple(dict(labels)[k] for k in keys)
        out[key] = out.get(key, 0) + v
    return out


def test_messages_in_counts_every_message_stored_on_a_topic_sends_and_commits(loaded) -> None:
    client, want = loaded
    got, _ = scrape(client)
    assert series(got, "halfmq_messages_in_total") == {(("topic", "PAY"),): want.on_topic}
    assert got[("halfmq_topic_number", ())] == 1


def test_messages_out_counts_every_delivery_redeliveries_included(loaded) -> None:
    client, want = loaded
    got, _ = scrape(client)
    assert by(got, "halfmq_messages_out_total", "consumer_group", "topic") == {
        ("audit", "PAY"): want.audit_deliveries, ("billing", "PAY"): want.on_topic, ("reporting", "PAY"): want.held}


def test_acks_count_what_consumers_acked_and_never_what_went_to_the_dlq(loaded) -> None:
    client, want = loaded
    got, _ = scrape(client)
    assert by(got, "halfmq_ack_messages_total", "consumer_group", "result") == {
        ("audit", "ok"): 0, ("billing", "ok"): want.on_topic, ("reporting", "ok"): 0}
    assert by(got, "halfmq_nack_messages_total", "consumer_group", "result") == {
        ("audit", "ok"): want.audit_deliveries, ("billing", "ok"): 0, ("reporting", "ok"): 0}


def test_send_to_dlq_counts_moves_and_dlq_messages_is_the_depth(loaded) -> None:
    client, want = loaded
    got, types = scrape(client)
    assert by(got, "halfmq_send_to_dlq_messages_total", "consumer_group", "topic") == {
        ("audit", "PAY"): want.on_topic, ("billing", "PAY"): 0, ("reporting", "PAY"): 0}
    assert by(got, "halfmq_dlq_messages", "consumer_group") == {("audit",): want.on_topic, ("billing",): 0, ("reporting",): 0}
    assert types["halfmq_send_to_dlq_messages"] == "counter" and types["halfmq_dlq_messages"] == "gauge"


def test_lag_ready_and_in_flight_per_group_and_topic(loaded) -> None:
    client, want = loaded
    got, _ = scrape(client)
    assert by(got, "halfmq_consumer_lag_messages", "consumer_group", "topic") == {
        ("audit", "PAY"): 0, ("billing", "PAY"): 0, ("reporting", "PAY"): want.on_topic}
    assert {dict(labels)["queue_id"] for labels in series(got, "halfmq_consumer_lag_messages")} == {"0", "1"}
    assert by(got, "halfmq_consumer_inflight_messages", "consumer_group") == {("audit",): 0, ("billing",): 0, ("reporting",): want.held}
    assert by(got, "halfmq_consumer_ready_messages", "consumer_group") == {
        ("audit",): 0, ("billing",): 0, ("reporting",): want.on_topic - want.held}
    assert got[("halfmq_consumer_group_number", ())] == 3


def test_the_brokers_own_group_and_topics_appear_in_no_series(loaded) -> None:
    client, _ = loaded
    for _ in range(2):  # a scrape must not make the half-message scan's group a consumer either
        got, _ = scrape(client)
    labels = {v for (_, ls) in got for v in dict(ls).values()}
    assert not {v for v in labels if v.startswith(("CID_", "RMQ_SYS_", "%DLQ%", "%RETRY%", "TRANS_CHECK_MAX", "HALFMQ_TXN"))}


def test_transactions_count_commits_rollbacks_discards_and_checks(loaded) -> None:
    client, want = loaded
    got, _ = scrape(client)
    assert got[("halfmq_commit_messages_total", ())] == want.commits
    assert got[("halfmq_rollback_messages_total", ())] == want.rollbacks
    assert got[("halfmq_discarded_messages_total", ())] == want.discards
    checks = by(got, "halfmq_check_requests_total", "result")
    assert checks[("unknown",)] == want.discards * want.check_max  # (and no_producer, once the quiet group's half is due)
    assert got[("halfmq_transaction_finish_latency_seconds_count", ())] == want.commits + want.rollbacks + want.discards


def test_half_messages_are_counted_by_age_in_every_bucket(loaded) -> None:
    client, want = loaded
    got, _ = scrape(client)
    half = by(got, "halfmq_half_messages", "age")
    assert set(half) == {("le_10s",), ("le_1m",), ("le_10m",), ("le_1h",), ("gt_1h",)}
    assert sum(half.values()) == want.pending and half[("gt_1h",)] == 0


def test_sends_receives_and_the_store_are_counted(loaded) -> None:
    client, want = loaded
    got, types = scrape(client)
    assert got[("halfmq_send_requests_total", (("status", "SEND_OK"),))] == 1
    assert got[("halfmq_send_latency_seconds_count", ())] == 1
    assert got[("halfmq_receive_latency_seconds_count", ())] > 0
    assert got[("halfmq_commit_log_flushed_offset", ())] <= got[("halfmq_commit_log_end_offset", ())]
    assert got[("halfmq_fsyncs_total", ())] > 0 and types["halfmq_fsyncs"] == "counter"


def _documented() -> dict[str, tuple[str, set[str]]]:
    """docs/metrics.md's table: series name -> (type, label names)."""
    rows = re.findall(r"^\| `(halfmq_\w+)` \| (\w+) \|([^|]*)\|", (Path(ROOT) / "docs" / "metrics.md").read_text(), re.M)
    return {name: (kind, set(re.findall(r"`(\w+)`", labels))) for name, kind, labels in rows}


def test_every_exported_series_is_in_the_docs_table_with_its_type_and_labels(loaded) -> None:
    client, _ = loaded
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text) if not f.name.endswith("_created")}
    documented = _documented()
    exported = {}
    for f in families.values():
        name = f"{f.name}_total" if f.type == "counter" else f.name
        exported[name] = (f.type, {k for s in f.samples for k in s.labels if k != "le"})
    set_only = {n for n in documented if n.startswith(SET_SERIES)}  # a broker set's node exports them: test_set_metrics.py
    assert set_only and set(exported) == set(documented) - set_only
    for name, (kind, labels) in exported.items():
        assert kind == documented[name][0], name
        assert labels <= documented[name][1], name  # a family with no sample yet shows no labels

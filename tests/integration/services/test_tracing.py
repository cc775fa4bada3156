"""One trace from POST /orders to the credit row, read from the spans the real processes export over OTLP.

Broker, order and credit run as real processes with ``HALFMQ_TRACES=otlp`` pointed at a collector in the test
(tests/support/otlp_collector.py). An order's spans and the credit's share one trace id: the W3C trace context
travels in the message's properties and the consumer continues it. The broker's spans are in traces of the broker's
own, each linked to the order's context (a producer does not choose the broker's trace ids); a check-back's request
carries the broker's check span in its ``traceparent`` header, so the order's answer continues the broker's trace.
"""

from __future__ import annotations

import httpx
import pytest

from tests.support.otlp_collector import CollectedSpan, OtlpCollector
from tests.support.processes import ServiceProcess
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

TOPIC = "ORDER_TOPIC"
FAST_CHECKS = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "1", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5"}


@pytest.fixture
def traced_stack(start_broker, tmp_path):
    with OtlpCollector() as collector:
        tracing = {"HALFMQ_TRACES": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        broker = start_broker({**FAST_CHECKS, **tracing})
        order = ServiceProcess("order", tmp_path, {**tracing,
            "ORDER_DATABASE_URL": f"sqlite:///{tmp_path}/order.db", "ORDER_BROKER_URL": broker.url, "ORDER_FAULTS_ENABLED": "true",
            "ORDER_HEARTBEAT_INTERVAL": "1", "ORDER_LOCAL_TX_TIMEOUT": "5"})
        credit = ServiceProcess("credit", tmp_path, {**tracing,
            "CREDIT_DATABASE_URL": f"sqlite:///{tmp_path}/credit.db", "CREDIT_BROKER_URL": broker.url, "CREDIT_WAIT_SECONDS": "1"})
        order.start(), credit.start()
        try:
            yield collector, order, credit
        finally:
            credit.stop(), order.stop()


def balance(credit: ServiceProcess, user: str) -> int:
    return httpx.get(f"{credit.url}/users/{user}/credits").json()["balance"]


def one(spans: list[CollectedSpan], service: str, name: str, kind: str) -> CollectedSpan:
    found = [s for s in spans if (s.service, s.name, s.kind) == (service, name, kind)]
    assert len(found) == 1, (service, name, kind, [(s.service, s.name, s.kind) for s in spans])
    return found[0]


def the_trace_of(collector: OtlpCollector, transaction_id: str, *, until: set[tuple[str, str]]) -> list[CollectedSpan]:
    """The spans of the trace whose SDK half span names ``transaction_id`` and of the broker's traces linked to it, once
    the (service, name) pairs ``until`` are all in."""
    def complete() -> list[CollectedSpan] | None:
        halves = [s for s in collector.spans if s.name == f"half {TOPIC}" and s.kind == "CLIENT"
                  and s.attributes.get("halfmq.transaction.id") == transaction_id]
        if not halves:
            return None
        spans = collector.trace(halves[0].trace_id) + collector.linked_traces(halves[0].trace_id)
        return spans if until <= {(s.service, s.name) for s in spans} else None
    try:
        return wait_for(complete, timeout=30)
    except AssertionError:
        raise AssertionError(f"no complete trace for {transaction_id}: {[(s.service, s.name, s.kind, s.trace_id[:6]) for s in collector.spans]}") from None


def descends(span: CollectedSpan, ancestor: CollectedSpan, spans: list[CollectedSpan]) -> bool:
    by_id = {s.span_id: s for s in spans}
    while span.parent_id in by_id:
        span = by_id[span.parent_id]
        if span.span_id == ancestor.span_id:
            return True
    return False


def linked_to(span: CollectedSpan, producer: CollectedSpan) -> bool:
    """``span`` (the broker's) is in a trace of its own, not the producer's, and links to the producer's span."""
    return span.trace_id != producer.trace_id and span.links == ((producer.trace_id, producer.span_id),)


def assert_messaging(span: CollectedSpan, operation: str, kind: str | None) -> None:
    """The messaging conventions' attributes: system, operation name and type, destination."""
    assert span.attributes["messaging.system"] == "rocketmq", span
    assert span.attributes["messaging.operation.name"] == operation, span
    assert span.attributes.get("messaging.operation.type") == kind, span
    assert span.attributes["messaging.destination.name"] == TOPIC, span


def assert_order_reaches_its_credit(spans: list[CollectedSpan]) -> CollectedSpan:
    """POST /orders is the root; the create span's context is what the credit continues and the broker links to. Returns
    the create span."""
    post = one(spans, "halfmq-order", "POST /orders", "SERVER")
    assert post.parent_id == "" and post.attributes["http.route"] == "/orders" and post.attributes["http.response.status_code"] == 201
    create = one(spans, "halfmq-order", f"create {TOPIC}", "PRODUCER")
    assert descends(create, post, spans)  # FastAPI has spans of its own in between on the route's path
    assert_messaging(create, "create", "create")
    assert create.attributes["messaging.rocketmq.message.type"] == "transaction"
    assert create.attributes["messaging.rocketmq.client_group"] == "order_producer_group"
    half = one(spans, "halfmq-order", f"half {TOPIC}", "CLIENT")
    local = one(spans, "halfmq-order", f"local transaction {TOPIC}", "INTERNAL")
    assert descends(half, post, spans) and descends(local, post, spans)
    assert local.attributes["halfmq.transaction.id"] == half.attributes["halfmq.transaction.id"]
    broker_half = one(spans, "halfmq-broker", f"half {TOPIC}", "SERVER")
    assert linked_to(broker_half, create) and broker_half.attributes["messaging.message.id"] == half.attributes["messaging.message.id"]
    deliver = one(spans, "halfmq-broker", f"deliver {TOPIC}", "SERVER")
    assert linked_to(deliver, create) and deliver.attributes["messaging.consumer.group.name"] == "credit_group"
    process = one(spans, "halfmq-credit", f"process {TOPIC}", "CONSUMER")
    assert process.parent_id == create.span_id and process.trace_id == post.trace_id  # one trace from POST /orders to the credit
    assert_messaging(process, "process", "process")
    assert process.attributes["messaging.consumer.group.name"] == "credit_group"
    assert process.attributes["messaging.message.id"] == half.attributes["messaging.message.id"]
    credit = one(spans, "halfmq-credit", "credit order", "INTERNAL")
    assert credit.parent_id == process.span_id
    return create


def test_one_trace_links_the_order_post_to_its_credit(traced_stack) -> None:
    collector, order, credit = traced_stack
    placed = httpx.post(f"{order.url}/orders", json={"user_id": "u1", "amount": "12.50"}, timeout=30)
    assert placed.status_code == 201 and placed.json()["message_state"] == "committed", placed.text
    wait_for(lambda: balance(credit, "u1") == 12, timeout=30)

    spans = the_trace_of(collector, placed.json()["transaction_id"], until={
        ("halfmq-order", "POST /orders"), ("halfmq-broker", f"end {TOPIC}"), ("halfmq-credit", f"process {TOPIC}"),
        ("halfmq-credit", "credit order"), ("halfmq-broker", f"deliver {TOPIC}")})
    create = assert_order_reaches_its_credit(spans)
    end = one(spans, "halfmq-order", f"end {TOPIC}", "CLIENT")
    assert_messaging(end, "end", "settle")
    assert end.attributes["halfmq.transaction.state"] == "commit"
    broker_end = one(spans, "halfmq-broker", f"end {TOPIC}", "SERVER")
    assert linked_to(broker_end, create)
    assert broker_end.attributes["halfmq.transaction.state"] == "commit" and broker_end.attributes["halfmq.transaction.from_check"] is False
    assert not [s for s in spans if s.name == f"check {TOPIC}"]


def test_a_dropped_end_is_settled_by_a_check_back_in_the_same_trace(traced_stack) -> None:
    collector, order, credit = traced_stack
    dropped = httpx.post(f"{order.url}/orders", json={"user_id": "u2", "amount": "5"}, headers={"X-Fault": "drop-end"}, timeout=30)
    assert dropped.status_code == 201 and dropped.json()["message_state"] == "pending_check", dropped.text
    wait_for(lambda: balance(credit, "u2") == 5, timeout=30)

    spans = the_trace_of(collector, dropped.json()["transaction_id"], until={
        ("halfmq-order", "POST /orders"), ("halfmq-broker", f"check {TOPIC}"), ("halfmq-order", f"check {TOPIC}"),
        ("halfmq-order", "POST /halfmq/check"), ("halfmq-credit", f"process {TOPIC}"), ("halfmq-credit", "credit order"),
        ("halfmq-broker", f"deliver {TOPIC}")})
    create = assert_order_reaches_its_credit(spans)
    assert one(spans, "halfmq-order", f"end {TOPIC}", "CLIENT").attributes["halfmq.transaction.state"] == "unknown"
    asked = one(spans, "halfmq-broker", f"check {TOPIC}", "CLIENT")
    assert linked_to(asked, create) and asked.parent_id == "" and asked.attributes["halfmq.check.outcome"] == "commit"
    assert asked.attributes["halfmq.transaction.id"] == dropped.json()["transaction_id"]
    request = one(spans, "halfmq-order", "POST /halfmq/check", "SERVER")
    assert request.parent_id == asked.span_id and request.trace_id == asked.trace_id  # the check-back's traceparent header
    answered = one(spans, "halfmq-order", f"check {TOPIC}", "SERVER")
    assert answered.parent_id == request.span_id and answered.attributes["halfmq.check.outcome"] == "commit"

"""The broker's spans are in the broker's own trace with a link to the context each message carries (a producer does not
choose the broker's trace ids); a context past the W3C bounds is dropped with one log line; while tracing is off the use
cases run untouched."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

import halfmq.tracing as core
from halfmq.broker.observability import tracing
from tests.support import spans
from tests.support.spans import Recorded

recorded_spans = spans.recorded_spans  # the fixture

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
PARENT_SPAN = 0xB7AD6B7169203331


def half_body(properties: dict[str, str]) -> Any:
    return SimpleNamespace(topic="ORDERS", producer_group="pg", message=SimpleNamespace(properties=properties))


def stored_half() -> Any:
    return SimpleNamespace(answer=SimpleNamespace(msg_id="M1", transaction_id="TX1"))


def ended(half_properties: dict[str, str] | None) -> Any:
    half = None if half_properties is None else SimpleNamespace(topic="RMQ_SYS_TRANS_HALF_TOPIC", properties=half_properties)
    return SimpleNamespace(half=half, tx=SimpleNamespace(producer_group="pg", transaction_id="TX1", msg_id="M1"))


def test_the_broker_reads_halfmq_traces_and_traces_nothing_by_default(monkeypatch) -> None:
    from halfmq.broker.config import BrokerSettings

    assert BrokerSettings().traces == ""
    monkeypatch.setenv("HALFMQ_TRACES", "otlp")
    assert BrokerSettings().traces == "otlp"


def test_off_a_use_case_runs_as_it_would_undecorated() -> None:
    calls: list[tuple[Any, ...]] = []

    @tracing.traced_half
    def store_half(*args: Any) -> Any:
        calls.append(args)
        return "stored"

    assert store_half("rt", "who", "scope", half_body({})) == "stored" and len(calls) == 1
    headers: dict[str, str] = {}
    tracing.inject_current(headers)
    assert headers == {}


def links_to_the_producer(span: ReadableSpan) -> bool:
    """``span`` is a root of a trace of the broker's own (not the producer's) with one link, to the producer's context."""
    [link] = span.links
    return (span.parent is None and span.context.trace_id != TRACE_ID
            and (link.context.trace_id, link.context.span_id) == (TRACE_ID, PARENT_SPAN))


def test_a_half_is_in_the_brokers_own_trace_with_a_link_to_the_context_its_message_carries(recorded_spans: Recorded) -> None:
    tracing.traced_half(lambda *args: stored_half())("rt", "who", "scope", half_body({"traceparent": PARENT}))
    half = recorded_spans.named("half ORDERS")
    assert half.kind is SpanKind.SERVER and links_to_the_producer(half)
    assert half.attributes["halfmq.transaction.id"] == "TX1" and half.attributes["messaging.message.id"] == "M1"
    assert half.attributes["messaging.rocketmq.message.type"] == "transaction"


async def test_an_applied_end_is_linked_to_the_halfs_context_and_names_the_real_topic(recorded_spans: Recorded) -> None:
    async def end(rt: Any, who: Any, scope: Any, transaction_id: str, group: str, state: str, *, from_check: bool = False) -> Any:
        return ended({"traceparent": PARENT, "REAL_TOPIC": "ORDERS"})

    await tracing.traced_end(end)("rt", "who", "scope", "TX1", "pg", "commit", from_check=True)
    span = recorded_spans.named("end ORDERS")
    assert links_to_the_producer(span)
    assert span.attributes["halfmq.transaction.state"] == "commit" and span.attributes["halfmq.transaction.from_check"] is True


def test_an_end_that_applied_nothing_makes_no_span(recorded_spans: Recorded) -> None:
    item = SimpleNamespace(state="unknown", from_check=False)
    tracing.traced_end(lambda *args: ended(None))("rt", "who", "scope", item)
    assert recorded_spans.spans == []


async def test_each_delivered_message_gets_a_deliver_span_linked_to_its_context(recorded_spans: Recorded) -> None:
    messages = [SimpleNamespace(msg_id="M1", delivery_attempt=1, properties={"traceparent": PARENT}),
                SimpleNamespace(msg_id="M2", delivery_attempt=2, properties={})]

    async def receive(*args: Any) -> Any:
        return SimpleNamespace(messages=messages)

    await tracing.traced_deliveries(receive)("use case", SimpleNamespace(group="credit_group", topic="ORDERS"), "body", "caller")
    spans = recorded_spans.spans
    assert [s.name for s in spans] == ["deliver ORDERS", "deliver ORDERS"]
    assert links_to_the_producer(spans[0]) and spans[1].parent is None and not spans[1].links  # a message without context: no link
    assert spans[1].attributes["halfmq.delivery.attempt"] == 2 and spans[0].attributes["messaging.consumer.group.name"] == "credit_group"


async def test_a_check_back_puts_its_span_in_the_requests_traceparent(recorded_spans: Recorded) -> None:
    headers: dict[str, str] = {}

    async def ask() -> Any:
        tracing.inject_current(headers)  # as the check client does, inside the check's span
        return SimpleNamespace(outcome=SimpleNamespace(value="commit"))

    half = SimpleNamespace(topic="ORDERS", properties={"traceparent": PARENT})
    await tracing.checking("TX1", "pg", 1, half, ask())
    check = recorded_spans.named("check ORDERS")
    assert check.kind is SpanKind.CLIENT and links_to_the_producer(check)
    assert check.attributes["halfmq.check.outcome"] == "commit"
    assert headers["traceparent"].split("-")[2] == f"{check.context.span_id:016x}"


async def test_a_send_is_in_the_brokers_own_trace_linked_to_every_messages_context(recorded_spans: Recorded) -> None:
    other = "00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"
    body = SimpleNamespace(messages=[SimpleNamespace(properties={"traceparent": PARENT}), SimpleNamespace(properties={}),
                                     SimpleNamespace(properties={"traceparent": other})])

    async def send(*args: Any) -> Any:
        return "sent"

    assert await tracing.traced_send(send)("use case", SimpleNamespace(topic="ORDERS"), body) == "sent"
    span = recorded_spans.named("send ORDERS")
    assert span.parent is None and span.context.trace_id not in (TRACE_ID, 0x1AF7651916CD43DD8448EB211C80319C)
    assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [
        (TRACE_ID, PARENT_SPAN), (0x1AF7651916CD43DD8448EB211C80319C, 0xC7AD6B7169203331)]


def test_a_producer_cannot_choose_the_trace_id_of_the_brokers_spans(recorded_spans: Recorded) -> None:
    for _ in range(2):
        tracing.traced_half(lambda *args: stored_half())("rt", "who", "scope", half_body({"traceparent": PARENT}))
    first, second = recorded_spans.spans
    assert first.context.trace_id != second.context.trace_id and TRACE_ID not in (first.context.trace_id, second.context.trace_id)


async def test_oversize_trace_headers_on_a_hundred_messages_are_dropped_with_one_log_line(
        recorded_spans: Recorded, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "_reported", False, raising=False)
    oversize = [{"traceparent": PARENT + "-" + "0" * 600}, {"traceparent": PARENT, "tracestate": "k=" + "v" * 250 + ("," + "k=v") * 3000}]
    messages = [SimpleNamespace(msg_id=f"M{i}", delivery_attempt=1, properties=oversize[i % 2]) for i in range(100)]

    async def receive(*args: Any) -> Any:
        return SimpleNamespace(messages=messages)

    with caplog.at_level(logging.DEBUG):
        await tracing.traced_deliveries(receive)("use case", SimpleNamespace(group="credit_group", topic="ORDERS"), "body", "caller")
    assert len(recorded_spans.spans) == 100
    assert [r.levelname for r in caplog.records] == ["WARNING"], [r.getMessage()[:120] for r in caplog.records]
    assert "traceparent: over 512 bytes" in caplog.records[0].getMessage()
    tracestate_only = [s for s in recorded_spans.spans if s.links]  # the well-formed traceparent beside a dropped tracestate
    assert len(tracestate_only) == 50 and all(not s.links[0].context.trace_state for s in tracestate_only)

"""The broker's spans continue the context each message carries; while tracing is off the use cases run untouched."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from opentelemetry.trace import SpanKind

from halfmq.broker import tracing
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


def test_a_half_is_a_child_of_the_context_its_message_carries(recorded_spans: Recorded) -> None:
    tracing.traced_half(lambda *args: stored_half())("rt", "who", "scope", half_body({"traceparent": PARENT}))
    half = recorded_spans.named("half ORDERS")
    assert half.kind is SpanKind.SERVER and half.context.trace_id == TRACE_ID and half.parent.span_id == PARENT_SPAN
    assert half.attributes["halfmq.transaction.id"] == "TX1" and half.attributes["messaging.message.id"] == "M1"
    assert half.attributes["messaging.rocketmq.message.type"] == "transaction"


async def test_an_applied_end_is_spanned_under_the_halfs_context_and_names_the_real_topic(recorded_spans: Recorded) -> None:
    async def end(rt: Any, who: Any, scope: Any, transaction_id: str, group: str, state: str, *, from_check: bool = False) -> Any:
        return ended({"traceparent": PARENT, "REAL_TOPIC": "ORDERS"})

    await tracing.traced_end(end)("rt", "who", "scope", "TX1", "pg", "commit", from_check=True)
    span = recorded_spans.named("end ORDERS")
    assert span.parent.span_id == PARENT_SPAN
    assert span.attributes["halfmq.transaction.state"] == "commit" and span.attributes["halfmq.transaction.from_check"] is True


def test_an_end_that_applied_nothing_makes_no_span(recorded_spans: Recorded) -> None:
    item = SimpleNamespace(state="unknown", from_check=False)
    tracing.traced_end(lambda *args: ended(None))("rt", "who", "scope", item)
    assert recorded_spans.spans == []


async def test_each_delivered_message_gets_a_deliver_span_in_its_own_trace(recorded_spans: Recorded) -> None:
    messages = [SimpleNamespace(msg_id="M1", delivery_attempt=1, properties={"traceparent": PARENT}),
                SimpleNamespace(msg_id="M2", delivery_attempt=2, properties={})]

    async def receive(*args: Any) -> Any:
        return SimpleNamespace(messages=messages)

    await tracing.traced_deliveries(receive)("rt", "credit_group", "ORDERS", "body", "caller")
    spans = recorded_spans.spans
    assert [s.name for s in spans] == ["deliver ORDERS", "deliver ORDERS"]
    assert spans[0].parent.span_id == PARENT_SPAN and spans[1].parent is None  # a message without context starts its own
    assert spans[1].attributes["halfmq.delivery.attempt"] == 2 and spans[0].attributes["messaging.consumer.group.name"] == "credit_group"


async def test_a_check_back_puts_its_span_in_the_requests_traceparent(recorded_spans: Recorded) -> None:
    headers: dict[str, str] = {}

    async def ask() -> Any:
        tracing.inject_current(headers)  # as the check client does, inside the check's span
        return SimpleNamespace(outcome=SimpleNamespace(value="commit"))

    half = SimpleNamespace(topic="ORDERS", properties={"traceparent": PARENT})
    await tracing.checking("TX1", "pg", 1, half, ask())
    check = recorded_spans.named("check ORDERS")
    assert check.kind is SpanKind.CLIENT and check.parent.span_id == PARENT_SPAN
    assert check.attributes["halfmq.check.outcome"] == "commit"
    assert headers["traceparent"].split("-")[2] == f"{check.context.span_id:016x}"

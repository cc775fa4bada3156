"""The SDK's tracing hooks: nothing at all while no tracer provider is set; with one, the W3C context in the message."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind

import halfmq.tracing as core
from halfmq.client import tracing
from halfmq.client.endpoints import end_transaction, half_send
from halfmq.client.half_message_steps import Request, RunLocalTransaction
from halfmq.client.listener import LocalTransactionState
from halfmq.wire import CheckRequest, HalfSendResult, Message, OutgoingMessage, SendStatus
from tests.support import spans
from tests.support.spans import Recorded

recorded_spans = spans.recorded_spans  # the fixture

TRACEPARENT = "traceparent"


def message(properties: dict[str, str] | None = None) -> Message:
    return Message(msg_id="M1", topic="ORDERS", queue_id=0, queue_offset=0, commit_log_offset=0, born_timestamp=1, store_timestamp=1,
                   body="o1", properties=properties or {}, delivery_attempt=1)


async def echo(topic: str, payload: Any) -> Any:
    return payload


def test_without_a_provider_tracing_is_off_and_the_sdk_does_not_even_import_opentelemetry() -> None:
    program = "import sys, halfmq.client; from halfmq import tracing; assert tracing.tracer() is None; " \
              "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported'"
    subprocess.run([sys.executable, "-c", program], check=True)


async def test_off_a_send_adds_no_property_and_makes_no_span() -> None:
    assert core.tracer() is None
    original = OutgoingMessage(body="b", properties={"a": "1"})
    assert await tracing.sent("ORDERS", original, echo) is original
    assert tracing.created("ORDERS", "pg", original) is original
    perform = echo
    assert tracing.transaction_steps(perform, "pg", "ORDERS") is perform  # not even wrapped
    with tracing.processing("g", message()):
        assert not trace.get_current_span().get_span_context().is_valid


async def test_on_a_send_carries_its_span_context_in_traceparent(recorded_spans: Recorded) -> None:
    original = OutgoingMessage(body="b", properties={"a": "1"})
    stamped = await tracing.sent("ORDERS", original, echo)
    span = recorded_spans.named("send ORDERS")
    assert span.kind is SpanKind.PRODUCER
    assert stamped.properties[TRACEPARENT].split("-")[:3] == ["00", f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"]
    assert stamped.properties["a"] == "1" and TRACEPARENT not in original.properties  # a copy: the caller's message is untouched
    assert span.attributes["messaging.system"] == "rocketmq" and span.attributes["messaging.destination.name"] == "ORDERS"
    assert span.attributes["messaging.operation.type"] == "send"


async def test_a_batch_sends_in_one_span_whose_context_every_message_carries(recorded_spans: Recorded) -> None:
    sent = await tracing.sent("ORDERS", [OutgoingMessage(body="1"), OutgoingMessage(body="2")], echo)
    span = recorded_spans.named("send ORDERS")
    assert span.attributes["messaging.batch.message_count"] == 2
    assert {m.properties[TRACEPARENT].split("-")[2] for m in sent} == {f"{span.context.span_id:016x}"}


def test_a_transactional_message_carries_its_create_spans_context(recorded_spans: Recorded) -> None:
    stamped = tracing.created("ORDERS", "pg", OutgoingMessage(body="b"))
    create = recorded_spans.named("create ORDERS")
    assert create.kind is SpanKind.PRODUCER
    assert create.attributes["messaging.rocketmq.message.type"] == "transaction" and create.attributes["messaging.rocketmq.client_group"] == "pg"
    assert stamped.properties[TRACEPARENT].split("-")[2] == f"{create.context.span_id:016x}"


async def test_each_step_of_a_transaction_has_its_span(recorded_spans: Recorded) -> None:
    half = HalfSendResult(status=SendStatus.SEND_OK, transaction_id="TX1", msg_id="M1", commit_log_offset=0, queue_offset=0)
    answers = {"half": half, "local": LocalTransactionState.COMMIT_MESSAGE, "end": {"state": "committed"}}

    async def perform(step: Any) -> Any:
        if isinstance(step, RunLocalTransaction):
            return answers["local"]
        return answers["end" if step.call.path.endswith("/end") else "half"]

    traced = tracing.transaction_steps(perform, "pg", "ORDERS")
    await traced(Request(half_send("pg", "ORDERS", OutgoingMessage(body="b"))))
    await traced(RunLocalTransaction(OutgoingMessage(body="b", properties={"TRANSACTION_ID": "TX1"}), None))
    await traced(Request(end_transaction("TX1", "pg", "commit")))
    assert recorded_spans.named("half ORDERS").attributes["halfmq.transaction.id"] == "TX1"
    assert recorded_spans.named("half ORDERS").attributes["messaging.message.id"] == "M1"
    local = recorded_spans.named("local transaction ORDERS")
    assert local.attributes["halfmq.transaction.id"] == "TX1" and local.attributes["halfmq.transaction.state"] == "commit"
    end = recorded_spans.named("end ORDERS")
    assert end.attributes["halfmq.transaction.id"] == "TX1" and end.attributes["halfmq.transaction.state"] == "commit"
    assert end.attributes["messaging.operation.type"] == "settle"


def test_a_failed_local_transaction_marks_its_span_an_error(recorded_spans: Recorded) -> None:
    def perform(step: Any) -> Any:
        raise RuntimeError("no database")

    with pytest.raises(RuntimeError):
        tracing.transaction_steps_blocking(perform, "pg", "ORDERS")(RunLocalTransaction(OutgoingMessage(body="b"), None))
    assert recorded_spans.named("local transaction ORDERS").status.status_code.name == "ERROR"


def test_the_process_span_is_a_child_of_the_context_the_message_carries(recorded_spans: Recorded) -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with tracing.processing("credit_group", message({TRACEPARENT: parent})):
        inside = trace.get_current_span().get_span_context()
    process = recorded_spans.named("process ORDERS")
    assert process.kind is SpanKind.CONSUMER and inside.span_id == process.context.span_id
    assert f"{process.context.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert f"{process.parent.span_id:016x}" == "b7ad6b7169203331"
    assert process.attributes["messaging.consumer.group.name"] == "credit_group" and process.attributes["messaging.message.id"] == "M1"


async def test_a_check_continues_the_brokers_traceparent_header(recorded_spans: Recorded) -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    request = CheckRequest(transaction_id="TX1", producer_group="pg", check_times=2, message=message())

    async def ask(request: CheckRequest) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    scope = {"headers": [(b"traceparent", parent.encode())]}
    assert await tracing.check_answered(scope, request, ask) is LocalTransactionState.COMMIT_MESSAGE
    check = recorded_spans.named("check ORDERS")
    assert check.kind is SpanKind.SERVER and f"{check.parent.span_id:016x}" == "b7ad6b7169203331"
    assert check.attributes["halfmq.check.outcome"] == "commit" and check.attributes["halfmq.check.times"] == 2


async def nothing() -> list[Message]:
    return []


async def test_a_receive_that_answered_no_message_makes_no_span(recorded_spans: Recorded, monkeypatch) -> None:
    monkeypatch.delenv("HALFMQ_TRACES_IDLE", raising=False)
    assert await tracing.received("g", "ORDERS", nothing()) == []
    assert recorded_spans.spans == []


async def test_asked_for_an_empty_receive_has_its_span_too(recorded_spans: Recorded, monkeypatch) -> None:
    monkeypatch.setenv("HALFMQ_TRACES_IDLE", "true")
    assert await tracing.received("g", "ORDERS", nothing()) == []
    assert recorded_spans.named("receive ORDERS").attributes["messaging.batch.message_count"] == 0


async def test_a_failed_receive_has_its_span_marked_an_error(recorded_spans: Recorded) -> None:
    async def failing() -> list[Message]:
        raise ConnectionError("refused")

    with pytest.raises(ConnectionError):
        await tracing.received("g", "ORDERS", failing())
    assert recorded_spans.named("receive ORDERS").status.status_code is trace.StatusCode.ERROR


async def test_a_receive_counts_what_came_and_a_settle_is_a_settle(recorded_spans: Recorded) -> None:
    async def two() -> list[Message]:
        return [message(), message()]

    assert len(await tracing.received("g", "ORDERS", two())) == 2
    with tracing.settling("ack", "g", "ORDERS", ["h1", "h2"]):
        pass
    assert recorded_spans.named("receive ORDERS").attributes["messaging.batch.message_count"] == 2
    ack = recorded_spans.named("ack ORDERS")
    assert ack.attributes["messaging.operation.type"] == "settle" and ack.attributes["messaging.batch.message_count"] == 2


def test_start_turns_tracing_on_only_when_asked_and_names_what_it_needs() -> None:
    assert not core.start("", "x", {}).on and not core.start(None, "x", {}).on
    with pytest.raises(core.TracingRefused, match="HALFMQ_TRACES=jaeger: halfmq's processes export spans by otlp or console"):
        core.start("jaeger", "x", {})


def test_a_program_whose_provider_otel_sdk_disabled_turned_off_makes_no_span_and_stamps_nothing(monkeypatch) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", TracerProvider())
    monkeypatch.setattr(core, "_cached", None)
    assert core.tracer() is None

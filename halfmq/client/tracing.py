"""The SDK's spans (OpenTelemetry messaging conventions), each hook one line at its call site; nothing while tracing is off.

Every function asks ``halfmq.tracing.tracer()`` first and, while no tracer provider is set, does only the
untraced work: no span, no property added, OpenTelemetry not even imported. With a provider:

- ``sent``: ``send {topic}`` (PRODUCER) around a plain send; its context goes into the message's properties.
- ``created``: ``create {topic}`` (PRODUCER) for a transactional message, whose context the half carries;
  ``transaction_steps`` then spans each step: ``half {topic}`` (the half request), ``local transaction {topic}``
  (the listener's ``execute_local_transaction``) and ``end {topic}`` (the end request).
- ``received``: ``receive {topic}`` (CLIENT) around a receive; ``processing``: ``process {topic}`` (CONSUMER)
  around a handler, a child of the context the message carries; ``settling``: ``ack``/``nack {topic}`` (CLIENT).
- ``check_answered``: ``check {topic}`` (SERVER) around the check app's answer, continuing the broker's
  check-back span from the request's ``traceparent`` header.

The consumer continues the producer's trace (the context the message carries, read by ``halfmq.tracing.extract``,
which drops headers past their bounds); the broker only links to it from its own trace (``halfmq.broker.observability.tracing``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

import halfmq.tracing as core
from halfmq.wire import CheckRequest, EndRequest, HalfSendResult, Message, OutgoingMessage

from .half_message_steps import RunLocalTransaction, Step

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["check_answered", "created", "processing", "received", "sent", "settling", "transaction_steps", "transaction_steps_blocking"]

T = TypeVar("T")
P = TypeVar("P", OutgoingMessage, list[OutgoingMessage])

_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()


def _stamped(message: OutgoingMessage) -> OutgoingMessage:
    """The message with the current trace context in its properties (a copy: the caller's stays as it was)."""
    properties = dict(message.properties)
    core.inject(properties)
    return msgspec.structs.replace(message, properties=properties)


def _kind(name: str) -> Any:
    from opentelemetry.trace import SpanKind

    return SpanKind[name]


# --- producing --------------------------------------------------------------------------------------------------
async def sent(topic: str, payload: P, submit: Callable[[str, P], Awaitable[T]]) -> T:
    """``submit(topic, payload)`` inside a ``send {topic}`` span whose context each message carries."""
    found = core.tracer()
    if found is None:
        return await submit(topic, payload)
    count = len(payload) if isinstance(payload, list) else None
    attributes = core.attributes("send", "send", topic, **{core.BATCH_COUNT: count, core.MESSAGE_TYPE: "normal"})
    with found.start_as_current_span(f"send {topic}", kind=_kind("PRODUCER"), attributes=attributes) as span:
        stamped: Any = [_stamped(m) for m in payload] if isinstance(payload, list) else _stamped(payload)
        result = await submit(topic, stamped)
        if count is None:
            span.set_attribute(core.MESSAGE_ID, getattr(result, "msg_id", ""))
        return result


def created(topic: str, producer_group: str, message: OutgoingMessage) -> OutgoingMessage:
    """A transactional message stamped with its ``create {topic}`` span's context (the span is the creation, now)."""
    found = core.tracer()
    if found is None:
        return message
    attributes = core.attributes("create", "create", topic, **{core.MESSAGE_TYPE: "transaction", core.CLIENT_GROUP: producer_group})
    with found.start_as_current_span(f"create {topic}", kind=_kind("PRODUCER"), attributes=attributes):
        return _stamped(message)


def _step_span(found: Tracer, step: Step, producer_group: str, topic: str) -> contextlib.AbstractContextManager[Span]:
    common = {core.MESSAGE_TYPE: "transaction", core.CLIENT_GROUP: producer_group}
    if isinstance(step, RunLocalTransaction):
        attributes = core.attributes("local transaction", None, topic, **common,
                                        **{core.TRANSACTION_ID: step.message.properties.get("TRANSACTION_ID")})
        return found.start_as_current_span(f"local transaction {topic}", kind=_kind("INTERNAL"), attributes=attributes)
    body = step.call.body
    if isinstance(body, EndRequest):  # the end
        transaction_id = step.call.path.rsplit("/", 2)[-2]
        attributes = core.attributes("end", "settle", topic, **common,
                                        **{core.TRANSACTION_ID: transaction_id, core.TRANSACTION_STATE: body.state})
        return found.start_as_current_span(f"end {topic}", kind=_kind("CLIENT"), attributes=attributes)
    attributes = core.attributes("half", "send", topic, **common)
    return found.start_as_current_span(f"half {topic}", kind=_kind("CLIENT"), attributes=attributes)


def _answered(span: Span, answer: Any) -> None:
    if isinstance(answer, HalfSendResult):
        span.set_attributes({core.MESSAGE_ID: answer.msg_id, core.TRANSACTION_ID: answer.transaction_id})
    elif hasattr(answer, "value"):  # the listener's LocalTransactionState
        span.set_attribute(core.TRANSACTION_STATE, str(answer.value))


def transaction_steps(perform: Callable[[Step], Awaitable[Any]], producer_group: str, topic: str) -> Callable[[Step], Awaitable[Any]]:
    """``perform`` with a span per step of one ``send_in_transaction`` (``perform`` itself while tracing is off)."""
    found = core.tracer()
    if found is None:
        return perform

    async def traced(step: Step) -> Any:
        with _step_span(found, step, producer_group, topic) as span:
            answer = await perform(step)
            _answered(span, answer)
            return answer

    return traced


def transaction_steps_blocking(perform: Callable[[Step], Any], producer_group: str, topic: str) -> Callable[[Step], Any]:
    """``transaction_steps`` for the blocking producer, whose steps run in its caller's thread."""
    found = core.tracer()
    if found is None:
        return perform

    def traced(step: Step) -> Any:
        with _step_span(found, step, producer_group, topic) as span:
            answer = perform(step)
            _answered(span, answer)
            return answer

    return traced


# --- consuming --------------------------------------------------------------------------------------------------
async def received(group: str, topic: str, receiving: Coroutine[Any, Any, list[Message]]) -> list[Message]:
    """The receive, as a ``receive {topic}`` span that counts what came, made once the answer is in: a receive that
    answered no message (an idle long poll, every few seconds of a quiet consumer) makes none unless
    ``HALFMQ_TRACES_IDLE=true`` asks, so a quiet consumer fills no trace store with empty roots."""
    found = core.tracer()
    if found is None:
        return await receiving
    started = time.time_ns()
    try:
        messages = await receiving
    except Exception as exc:  # a failed receive is worth its span: it says why the consumer idles
        span = found.start_span(f"receive {topic}", kind=_kind("CLIENT"), attributes=core.attributes(
            "receive", "receive", topic, **{core.CONSUMER_GROUP: group}), start_time=started)
        span.record_exception(exc)
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        span.end()
        raise
    if messages or core.traces_idle(os.environ):
        attributes = core.attributes("receive", "receive", topic, **{core.CONSUMER_GROUP: group, core.BATCH_COUNT: len(messages)})
        found.start_span(f"receive {topic}", kind=_kind("CLIENT"), attributes=attributes, start_time=started).end()
    return messages


def processing(group: str, message: Message) -> contextlib.AbstractContextManager[Any]:
    """A ``process {topic}`` span for a handler's run: a child of the context the message carries."""
    found = core.tracer()
    if found is None:
        return _OFF
    attributes = core.attributes("process", "process", message.topic, **{
        core.CONSUMER_GROUP: group, core.MESSAGE_ID: message.msg_id, core.MESSAGE_TAG: message.tag,
        core.DELIVERY_ATTEMPT: message.delivery_attempt})
    return found.start_as_current_span(f"process {message.topic}", context=core.extract(message.properties),
                                       kind=_kind("CONSUMER"), attributes=attributes)


def settling(action: str, group: str, topic: str, handles: Sequence[str]) -> contextlib.AbstractContextManager[Any]:
    """An ``ack``/``nack {topic}`` span (operation type settle) for one settle request."""
    found = core.tracer()
    if found is None:
        return _OFF
    attributes = core.attributes(action, "settle", topic, **{core.CONSUMER_GROUP: group, core.BATCH_COUNT: len(handles)})
    return found.start_as_current_span(f"{action} {topic}", kind=_kind("CLIENT"), attributes=attributes)


# --- check-backs ------------------------------------------------------------------------------------------------
def _headers(scope: MutableMapping[str, Any]) -> dict[str, str]:
    return {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers", ())}


async def check_answered(scope: MutableMapping[str, Any], request: CheckRequest, ask: Callable[[CheckRequest], Awaitable[T]]) -> T:
    """``ask(request)`` inside a ``check {topic}`` span continuing the broker's check-back (its ``traceparent`` header)."""
    found = core.tracer()
    if found is None:
        return await ask(request)
    from opentelemetry import trace

    current = trace.get_current_span().get_span_context()
    parent = None if current.is_valid else core.extract(_headers(scope))  # a server span of the app's own comes first
    attributes = core.attributes("check", "process", request.message.topic, **{
        core.CLIENT_GROUP: request.producer_group, core.TRANSACTION_ID: request.transaction_id,
        core.CHECK_TIMES: request.check_times, core.MESSAGE_TYPE: "transaction"})
    with found.start_as_current_span(f"check {request.message.topic}", context=parent, kind=_kind("SERVER"), attributes=attributes) as span:
        answer = await ask(request)
        span.set_attribute(core.CHECK_OUTCOME, str(getattr(answer, "value", answer)))
        return answer

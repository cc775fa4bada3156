"""The broker's spans: each a decorator on a use case or one line in the check-back loop; nothing while tracing is off.

A message's trace context (W3C ``traceparent`` in its properties, put there by the producer's SDK) is the
producer's word, not the broker's: every broker span is in the broker's own trace (its current context: today a
new root per span) with a **link** to the context each of its messages carries, never a child of it. So a
producer cannot choose the trace ids the broker's spans are filed under, and a trace viewer still goes from the
producer's trace to the broker's spans and back by the links. The consumer's SDK continues the producer's trace
(``halfmq.client.tracing.processing``), so the producer's trace still runs to the consumer's handler; a
check-back's request carries the broker's ``check`` span, which the producer's check endpoint continues:

| span | kind | where |
|---|---|---|
| ``send {topic}`` | SERVER | ``usecases.sending.send``: a plain send (a link to each message's context) |
| ``half {topic}`` | SERVER | ``usecases.half_sending.store_half``: a half message written (single and batch routes) |
| ``end {topic}`` | SERVER | ``usecases.ending.end`` / ``end_item``: a commit or rollback applied |
| ``check {topic}`` | CLIENT | ``half_messages.check_service``: a check-back asked; its own ``traceparent`` goes in the request |
| ``deliver {topic}`` | SERVER | ``usecases.receiving.receive``: a message handed to a consumer group |

Tracing is on when the process set a tracer provider (``halfmq.tracing.start``, from ``OTEL_TRACES_EXPORTER`` or ``HALFMQ_TRACES``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import halfmq.tracing as core
from halfmq.broker.half_messages import record_names as names

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from halfmq.broker.store.record import StoredMessage

__all__ = ["checking", "inject_current", "linked", "traced_deliveries", "traced_end", "traced_half", "traced_send"]

P = ParamSpec("P")
T = TypeVar("T")


def _kind(name: str) -> Any:
    from opentelemetry.trace import SpanKind

    return SpanKind[name]


def linked(*carriers: Mapping[str, str]) -> list[Any]:
    """A span link to the trace context each of ``carriers`` (messages' properties) holds, if it holds one."""
    from opentelemetry.trace import Link, get_current_span

    found = [get_current_span(core.extract(carrier)).get_span_context() for carrier in carriers]
    return [Link(c) for c in found if c.is_valid]


def _when_traced(call: Callable[P, T], traced: Callable[Concatenate[Tracer, P], T]) -> Callable[P, T]:
    """``call`` straight through while tracing is off (no span, no argument read), else ``traced(tracer, *args)``:
    the one place a decorator below decides whether there is anything to trace."""
    @functools.wraps(call)
    def deciding(*args: P.args, **kwargs: P.kwargs) -> T:
        found = core.tracer()
        return call(*args, **kwargs) if found is None else traced(found, *args, **kwargs)
    return deciding


def _when_traced_async(call: Callable[P, Awaitable[T]], traced: Callable[Concatenate[Tracer, P], Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """``_when_traced`` for a coroutine function: the tracer is looked up when the call runs, not when it is made."""
    @functools.wraps(call)
    async def deciding(*args: P.args, **kwargs: P.kwargs) -> T:
        found = core.tracer()
        return await (call(*args, **kwargs) if found is None else traced(found, *args, **kwargs))
    return deciding


def traced_send(send: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """``Sending.send(self, publisher, body)`` in a ``send {topic}`` span of the broker's trace, linked to each message's context."""
    async def in_span(found: Tracer, *args: P.args, **kwargs: P.kwargs) -> T:
        topic, body = args[1].topic, args[2]  # type: ignore[attr-defined]
        messages = body.messages  # type: ignore[attr-defined]
        attributes = core.attributes("send", "send", str(topic), **{core.BATCH_COUNT: len(messages)})
        with found.start_as_current_span(f"send {topic}", kind=_kind("SERVER"), attributes=attributes,
                                         links=linked(*(m.properties for m in messages))):
            return await send(*args, **kwargs)
    return _when_traced_async(send, in_span)


def traced_half(store: Callable[P, T]) -> Callable[P, T]:
    """``HalfSending.store_half(self, who, scope, body)`` in a ``half {topic}`` span of the broker's trace, linked to the half's context."""
    def in_span(found: Tracer, *args: P.args, **kwargs: P.kwargs) -> T:
        body: Any = args[3]
        attributes = core.attributes("half", "send", body.topic, **{core.CLIENT_GROUP: body.producer_group, core.MESSAGE_TYPE: "transaction"})
        with found.start_as_current_span(f"half {body.topic}", kind=_kind("SERVER"), attributes=attributes,
                                         links=linked(body.message.properties)) as span:
            stored: Any = store(*args, **kwargs)
            span.set_attributes({core.MESSAGE_ID: stored.answer.msg_id, core.TRANSACTION_ID: stored.answer.transaction_id})
            return stored  # type: ignore[no-any-return]
    return _when_traced(store, in_span)


def _ended(found: Tracer, outcome: Any, state: str, from_check: bool, started: int) -> None:
    """An ``end {topic}`` span from ``started`` to now, once the end is known to have applied (``outcome.half`` read)."""
    half: StoredMessage | None = outcome.half
    if half is None:
        return  # a repeated end, or "unknown": nothing was applied, and the half was not read
    topic = half.properties.get(names.REAL_TOPIC, half.topic)
    attributes = core.attributes("end", "settle", topic, **{core.CLIENT_GROUP: outcome.tx.producer_group, core.TRANSACTION_ID: outcome.tx.transaction_id,
                                                            core.TRANSACTION_STATE: state, core.FROM_CHECK: from_check,
                                                            core.MESSAGE_ID: outcome.tx.msg_id, core.MESSAGE_TYPE: "transaction"})
    span = found.start_span(f"end {topic}", kind=_kind("SERVER"), attributes=attributes, links=linked(half.properties), start_time=started)
    span.end()


def traced_end(end: Callable[P, T]) -> Callable[P, T]:
    """``Ending.end(self, who, scope, transaction_id, group, state, from_check=…)`` or ``Ending.end_item(self, who, scope, item)``:
    an ``end`` span."""
    def described(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[str, bool]:
        if len(args) == 4:  # end_item: the item carries the state
            return args[3].state, bool(args[3].from_check)
        return args[5], bool(kwargs.get("from_check", False))

    if _is_async(end):
        async def ended_async(found: Tracer, *args: P.args, **kwargs: P.kwargs) -> Any:
            started = time.time_ns()
            outcome = await end(*args, **kwargs)  # type: ignore[misc]
            _ended(found, outcome, *described(args, kwargs), started)
            return outcome
        return _when_traced_async(end, ended_async)  # type: ignore[arg-type, return-value]

    def ended(found: Tracer, *args: P.args, **kwargs: P.kwargs) -> T:
        started = time.time_ns()
        outcome = end(*args, **kwargs)
        _ended(found, outcome, *described(args, kwargs), started)
        return outcome
    return _when_traced(end, ended)


def _is_async(function: Callable[..., Any]) -> bool:
    import inspect

    return inspect.iscoroutinefunction(function)


def traced_deliveries(receive: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """``Receiving.receive(self, subscriber, body, caller)``: a ``deliver {topic}`` span per message handed out, linked to its context."""
    async def in_spans(found: Tracer, *args: P.args, **kwargs: P.kwargs) -> T:
        started = time.time_ns()
        answer: Any = await receive(*args, **kwargs)
        group, topic = args[1].group, args[1].topic  # type: ignore[attr-defined]
        for message in answer.messages:
            attributes = core.attributes("deliver", "receive", topic, **{core.CONSUMER_GROUP: group, core.MESSAGE_ID: message.msg_id,
                                                                        core.DELIVERY_ATTEMPT: message.delivery_attempt})
            found.start_span(f"deliver {topic}", kind=_kind("SERVER"), attributes=attributes, links=linked(message.properties),
                             start_time=started).end()
        return answer  # type: ignore[no-any-return]
    return _when_traced_async(receive, in_spans)


async def checking(transaction_id: str, producer_group: str, check_times: int, message: Any,
                   asking: Coroutine[Any, Any, T]) -> T:
    """The check-back's calls inside a ``check {topic}`` span of the broker's trace, linked to the half's context (its
    outcome recorded); the request carries this span's context, not the producer's."""
    found = core.tracer()
    if found is None:
        return await asking
    attributes = core.attributes("check", "send", message.topic, **{core.CLIENT_GROUP: producer_group, core.TRANSACTION_ID: transaction_id,
                                                                   core.CHECK_TIMES: check_times, core.MESSAGE_TYPE: "transaction"})
    with found.start_as_current_span(f"check {message.topic}", kind=_kind("CLIENT"), attributes=attributes,
                                     links=linked(message.properties)) as span:
        answer = await asking
        outcome = getattr(answer, "outcome", None)
        span.set_attribute(core.CHECK_OUTCOME, str(getattr(outcome, "value", outcome)))
        return answer


def inject_current(headers: MutableMapping[str, str]) -> None:
    """The current trace context into a check-back request's headers (``traceparent``), while tracing is on."""
    if core.tracer() is not None:
        core.inject(headers)

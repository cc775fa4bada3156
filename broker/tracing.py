"""The broker's spans: each a decorator on a use case or one line in the check-back loop; nothing while tracing is off.

Every span continues the trace its message carries (W3C ``traceparent`` in the message's properties, put there
by the producer's SDK), so one trace runs from the producer's request through the broker to the consumer:

| span | kind | where |
|---|---|---|
| ``send {topic}`` | SERVER | ``usecases.sending.send``: a plain send (the first message's context; the others linked) |
| ``half {topic}`` | SERVER | ``usecases.half_sending.store_half``: a half message written (single and batch routes) |
| ``end {topic}`` | SERVER | ``usecases.ending.end`` / ``end_item``: a commit or rollback applied |
| ``check {topic}`` | CLIENT | ``half_messages.check_service``: a check-back asked; its ``traceparent`` goes in the request's headers |
| ``deliver {topic}`` | SERVER | ``usecases.receiving.receive``: a message handed to a consumer group |

Tracing is on when the process set a tracer provider (``halfmq.tracing.start``, from ``HALFMQ_TRACES``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import halfmq.tracing as core

from .half_messages import record_names as names

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from .store.record import StoredMessage

__all__ = ["checking", "inject_current", "traced_deliveries", "traced_end", "traced_half", "traced_send"]

P = ParamSpec("P")
T = TypeVar("T")


def _kind(name: str) -> Any:
    from opentelemetry.trace import SpanKind

    return SpanKind[name]


def _links(contexts: list[Any]) -> list[Any]:
    from opentelemetry.trace import Link, get_current_span

    found = [get_current_span(c).get_span_context() for c in contexts]
    return [Link(c) for c in found if c.is_valid]


def traced_send(send: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """``send(rt, who, topic, body)`` in a ``send {topic}`` span: a child of its first message's context."""
    @functools.wraps(send)
    async def traced(*args: P.args, **kwargs: P.kwargs) -> T:
        found = core.tracer()
        if found is None:
            return await send(*args, **kwargs)
        topic, body = args[2], args[3]
        messages = body.messages  # type: ignore[attr-defined]
        contexts = [core.extract(m.properties) for m in messages]
        attributes = core.attributes("send", "send", str(topic), **{core.BATCH_COUNT: len(messages)})
        with found.start_as_current_span(f"send {topic}", context=contexts[0] if contexts else None, kind=_kind("SERVER"),
                                         attributes=attributes, links=_links(contexts[1:])):
            return await send(*args, **kwargs)
    return traced


def traced_half(store: Callable[P, T]) -> Callable[P, T]:
    """``store_half(rt, who, scope, body)`` in a ``half {topic}`` span: a child of the half message's context."""
    @functools.wraps(store)
    def traced(*args: P.args, **kwargs: P.kwargs) -> T:
        found = core.tracer()
        if found is None:
            return store(*args, **kwargs)
        body: Any = args[3]
        attributes = core.attributes("half", "send", body.topic, **{core.CLIENT_GROUP: body.producer_group, core.MESSAGE_TYPE: "transaction"})
        with found.start_as_current_span(f"half {body.topic}", context=core.extract(body.message.properties), kind=_kind("SERVER"),
                                         attributes=attributes) as span:
            stored: Any = store(*args, **kwargs)
            span.set_attributes({core.MESSAGE_ID: stored.answer.msg_id, core.TRANSACTION_ID: stored.answer.transaction_id})
            return stored  # type: ignore[no-any-return]
    return traced


def _ended(found: Tracer, outcome: Any, state: str, from_check: bool, started: int) -> None:
    """An ``end {topic}`` span from ``started`` to now, once the end is known to have applied (``outcome.half`` read)."""
    half: StoredMessage | None = outcome.half
    if half is None:
        return  # a repeated end, or "unknown": nothing was applied, and the half was not read
    topic = half.properties.get(names.REAL_TOPIC, half.topic)
    attributes = core.attributes("end", "settle", topic, **{core.CLIENT_GROUP: outcome.tx.producer_group, core.TRANSACTION_ID: outcome.tx.transaction_id,
                                                            core.TRANSACTION_STATE: state, core.FROM_CHECK: from_check,
                                                            core.MESSAGE_ID: outcome.tx.msg_id, core.MESSAGE_TYPE: "transaction"})
    span = found.start_span(f"end {topic}", context=core.extract(half.properties), kind=_kind("SERVER"), attributes=attributes, start_time=started)
    span.end()


def traced_end(end: Callable[P, T]) -> Callable[P, T]:
    """``end(rt, who, scope, transaction_id, group, state, from_check=…)`` or ``end_item(rt, who, scope, item)``: an ``end`` span."""
    def described(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[str, bool]:
        if len(args) == 4:  # end_item: the item carries the state
            return args[3].state, bool(args[3].from_check)
        return args[5], bool(kwargs.get("from_check", False))

    if _is_async(end):
        @functools.wraps(end)
        async def traced_async(*args: P.args, **kwargs: P.kwargs) -> Any:
            found = core.tracer()
            if found is None:
                return await end(*args, **kwargs)  # type: ignore[misc]
            started = time.time_ns()
            outcome = await end(*args, **kwargs)  # type: ignore[misc]
            _ended(found, outcome, *described(args, kwargs), started)
            return outcome
        return traced_async  # type: ignore[return-value]

    @functools.wraps(end)
    def traced(*args: P.args, **kwargs: P.kwargs) -> T:
        found = core.tracer()
        if found is None:
            return end(*args, **kwargs)
        started = time.time_ns()
        outcome = end(*args, **kwargs)
        _ended(found, outcome, *described(args, kwargs), started)
        return outcome
    return traced


def _is_async(function: Callable[..., Any]) -> bool:
    import inspect

    return inspect.iscoroutinefunction(function)


def traced_deliveries(receive: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """``receive(rt, group, topic, body, caller)``: a ``deliver {topic}`` span per message handed out, a child of its context."""
    @functools.wraps(receive)
    async def traced(*args: P.args, **kwargs: P.kwargs) -> T:
        found = core.tracer()
        if found is None:
            return await receive(*args, **kwargs)
        started = time.time_ns()
        answer: Any = await receive(*args, **kwargs)
        group, topic = str(args[1]), str(args[2])
        for message in answer.messages:
            attributes = core.attributes("deliver", "receive", topic, **{core.CONSUMER_GROUP: group, core.MESSAGE_ID: message.msg_id,
                                                                        core.DELIVERY_ATTEMPT: message.delivery_attempt})
            found.start_span(f"deliver {topic}", context=core.extract(message.properties), kind=_kind("SERVER"), attributes=attributes,
                             start_time=started).end()
        return answer  # type: ignore[no-any-return]
    return traced


async def checking(transaction_id: str, producer_group: str, check_times: int, message: Any,
                   asking: Coroutine[Any, Any, T]) -> T:
    """The check-back's calls inside a ``check {topic}`` span, a child of the half's context (its outcome recorded)."""
    found = core.tracer()
    if found is None:
        return await asking
    attributes = core.attributes("check", "send", message.topic, **{core.CLIENT_GROUP: producer_group, core.TRANSACTION_ID: transaction_id,
                                                                   core.CHECK_TIMES: check_times, core.MESSAGE_TYPE: "transaction"})
    with found.start_as_current_span(f"check {message.topic}", context=core.extract(message.properties), kind=_kind("CLIENT"),
                                     attributes=attributes) as span:
        answer = await asking
        outcome = getattr(answer, "outcome", None)
        span.set_attribute(core.CHECK_OUTCOME, str(getattr(outcome, "value", outcome)))
        return answer


def inject_current(headers: MutableMapping[str, str]) -> None:
    """The current trace context into a check-back request's headers (``traceparent``), while tracing is on."""
    if core.tracer() is not None:
        core.inject(headers)

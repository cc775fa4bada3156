"""Receive messages (pop consumption, long poll): who may, and what a consumer gets."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from halfmq.broker.delivery.delivery_service import Delivery
from halfmq.broker.messages.view import message_view
from halfmq.broker.observability.tracing import traced_deliveries
from halfmq.broker.protocol import ReceiveRequest
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.wire import Message, ReceiveResponse

from .caller import Scope

if TYPE_CHECKING:
    from halfmq.broker.runtime import BrokerRuntime

__all__ = ["Delivery", "receive", "subscriber", "wanted"]


class Caller(Protocol):
    async def is_disconnected(self) -> bool: ...


def subscriber(rt: BrokerRuntime, who: Principal, scope: Scope, group: str, topic: str) -> Principal:
    """``who``, allowed to consume ``topic`` as ``group`` (AccessDenied otherwise): receive, ack, nack and the rest."""
    rt.access.authorize(who, Action.SUBSCRIBE, Resource.group(group), scope)
    rt.access.authorize(who, Action.SUBSCRIBE, Resource.topic(topic), scope)
    return who


@traced_deliveries
async def receive(rt: BrokerRuntime, group: str, topic: str, body: ReceiveRequest, caller: Caller) -> ReceiveResponse:
    """Up to ``body.max_messages`` deliveries; handed back if ``caller`` hung up during a held poll."""
    started = time.perf_counter()
    # First without waiting: messages found at once go straight back. The client asked for them
    # a moment ago, so the hang-up probe (a few ms on granian) is only worth it after a held poll.
    deliveries = await rt.delivery.receive(group, topic, body.max_messages, body.invisible_seconds, 0.0)
    if not deliveries and body.wait_seconds > 0:
        deliveries = await rt.delivery.receive(group, topic, body.max_messages, body.invisible_seconds, body.wait_seconds)
        if deliveries and await caller.is_disconnected():
            # The long-poller hung up: hand the messages back instead of hiding them until they expire.
            rt.delivery.release(group, topic, [d.receipt_handle for d in deliveries])
            return ReceiveResponse(messages=[])
        _fence_again(rt, group, topic, deliveries)
    messages: list[Message] = []
    for d in deliveries:
        view = message_view(d.message)
        view.receipt_handle = d.receipt_handle
        view.delivery_attempt = d.delivery_attempt
        messages.append(view)
    if messages:
        rt.metrics.receive_latency.observe(time.perf_counter() - started)
    return ReceiveResponse(messages=messages)


def _fence_again(rt: BrokerRuntime, group: str, topic: str, deliveries: list[Delivery]) -> None:
    """The delivery fence once more after the hang-up probe's await: a set's leader paused past its lease meanwhile (a
    stall, SIGSTOP) while another node led gives the deliveries back and answers NOT_LEADER, never its stale state."""
    try:
        rt.delivery.fence()
    except Exception:
        rt.delivery.release(group, topic, [d.receipt_handle for d in deliveries])
        raise


async def deliveries(rt: BrokerRuntime, group: str, topic: str, batch: int, invisible: float, wait: float) -> list[Delivery]:
    """Up to ``batch`` deliveries, waiting up to ``wait`` seconds for the first (RocketMQ 5's long poll)."""
    return await rt.delivery.receive(group, topic, batch, invisible, wait)


def wanted(rt: BrokerRuntime, group: str, topic: str, deliveries: list[Delivery], tags: set[str] | None) -> list[Delivery]:
    """RocketMQ 5 filters by tag on the server: what the subscription does not want is consumed for it."""
    skipped = [d.receipt_handle for d in deliveries if tags is not None and d.message.properties.get("TAGS") not in tags]
    if skipped:
        rt.delivery.ack(group, topic, skipped)
    return [d for d in deliveries if d.receipt_handle not in skipped]

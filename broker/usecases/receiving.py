"""Receive messages (pop consumption, long poll): what a consumer gets, once ``Access.subscriber`` allowed it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from halfmq.broker.delivery.delivery_service import Delivery
from halfmq.broker.messages.view import message_view
from halfmq.broker.observability.metrics import BrokerMetrics
from halfmq.broker.observability.tracing import traced_deliveries
from halfmq.broker.security.access import Subscriber
from halfmq.errors import InvalidTagFilter
from halfmq.wire import Message, ReceiveRequest, ReceiveResponse, subscription_tags

from .ports import Deliveries

__all__ = ["Delivery", "Receiving", "tag_filter"]


def tag_filter(expression: str | list[str] | None) -> frozenset[str] | None:
    """The tags a receive wants (``wire.subscription_tags``: a list or RocketMQ's ``"a || b"``; None: all), over HTTP and the
    gRPC front alike; a filter past its bounds is INVALID_TAG_FILTER, before anything is delivered."""
    try:
        return subscription_tags(expression)
    except ValueError as exc:
        raise InvalidTagFilter(str(exc)) from None


class Caller(Protocol):
    async def is_disconnected(self) -> bool: ...


@dataclass(eq=False)  # a use case, compared by identity
class Receiving:
    deliveries: Deliveries
    metrics: BrokerMetrics

    @traced_deliveries
    async def receive(self, subscriber: Subscriber, body: ReceiveRequest, caller: Caller) -> ReceiveResponse:
        """Up to ``body.max_messages`` deliveries; handed back if ``caller`` hung up during a held poll.

        With a tag filter, what it does not want is consumed for the group (``wanted``) and the receive goes on, at
        once while there was anything to pass over, then waiting what is left of ``wait_seconds``.
        """
        started = time.perf_counter()
        group, topic, tags = subscriber.group, subscriber.topic, tag_filter(body.tags)
        deadline, deliveries = time.monotonic() + body.wait_seconds, list[Delivery]()
        # First without waiting: messages found at once go straight back. The client asked for them
        # a moment ago, so the hang-up probe (a few ms on granian) is only worth it after a held poll.
        while found := await self.deliveries.receive(group, topic, body.max_messages, body.invisible_seconds, 0.0):
            if deliveries := self.wanted(subscriber, found, tags):
                break
        wait = body.wait_seconds
        while not deliveries and wait > 0:
            found = await self.deliveries.receive(group, topic, body.max_messages, body.invisible_seconds, wait)
            if not found:
                break  # the held poll ended empty: its time ran out, or the broker is stopping (never spin on it)
            if await caller.is_disconnected():
                # The long-poller hung up: hand the messages back instead of hiding them until they expire.
                self.deliveries.release(group, topic, [d.receipt_handle for d in found])
                return ReceiveResponse(messages=[])
            self._fence_again(group, topic, found)
            deliveries = self.wanted(subscriber, found, tags)
            wait = deadline - time.monotonic()  # (only with a filter that passed over all it found)
        messages: list[Message] = []
        for d in deliveries:
            view = message_view(d.message)
            view.receipt_handle = d.receipt_handle
            view.delivery_attempt = d.delivery_attempt
            messages.append(view)
        if messages:
            self.metrics.receive_latency.observe(time.perf_counter() - started)
        return ReceiveResponse(messages=messages)

    def _fence_again(self, group: str, topic: str, deliveries: list[Delivery]) -> None:
        """The delivery fence once more after the hang-up probe's await: a set's leader paused past its lease meanwhile (a
        stall, SIGSTOP) while another node led gives the deliveries back and answers NOT_LEADER, never its stale state."""
        try:
            self.deliveries.fence()
        except Exception:
            self.deliveries.release(group, topic, [d.receipt_handle for d in deliveries])
            raise

    async def deliveries_for(self, subscriber: Subscriber, batch: int, invisible: float, wait: float) -> list[Delivery]:
        """Up to ``batch`` deliveries, waiting up to ``wait`` seconds for the first (RocketMQ 5's long poll)."""
        return await self.deliveries.receive(subscriber.group, subscriber.topic, batch, invisible, wait)

    def wanted(self, subscriber: Subscriber, deliveries: list[Delivery], tags: frozenset[str] | None) -> list[Delivery]:
        """RocketMQ 5 filters by tag on the server: what the subscription does not want is consumed for it."""
        skipped = [d.receipt_handle for d in deliveries if tags is not None and d.message.properties.get("TAGS") not in tags]
        if skipped:
            self.deliveries.ack(subscriber.group, subscriber.topic, skipped)
        return [d for d in deliveries if d.receipt_handle not in skipped]

"""Receive, then ack or nack by hand: RocketMQ 5's ``SimpleConsumer``, for one (group, topic).

Why a second consumer beside the handler loop (``consumer.Consumer``): a
program that must decide itself when a message counts as done (copying it in
a producer transaction, a tool stepping through delivery, a test) needs the
three calls and nothing else. RocketMQ 5 names this ``SimpleConsumer`` and the
loop ``PushConsumer``; halfmq uses its names for both ideas.

``receive`` is never retried here: a retry after a timeout could hide messages
the broker already handed out, and the loops have their own backoff. ``ack``
and ``nack`` are retried on retriable errors, since settling a handle twice
only yields ``EXPIRED`` the second time.

``AsyncSimpleConsumer`` is the implementation; ``SimpleConsumer`` runs it on
the SDK's event-loop thread (``loop_thread``), so both behave alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Unpack

from halfmq.wire import (
    MAX_INVISIBLE_SECONDS,
    MAX_RECEIVE,
    ConsumerGroupInfo,
    Message,
    ReceiveRequest,
    SettleResult,
    SettleStatus,
    subscription_tags,
)

from . import endpoints, tracing
from .loop_thread import Blocking, blocking
from .transport import AsyncClient, TransportOptions

__all__ = ["AsyncSimpleConsumer", "SimpleConsumer", "receipt_handles"]


def receipt_handles(messages: Sequence[Message | str]) -> list[str]:
    """The receipt handles to settle: a received ``Message``'s, or a handle as given (Kafka and RocketMQ users pass
    the messages; ``send_offsets_to_transaction`` takes both too). A bare ``str`` is refused: it would be settled
    character by character."""
    if isinstance(messages, str):
        raise TypeError("pass a list of messages or receipt handles, not one string")
    handles = []
    for item in messages:
        handle = item if isinstance(item, str) else getattr(item, "receipt_handle", None)
        if not isinstance(handle, str):
            raise TypeError(f"settle received messages or their receipt handles, not {type(item).__name__}"
                            + (" without a receipt handle (an offset read's)" if isinstance(item, Message) else ""))
        handles.append(handle)
    return handles

def tag_list(tags: str | Sequence[str] | None) -> list[str] | None:
    """A receive's tag filter as the request sends it (sorted; None: every message); one past its bounds is a ValueError here."""
    wanted = subscription_tags(tags if isinstance(tags, str) or tags is None else tuple(tags))
    return None if wanted is None else sorted(wanted)


class AsyncSimpleConsumer(AsyncClient):
    """Receive and settle messages of one consumer group on one topic, with asyncio.

    A consumer has few requests in flight (one long poll plus settles), so the
    default pool is small (``pool_size=2``, ``max_in_flight=16``); raise them when
    sharing one client widely. The other options are ``AsyncClient``'s.
    """

    def __init__(self, base_url: str | None, group: str, topic: str, **options: Unpack[TransportOptions]) -> None:
        options.setdefault("pool_size", 2)
        options.setdefault("max_in_flight", 16)
        super().__init__(base_url, **options)
        self.group = group
        self.topic = topic

    async def receive(self, max_messages: int = 16, invisible_seconds: float = 30.0, wait_seconds: float = 0.0,
                      tags: str | Sequence[str] | None = None) -> list[Message]:
        """Up to ``max_messages``, hidden from the group for ``invisible_seconds`` unless settled first.

        With ``wait_seconds`` the broker holds the request until a message
        arrives or the time is up (a long poll), so an idle topic costs no
        busy polling. ``tags`` (``["a", "b"]`` or RocketMQ's ``"a || b"``): only messages with one of them are
        delivered; the group's others are consumed for it, never delivered to it later (RocketMQ's tag subscription).
        """
        request = ReceiveRequest(max_messages=max_messages, invisible_seconds=invisible_seconds, wait_seconds=wait_seconds,
                                 tags=tag_list(tags))
        # The long poll may hold the answer for wait_seconds: the HTTP timeout covers it plus the usual allowance.
        receiving = self._transport.call(endpoints.receive(self.group, self.topic, request, timeout=self._timeout + request.wait_seconds))
        return await tracing.received(self.group, self.topic, receiving)

    async def ack(self, messages: Sequence[Message | str]) -> list[SettleResult]:
        """Mark messages done for the group (the received ``Message``s or their receipt handles); a handle past its
        invisibility comes back ``EXPIRED``."""
        return await self._settle("ack", messages)

    async def nack(self, messages: Sequence[Message | str], reason: str | None = None) -> list[SettleResult]:
        """Give messages (received ``Message``s or receipt handles) back for redelivery (with delivery_attempt+1, after
        the broker's backoff).

        ``reason``: why (its first ``MAX_NACK_REASON`` characters), shown in each message's journey as "nacked (reason)".
        """
        return await self._settle("nack", messages, reason)

    async def change_invisible_duration(self, message: Message | str, seconds: float) -> bool:
        """Keep a received message hidden from the group for ``seconds`` from now (RocketMQ 5's name), so a handler
        that needs longer than ``invisible_seconds`` keeps its message; False when the receipt has expired or was
        settled (the message may be with another consumer already). ``seconds`` is 0..``MAX_INVISIBLE_SECONDS``: 0
        makes it visible again at once."""
        if not 0 <= seconds <= MAX_INVISIBLE_SECONDS:
            raise ValueError(f"seconds must be 0..{MAX_INVISIBLE_SECONDS}, not {seconds}")
        [handle] = receipt_handles([message])
        [result] = await self._call(endpoints.change_invisible_duration(self.group, self.topic, [handle], seconds))
        return result.status is SettleStatus.OK

    async def _settle(self, action: Literal["ack", "nack"], messages: Sequence[Message | str], reason: str | None = None) -> list[SettleResult]:
        handles = receipt_handles(messages)
        results: list[SettleResult] = []
        for start in range(0, len(handles), MAX_RECEIVE):  # the broker caps a settle request at MAX_RECEIVE handles
            call = endpoints.settle(self.group, self.topic, action, handles[start : start + MAX_RECEIVE], reason)
            with tracing.settling(action, self.group, self.topic, call.body.receipt_handles):
                settled: list[SettleResult] = await self._call(call)
            results += settled
        return results

    async def group_info(self) -> ConsumerGroupInfo:
        """The group's lag and in-flight messages per queue, as operators see them."""
        return await self._call(endpoints.consumer_group(self.group))


class SimpleConsumer(Blocking[AsyncSimpleConsumer]):
    """``AsyncSimpleConsumer`` for blocking code; threads may share one (their calls meet on the SDK's loop)."""

    def __init__(self, base_url: str | None, group: str, topic: str, **options: Unpack[TransportOptions]) -> None:
        """``AsyncSimpleConsumer``'s options (``timeout``, ``retries``, ``token`` …)."""
        super().__init__(AsyncSimpleConsumer(base_url, group, topic, **options))
        self.group, self.topic = group, topic

    receive = blocking(AsyncSimpleConsumer.receive)
    ack = blocking(AsyncSimpleConsumer.ack)
    nack = blocking(AsyncSimpleConsumer.nack)
    change_invisible_duration = blocking(AsyncSimpleConsumer.change_invisible_duration)
    group_info = blocking(AsyncSimpleConsumer.group_info)

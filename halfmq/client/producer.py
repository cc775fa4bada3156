"""Sending messages, RocketMQ style, with sync and asyncio flavours.

A ``SendResult`` whose status is ``FLUSH_DISK_TIMEOUT`` (or another non-OK
status) inside a 200 answer is returned, not retried: the broker stored the
message, and as in RocketMQ the caller decides whether that is good enough.
A 503 ``FLUSH_DISK_TIMEOUT``/``STORE_UNAVAILABLE`` problem or an unreachable
broker is retried with backoff; the UNIQ_KEY set before the first attempt
identifies a message that might end up stored twice.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import Any, Self, TypeVar, Unpack

from halfmq.wire import MAX_BATCH, OffsetReadResponse, OutgoingMessage, SendResult, TopicInfo

from . import endpoints
from .endpoints import Call
from .messages import Body, outgoing
from .numbering import Numbering
from .retry import async_retrying, retrying
from .send_options import SendOptions
from .send_policy import blocking_send_coalescer, send_coalescer
from .transport import TIMEOUT, AsyncTransport, Transport, Verify

__all__ = ["AsyncProducer", "Numbering", "Producer"]

T = TypeVar("T")


def _batch(messages: Iterable[OutgoingMessage | Body]) -> list[OutgoingMessage]:
    batch = [outgoing(m) for m in messages]
    if len(batch) > MAX_BATCH:
        # Splitting would quietly turn one request into several that can
        # half-succeed; the caller should choose how to chunk.
        raise ValueError(f"a batch holds at most {MAX_BATCH} messages, got {len(batch)}")
    return batch


def _numbering(idempotent: bool, idempotent_id: str | None) -> Numbering | None:
    if idempotent_id is not None and not idempotent:
        raise ValueError("idempotent_id given with idempotent=False: leave one of them out")
    return Numbering(idempotent_id) if idempotent else None


class Producer:
    """Blocking producer; one instance can be shared by many threads, and their sends do not serialize."""

    def __init__(self, base_url: str, *, timeout: float = TIMEOUT, retries: int = 3,
                 token: str | None = None, verify: Verify | None = None, idempotent: bool = True,
                 idempotent_id: str | None = None, coalesce: bool = True) -> None:
        """Every send is numbered (see ``Numbering``), so a retry never stores twice; ``idempotent=False`` turns that off.

        ``idempotent_id``: number under this transactional id (a stable identity) instead of a producer id of its own.
        Threads sending to one topic at once share batch requests (the batching engine on a thread of its own, ``send_policy``); ``coalesce=False``
        sends one request per message.

        ``timeout`` bounds one attempt (5 s, ``transport.TIMEOUT``); ``retries`` counts the attempts after one that
        failed retriably. Given a broker set's URLs, a node that did not answer within ``timeout`` is left: the retry
        goes to the next URL; while the set elects a leader the call waits for it (``broker_urls``, not a retry).
        """
        retrying(retries)  # validate now rather than on the first send
        self._retries = retries
        self._transport = Transport(base_url, timeout=timeout, token=token, verify=verify)
        self._numbering = _numbering(idempotent, idempotent_id)
        self._lock = threading.Lock()
        self._coalescer = blocking_send_coalescer(self._send_many, self._send_one) if coalesce else None

    def _call(self, call: Call[T]) -> T:
        result: T = retrying(self._retries)(self._transport.call, call)
        return result

    def _send(self, call: Call[T]) -> T:
        numbering = self._numbering
        if numbering is None:
            return self._call(call)
        policy = retrying(self._retries)
        result: T = numbering.send(self._lock, policy, policy, self._transport.call, call)
        return result

    def _send_one(self, topic: str, message: OutgoingMessage) -> SendResult:
        return self._send(endpoints.send_one(topic, message))

    def _send_many(self, topic: str, messages: list[OutgoingMessage]) -> list[SendResult]:
        return self._send(endpoints.send(topic, messages))

    def send(self, topic: str, message: OutgoingMessage | Body, **options: Unpack[SendOptions]) -> SendResult:
        msg = outgoing(message, **options)
        if self._coalescer is None:
            return self._send_one(topic, msg)
        return self._coalescer.submit(topic, msg)

    def send_batch(self, topic: str, messages: Iterable[OutgoingMessage | Body]) -> list[SendResult]:
        """One request for many messages; results come back in the order sent."""
        batch = _batch(messages)
        if not batch:
            return []
        return self._send(endpoints.send(topic, batch))

    def create_topic(self, name: str, queues: int | None = None) -> TopicInfo:
        return self._call(endpoints.create_topic(name, queues))

    def get_topic(self, name: str) -> TopicInfo:
        return self._call(endpoints.get_topic(name))

    def list_topics(self) -> list[TopicInfo]:
        return self._call(endpoints.list_topics())

    def read(self, topic: str, queue_id: int, offset: int, max: int = 32) -> OffsetReadResponse:  # noqa: A002
        """Offset read: touches no consumer group's state (replays, tools, Spark)."""
        return self._call(endpoints.read(topic, queue_id, offset, max))

    def health(self) -> Any:
        return self._transport.call(endpoints.health())

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncProducer:
    """Asyncio producer built to stay fast at many concurrent sends.

    Requests spread over ``pool_size`` AsyncClients with ``connections_per_client``
    connections each, and at most ``max_in_flight`` run at once (DESIGN
    section 7: one AsyncClient collapses past about 8 concurrent requests).
    Concurrent ``send`` calls to one topic share batch requests (the batching engine, ``send_policy``),
    each caller with its own result or error; ``coalesce=False`` sends one request per message.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = TIMEOUT,
        retries: int = 3,
        pool_size: int = 8,
        connections_per_client: int = 8,
        max_in_flight: int = 64,
        token: str | None = None,
        verify: Verify | None = None,
        idempotent: bool = True,
        idempotent_id: str | None = None,
        coalesce: bool = True,
    ) -> None:
        async_retrying(retries)
        self._retries = retries
        self._numbering = _numbering(idempotent, idempotent_id)
        self._lock = asyncio.Lock()
        self._transport = AsyncTransport(
            base_url,
            timeout=timeout,
            pool_size=pool_size,
            connections_per_client=connections_per_client,
            max_in_flight=max_in_flight,
            token=token,
            verify=verify,
        )
        self._coalescer = send_coalescer(self._send_many, self._send_one) if coalesce else None

    async def _call(self, call: Call[T]) -> T:
        result: T = await async_retrying(self._retries)(self._transport.call, call)
        return result

    async def _send(self, call: Call[T]) -> T:
        numbering = self._numbering
        if numbering is None:
            return await self._call(call)
        policy = async_retrying(self._retries)
        result: T = await numbering.send_async(self._lock, policy, policy, self._transport.call, call)
        return result

    async def _send_one(self, topic: str, message: OutgoingMessage) -> SendResult:
        return await self._send(endpoints.send_one(topic, message))

    async def _send_many(self, topic: str, messages: list[OutgoingMessage]) -> list[SendResult]:
        return await self._send(endpoints.send(topic, messages))

    async def send(self, topic: str, message: OutgoingMessage | Body, **options: Unpack[SendOptions]) -> SendResult:
        """One message; sends issued while others are under way share their next request (unless ``coalesce=False``)."""
        msg = outgoing(message, **options)
        if self._coalescer is None:
            return await self._send_one(topic, msg)
        return await self._coalescer.submit(topic, msg)

    async def send_batch(self, topic: str, messages: Iterable[OutgoingMessage | Body]) -> list[SendResult]:
        batch = _batch(messages)
        if not batch:
            return []
        return await self._send(endpoints.send(topic, batch))

    async def create_topic(self, name: str, queues: int | None = None) -> TopicInfo:
        return await self._call(endpoints.create_topic(name, queues))

    async def get_topic(self, name: str) -> TopicInfo:
        return await self._call(endpoints.get_topic(name))

    async def list_topics(self) -> list[TopicInfo]:
        return await self._call(endpoints.list_topics())

    async def read(self, topic: str, queue_id: int, offset: int, max: int = 32) -> OffsetReadResponse:  # noqa: A002
        return await self._call(endpoints.read(topic, queue_id, offset, max))

    async def health(self) -> Any:
        return await self._transport.call(endpoints.health())

    async def close(self) -> None:
        """Every send already made gets its answer first; then the connections close."""
        if self._coalescer is not None:
            await self._coalescer.drain()
        await self._transport.close()

    aclose = close

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

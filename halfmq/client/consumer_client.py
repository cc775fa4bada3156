"""Low-level consumer calls for one (group, topic): receive, ack, nack.

The consumer loops are built on these, and tests and tools use them directly
when they need to drive delivery step by step.

``receive`` is never retried here: a retry after a timeout could hide messages
the broker already handed out, and the loops have their own backoff. ``ack``
and ``nack`` are retried on retriable errors, since settling a handle twice
only yields ``EXPIRED`` the second time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Self

from halfmq.wire import MAX_RECEIVE, ConsumerGroupInfo, Message, ReceiveRequest, SettleResult

from . import endpoints
from .retry import async_retrying, retrying
from .transport import TIMEOUT, AsyncTransport, Transport, Verify

__all__ = ["AsyncConsumerClient", "ConsumerClient"]

_SettleCall = Callable[[str, str, Sequence[str]], endpoints.Call[list[SettleResult]]]


def _chunks(handles: Sequence[str]) -> list[list[str]]:
    # The broker caps a settle request at MAX_RECEIVE handles.
    return [list(handles[i : i + MAX_RECEIVE]) for i in range(0, len(handles), MAX_RECEIVE)]


def _receive_call(
    group: str, topic: str, timeout: float, max_messages: int, invisible_seconds: float, wait_seconds: float
) -> endpoints.Call[list[Message]]:
    request = ReceiveRequest(max_messages=max_messages, invisible_seconds=invisible_seconds, wait_seconds=wait_seconds)
    # The long poll may legitimately hold the response for wait_seconds, so
    # the HTTP timeout has to cover it plus the usual allowance.
    return endpoints.receive(group, topic, request, timeout=timeout + request.wait_seconds)


class ConsumerClient:
    """Blocking receive/ack/nack for one consumer group on one topic; thread-safe."""

    def __init__(self, base_url: str | None, group: str, topic: str, *, timeout: float = TIMEOUT, retries: int = 3,
                 token: str | None = None, verify: Verify | None = None) -> None:
        retrying(retries)
        self.group = group
        self.topic = topic
        self._timeout = timeout
        self._retries = retries
        self._transport = Transport(base_url, timeout=timeout, token=token, verify=verify)

    def receive(self, max_messages: int = 16, invisible_seconds: float = 30.0, wait_seconds: float = 0.0) -> list[Message]:
        call = _receive_call(self.group, self.topic, self._timeout, max_messages, invisible_seconds, wait_seconds)
        return self._transport.call(call)

    def ack(self, handles: Sequence[str]) -> list[SettleResult]:
        return self._settle(endpoints.ack, handles)

    def nack(self, handles: Sequence[str]) -> list[SettleResult]:
        """Give messages back for redelivery (with delivery_attempt+1, after the broker's backoff)."""
        return self._settle(endpoints.nack, handles)

    def _settle(self, make_call: _SettleCall, handles: Sequence[str]) -> list[SettleResult]:
        results: list[SettleResult] = []
        for chunk in _chunks(handles):
            call = make_call(self.group, self.topic, chunk)
            results.extend(retrying(self._retries)(self._transport.call, call))
        return results

    def group_info(self) -> ConsumerGroupInfo:
        result: ConsumerGroupInfo = retrying(self._retries)(self._transport.call, endpoints.consumer_group(self.group))
        return result

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncConsumerClient:
    """Asyncio receive/ack/nack for one consumer group on one topic.

    A consumer has few requests in flight (one long poll plus settles), so the
    default pool is small; raise ``pool_size`` when sharing one client widely.
    """

    def __init__(
        self,
        base_url: str | None,
        group: str,
        topic: str,
        *,
        timeout: float = TIMEOUT,
        retries: int = 3,
        pool_size: int = 2,
        connections_per_client: int = 8,
        max_in_flight: int = 16,
        token: str | None = None,
        verify: Verify | None = None,
    ) -> None:
        async_retrying(retries)
        self.group = group
        self.topic = topic
        self._timeout = timeout
        self._retries = retries
        self._transport = AsyncTransport(
            base_url,
            timeout=timeout,
            pool_size=pool_size,
            connections_per_client=connections_per_client,
            max_in_flight=max_in_flight,
            token=token,
            verify=verify,
        )

    async def receive(
        self, max_messages: int = 16, invisible_seconds: float = 30.0, wait_seconds: float = 0.0
    ) -> list[Message]:
        call = _receive_call(self.group, self.topic, self._timeout, max_messages, invisible_seconds, wait_seconds)
        return await self._transport.call(call)

    async def ack(self, handles: Sequence[str]) -> list[SettleResult]:
        return await self._settle(endpoints.ack, handles)

    async def nack(self, handles: Sequence[str]) -> list[SettleResult]:
        return await self._settle(endpoints.nack, handles)

    async def _settle(self, make_call: _SettleCall, handles: Sequence[str]) -> list[SettleResult]:
        results: list[SettleResult] = []
        for chunk in _chunks(handles):
            call = make_call(self.group, self.topic, chunk)
            results.extend(await async_retrying(self._retries)(self._transport.call, call))
        return results

    async def group_info(self) -> ConsumerGroupInfo:
        result: ConsumerGroupInfo = await async_retrying(self._retries)(
            self._transport.call, endpoints.consumer_group(self.group)
        )
        return result

    async def close(self) -> None:
        await self._transport.close()

    aclose = close

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

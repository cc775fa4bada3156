"""The asyncio transactional producer: ``TransactionProducer`` with coroutines.

It runs the same steps (``transaction_steps``) with the asyncio driver
(``step_drivers``); its heartbeat is a task instead of a thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self, TypeVar, Unpack

from halfmq.wire import OutgoingMessage

from . import endpoints
from .endpoints import Call
from .messages import Body
from .retry import async_retrying
from .send_options import SendOptions
from .step_drivers import retry_on, run_steps_async
from .transaction import (
    AsyncTransactionListener,
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
    call_listener,
)
from .transaction_batches import TransactionBatches
from .transaction_producer_base import TransactionProducerBase
from .transaction_steps import Request, Step
from .transport import TIMEOUT, AsyncTransport, Verify

__all__ = ["AsyncTransactionProducer"]

# The producers' logger, as before the flavours had a module each.
log = logging.getLogger("halfmq.client.transaction_producer")

T = TypeVar("T")


class AsyncTransactionProducer(TransactionProducerBase):
    """Asyncio transactional producer; concurrent sends run concurrently.

    Requests go through the pooled ``AsyncTransport`` (``pool_size`` clients of
    ``connections_per_client`` connections, at most ``max_in_flight`` requests
    at once), so 64 concurrent ``send_in_transaction`` calls do not queue
    behind one HTTP client. An async listener is awaited; a blocking one runs
    in the default thread pool via ``asyncio.to_thread``.
    """

    listener: AsyncTransactionListener | TransactionListener

    def __init__(
        self,
        base_url: str | None,
        producer_group: str,
        listener: AsyncTransactionListener | TransactionListener,
        *,
        check_url: str | None = None,
        check_backs: bool = True,
        client_id: str | None = None,
        heartbeat_interval: float = 10.0,
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
        """Half sends are numbered (a retried half is stored once) unless ``idempotent=False``; ``idempotent_id``: a stable identity.

        ``coalesce``: the halves (and the ends) that concurrent ``send_in_transaction`` calls issue in one event-loop
        pass go out as one batch request (``transaction_batches``); ``coalesce=False`` sends each on its own.
        """
        super().__init__(producer_group, listener, check_url, client_id, heartbeat_interval, retries, check_backs, idempotent_id,
                         idempotent)
        self._transport = AsyncTransport(
            base_url,
            timeout=timeout,
            pool_size=pool_size,
            connections_per_client=connections_per_client,
            max_in_flight=max_in_flight,
            token=token,
            verify=verify,
        )
        self._batches = TransactionBatches(self._transport.call) if coalesce else None
        self._send_call: Callable[[Call[Any]], Awaitable[Any]] = self._transport.call if self._batches is None else self._batches.call
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._numbered_lock = asyncio.Lock()
        self._start_lock = asyncio.Lock()

    # --- lifecycle ---------------------------------------------------------------
    async def start(self) -> Self:
        async with self._start_lock:
            if await run_steps_async(self._start_steps(), self._perform):
                self._heartbeat_task = asyncio.get_running_loop().create_task(
                    self._heartbeat_loop(), name=f"halfmq-heartbeat-{self.client_id}"
                )
        return self

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        task, self._heartbeat_task = self._heartbeat_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._batches is not None:
            await self._batches.aclose()
        await self._transport.close()

    aclose = close

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            try:
                await self._transport.call(self._heartbeat_call())
            except Exception as exc:  # noqa: BLE001 - the loop must outlive any one failure
                log.warning("producer %s of group %s: heartbeat failed: %s", self.client_id, self.producer_group, exc)

    # --- sending -----------------------------------------------------------------
    async def _perform(self, step: Step) -> Any:
        if isinstance(step, Request):
            numbering = self._numbering
            if step.numbered and numbering is not None:
                return await numbering.send_async(self._numbered_lock, async_retrying(self._retries),
                                                  async_retrying(self._retries, retry_on=retry_on(step)), self._send_call, step.call)
            return await async_retrying(self._retries, retry_on=retry_on(step))(self._send_call, step.call)
        return await call_listener(self.listener.execute_local_transaction, step.message, step.arg)

    async def _call(self, call: Call[T]) -> T:
        result: T = await async_retrying(self._retries)(self._transport.call, call)
        return result

    async def send_in_transaction(
        self, topic: str, message: OutgoingMessage | Body, arg: Any = None, **options: Unpack[SendOptions]
    ) -> TransactionSendResult:
        """Half → local transaction → end, as ``TransactionProducer.send_in_transaction``."""
        return await run_steps_async(self._send_steps(topic, message, arg, options), self._perform)

    # --- transactions by id ------------------------------------------------------
    async def end_transaction(
        self, transaction_id: str, state: LocalTransactionState | str, *, from_check: bool = False
    ) -> dict[str, Any]:
        return await self._call(self._end_call(transaction_id, state, from_check))

    async def get_transaction(self, transaction_id: str) -> dict[str, Any]:
        return await self._call(endpoints.get_transaction(transaction_id))

    async def list_transactions(self, state: str = "pending", limit: int = 100) -> list[dict[str, Any]]:
        return await self._call(self._list_call(state, limit))

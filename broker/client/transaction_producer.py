"""Transactional producers, following RocketMQ's sendMessageInTransaction step by step.

1. Send the half message. If that fails, the error is raised and the local
   transaction does not run. The half send is retried only when the request
   certainly never reached the broker (connection refused, connect timeout):
   a retry after a read timeout could open a second transaction for the same
   business change.
2. A half stored with a status other than SEND_OK (FLUSH_DISK_TIMEOUT, ...)
   is rolled back without running the local transaction.
3. Otherwise run ``listener.execute_local_transaction(msg, arg)``. An
   ``Exception`` from it means ROLLBACK_MESSAGE (logged, and kept on the
   result as ``local_error``). A ``BaseException`` (``KeyboardInterrupt``,
   ``SystemExit``, cancellation, a crash) propagates and no end is sent: the
   local transaction may have committed, and only the check-back, answered
   from the producer's records, can tell.
4. End the transaction with that state (UNKNOW ends as "unknown", leaving it
   to the check-back). Ending is idempotent, so it is retried on any
   retriable error; a failure is returned in ``end_error``, not raised.

The producer registers ``check_url`` with the broker by heartbeat so that the
broker can ask about transactions whose end it never got; ``check_app()``
returns the ASGI app to serve at that URL. Without a ``check_url`` a producer
refuses to start unless told ``check_backs=False``: leaving it out by accident
silently turned check-backs off.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

from halfmq.broker.errors import BrokerError
from halfmq.broker.wire import HalfSendResult, OutgoingMessage

from . import endpoints
from .check_app import CheckApp
from .endpoints import Call
from .messages import Body, outgoing
from .retry import async_retrying, retrying
from .transaction import (
    AsyncTransactionListener,
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
    call_listener,
    coerce_local_state,
    is_async_callable,
    listener_message,
    state_after_half,
)
from .transport import AsyncTransport, Transport, Verify, request_not_sent, require_http_url

__all__ = ["AsyncTransactionProducer", "TransactionProducer", "default_client_id"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# A heartbeat in flight must not hold close() up for a whole request timeout.
_HEARTBEAT_TIMEOUT = 5.0
_TRANSACTION_STATES = ("pending", "committed", "rolled_back", "discarded")


def default_client_id() -> str:
    """hostname-pid-random: unique per producer instance, readable in the broker's producer list."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


class _Base:
    """State and bookkeeping shared by both flavours (no I/O here)."""

    def __init__(
        self,
        producer_group: str,
        listener: Any,
        check_url: str | None,
        client_id: str | None,
        heartbeat_interval: float,
        retries: int,
        check_backs: bool,
    ) -> None:
        if check_url is not None:
            if not check_backs:
                raise ValueError("check_url given with check_backs=False: leave one of them out")
            require_http_url(check_url, "check_url")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if heartbeat_interval <= 0:
            raise ValueError("heartbeat_interval must be positive")
        for name in ("execute_local_transaction", "check_local_transaction"):
            if not callable(getattr(listener, name, None)):
                raise TypeError(f"the listener has no {name} method")
        self.producer_group = producer_group
        self.listener = listener
        self.check_url = check_url
        self.check_backs = check_backs
        self.client_id = client_id or default_client_id()
        self.heartbeat_interval = heartbeat_interval
        self._retries = retries
        self._started = False
        self._closed = False

    def check_app(self, **options: Any) -> CheckApp:
        """The ASGI app answering this producer's check-backs; serve it at ``check_url``.

        In FastAPI: ``app.mount("/halfmq/check", producer.check_app())`` with
        ``check_url="http://127.0.0.1:8001/halfmq/check/"`` (trailing slash: the
        mount redirects the slash-less path, and the broker follows no
        redirects), or ``app.add_route("/halfmq/check", producer.check_app())``
        with ``check_url="http://127.0.0.1:8001/halfmq/check"``. See the
        ``broker.client.check_app`` module docstring. It refuses checks for
        other producer groups.
        """
        return CheckApp(self.listener, producer_group=self.producer_group, **options)

    def _heartbeat_call(self) -> Call[Any]:
        return endpoints.producer_heartbeat(self.producer_group, self.client_id, self.check_url, timeout=_HEARTBEAT_TIMEOUT)

    def _ensure_running(self) -> None:
        if self._closed:
            raise RuntimeError("the transaction producer is closed")
        if not self._started:
            # As RocketMQ's makeSureStateOK: without start() a check_url is never
            # registered, and a transaction whose end is lost would wait forever.
            raise RuntimeError("call start() (or use the producer as a context manager) before sending")

    def _refuse_start_without_check_url(self) -> None:
        # Without a check URL a transaction whose end is lost (a crash between the local
        # commit and the end call) is never asked about: the broker discards it.
        if self.check_url is None and self.check_backs:
            raise RuntimeError(
                f"producer group {self.producer_group!r} has no check_url, so the broker could never ask about a "
                "transaction whose end is lost: pass check_url=... (and serve check_app() there), "
                "or check_backs=False to run without check-backs"
            )

    def _first_heartbeat_failed(self, exc: BrokerError) -> None:
        if not exc.retriable:
            raise exc
        # The broker is not up yet; the heartbeat loop registers us once it is.
        log.warning("producer %s of group %s: first heartbeat failed (%s); will keep trying every %.1fs",
                    self.client_id, self.producer_group, exc, self.heartbeat_interval)

    def _result(
        self,
        half: HalfSendResult,
        message: OutgoingMessage,
        state: LocalTransactionState,
        local_error: Exception | None,
        end: tuple[dict[str, Any] | None, BrokerError | None],
    ) -> TransactionSendResult:
        view, end_error = end
        return TransactionSendResult(
            transaction_id=half.transaction_id,
            msg_id=half.msg_id,
            send_status=half.status,
            local_state=state,
            half=half,
            message=message,
            end=view,
            end_error=end_error,
            local_error=local_error,
        )

    def _log_local_failure(self, half: HalfSendResult) -> None:
        log.exception("execute_local_transaction failed for transaction %s (msg %s); rolling back",
                      half.transaction_id, half.msg_id)

    def _log_skipped(self, half: HalfSendResult) -> None:
        log.warning("half message %s of transaction %s stored with %s: rolling back without running the local transaction",
                    half.msg_id, half.transaction_id, half.status.value)

    def _log_end_failure(self, transaction_id: str, state: LocalTransactionState, exc: BrokerError) -> None:
        level = logging.ERROR if state is LocalTransactionState.COMMIT_MESSAGE and not exc.retriable else logging.WARNING
        log.log(level, "end of transaction %s with %s failed (%s: %s); the broker's check-back will settle it",
                transaction_id, state.value, type(exc).__name__, exc)


def _end_state(state: LocalTransactionState | str) -> str:
    if isinstance(state, LocalTransactionState):
        return state.value
    try:
        return LocalTransactionState(state).value
    except ValueError:
        member = LocalTransactionState.__members__.get(str(state))
        if member is None:
            raise ValueError(f"not a transaction state: {state!r}") from None
        return member.value


def _check_state_filter(state: str) -> str:
    if state not in _TRANSACTION_STATES:
        raise ValueError(f"state must be one of {_TRANSACTION_STATES}, not {state!r}")
    return state


class TransactionProducer(_Base):
    """Blocking transactional producer (RocketMQ's TransactionMQProducer).

    One instance can be shared by many threads; sends do not serialize.
    ``start()`` registers ``check_url`` (required unless ``check_backs=False``) with a first heartbeat,
    raising ``CheckUrlRefused`` if the broker will not dial it, and keeps it
    registered from a daemon thread; ``close()`` stops that thread.
    """

    def __init__(
        self,
        base_url: str,
        producer_group: str,
        listener: TransactionListener,
        *,
        check_url: str | None = None,
        check_backs: bool = True,
        client_id: str | None = None,
        heartbeat_interval: float = 10.0,
        timeout: float = 10.0,
        retries: int = 3,
        token: str | None = None,
        verify: Verify | None = None,
    ) -> None:
        super().__init__(producer_group, listener, check_url, client_id, heartbeat_interval, retries, check_backs)
        if is_async_callable(listener.execute_local_transaction):
            raise TypeError("the listener's methods are coroutines: use AsyncTransactionProducer")
        self._transport = Transport(base_url, timeout=timeout, token=token, verify=verify)
        self._stop = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # --- lifecycle ---------------------------------------------------------------
    def start(self) -> Self:
        with self._lock:
            if self._closed:
                raise RuntimeError("a closed transaction producer cannot be started again")
            if self._started:
                return self
            self._refuse_start_without_check_url()
            if self.check_url is not None:
                try:
                    self._call(self._heartbeat_call())
                except BrokerError as exc:
                    self._first_heartbeat_failed(exc)
                self._heartbeat_thread = threading.Thread(
                    target=self._heartbeat_loop, name=f"halfmq-heartbeat-{self.client_id}", daemon=True
                )
                self._heartbeat_thread.start()
            self._started = True
        return self

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop.set()
            thread = self._heartbeat_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_HEARTBEAT_TIMEOUT + 1.0)
        self._transport.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_interval):
            try:
                self._transport.call(self._heartbeat_call())
            except Exception as exc:  # the loop must outlive any one failure
                if not self._stop.is_set():
                    log.warning("producer %s of group %s: heartbeat failed: %s", self.client_id, self.producer_group, exc)

    # --- sending -----------------------------------------------------------------
    def _call(self, call: Call[T]) -> T:
        return retrying(self._retries)(self._transport.call, call)

    def send_in_transaction(
        self,
        topic: str,
        message: OutgoingMessage | Body,
        arg: Any = None,
        *,
        keys: list[str] | str | None = None,
        tag: str | None = None,
        properties: Mapping[str, str] | None = None,
        queue_id: int | None = None,
        sharding_key: str | None = None,
    ) -> TransactionSendResult:
        """Half → local transaction → end (see the module docstring for each step's failures)."""
        self._ensure_running()
        msg = outgoing(message, keys=keys, tag=tag, properties=properties, queue_id=queue_id, sharding_key=sharding_key)
        # Raises, and the local transaction never runs, if the half is not stored.
        half = retrying(self._retries, retry_on=request_not_sent)(
            self._transport.call, endpoints.half_send(self.producer_group, topic, msg)
        )
        seen = listener_message(msg, half, self.producer_group)
        local_error: Exception | None = None
        state = state_after_half(half)
        if state is not None:
            self._log_skipped(half)
        else:
            try:
                answer = self.listener.execute_local_transaction(seen, arg)
            except Exception as exc:  # only Exception: a BaseException must leave the end unsent
                self._log_local_failure(half)
                state, local_error = LocalTransactionState.ROLLBACK_MESSAGE, exc
            else:
                state = coerce_local_state(answer, where="execute_local_transaction")
        return self._result(half, seen, state, local_error, self._end(half.transaction_id, state))

    def _end(self, transaction_id: str, state: LocalTransactionState) -> tuple[dict[str, Any] | None, BrokerError | None]:
        try:
            return self.end_transaction(transaction_id, state), None
        except BrokerError as exc:
            self._log_end_failure(transaction_id, state, exc)
            return None, exc

    # --- transactions by id ------------------------------------------------------
    def end_transaction(
        self, transaction_id: str, state: LocalTransactionState | str, *, from_check: bool = False
    ) -> dict[str, Any]:
        """End a transaction of this group (retried: ending is idempotent); the broker's view of it.

        Use ``from_check=True`` when answering a check-back later instead of
        in the check response.
        """
        value = _end_state(state)
        return self._call(endpoints.end_transaction(transaction_id, self.producer_group, value, from_check=from_check))

    def get_transaction(self, transaction_id: str) -> dict[str, Any]:
        return self._call(endpoints.get_transaction(transaction_id))

    def list_transactions(self, state: str = "pending", limit: int = 100) -> list[dict[str, Any]]:
        return self._call(endpoints.list_transactions(_check_state_filter(state), limit))


class AsyncTransactionProducer(_Base):
    """Asyncio transactional producer; concurrent sends run concurrently.

    Requests go through the pooled ``AsyncTransport`` (``pool_size`` clients of
    ``connections_per_client`` connections, at most ``max_in_flight`` requests
    at once), so 64 concurrent ``send_in_transaction`` calls do not queue
    behind one httpx client. An async listener is awaited; a blocking one runs
    in the default thread pool via ``asyncio.to_thread``.
    """

    def __init__(
        self,
        base_url: str,
        producer_group: str,
        listener: AsyncTransactionListener | TransactionListener,
        *,
        check_url: str | None = None,
        check_backs: bool = True,
        client_id: str | None = None,
        heartbeat_interval: float = 10.0,
        timeout: float = 10.0,
        retries: int = 3,
        pool_size: int = 8,
        connections_per_client: int = 8,
        max_in_flight: int = 64,
        token: str | None = None,
        verify: Verify | None = None,
    ) -> None:
        super().__init__(producer_group, listener, check_url, client_id, heartbeat_interval, retries, check_backs)
        self._transport = AsyncTransport(
            base_url,
            timeout=timeout,
            pool_size=pool_size,
            connections_per_client=connections_per_client,
            max_in_flight=max_in_flight,
            token=token,
            verify=verify,
        )
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._start_lock = asyncio.Lock()

    # --- lifecycle ---------------------------------------------------------------
    async def start(self) -> Self:
        async with self._start_lock:
            if self._closed:
                raise RuntimeError("a closed transaction producer cannot be started again")
            if self._started:
                return self
            self._refuse_start_without_check_url()
            if self.check_url is not None:
                try:
                    await self._call(self._heartbeat_call())
                except BrokerError as exc:
                    self._first_heartbeat_failed(exc)
                self._heartbeat_task = asyncio.get_running_loop().create_task(
                    self._heartbeat_loop(), name=f"halfmq-heartbeat-{self.client_id}"
                )
            self._started = True
        return self

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        task, self._heartbeat_task = self._heartbeat_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
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
            except Exception as exc:  # the loop must outlive any one failure
                log.warning("producer %s of group %s: heartbeat failed: %s", self.client_id, self.producer_group, exc)

    # --- sending -----------------------------------------------------------------
    async def _call(self, call: Call[T]) -> T:
        result: T = await async_retrying(self._retries)(self._transport.call, call)
        return result

    async def send_in_transaction(
        self,
        topic: str,
        message: OutgoingMessage | Body,
        arg: Any = None,
        *,
        keys: list[str] | str | None = None,
        tag: str | None = None,
        properties: Mapping[str, str] | None = None,
        queue_id: int | None = None,
        sharding_key: str | None = None,
    ) -> TransactionSendResult:
        """Half → local transaction → end, as ``TransactionProducer.send_in_transaction``."""
        self._ensure_running()
        msg = outgoing(message, keys=keys, tag=tag, properties=properties, queue_id=queue_id, sharding_key=sharding_key)
        half: HalfSendResult = await async_retrying(self._retries, retry_on=request_not_sent)(
            self._transport.call, endpoints.half_send(self.producer_group, topic, msg)
        )
        seen = listener_message(msg, half, self.producer_group)
        local_error: Exception | None = None
        state = state_after_half(half)
        if state is not None:
            self._log_skipped(half)
        else:
            try:
                answer = await call_listener(self.listener.execute_local_transaction, seen, arg)
            except Exception as exc:  # only Exception: a BaseException must leave the end unsent
                self._log_local_failure(half)
                state, local_error = LocalTransactionState.ROLLBACK_MESSAGE, exc
            else:
                state = coerce_local_state(answer, where="execute_local_transaction")
        return self._result(half, seen, state, local_error, await self._end(half.transaction_id, state))

    async def _end(
        self, transaction_id: str, state: LocalTransactionState
    ) -> tuple[dict[str, Any] | None, BrokerError | None]:
        try:
            return await self.end_transaction(transaction_id, state), None
        except BrokerError as exc:
            self._log_end_failure(transaction_id, state, exc)
            return None, exc

    # --- transactions by id ------------------------------------------------------
    async def end_transaction(
        self, transaction_id: str, state: LocalTransactionState | str, *, from_check: bool = False
    ) -> dict[str, Any]:
        value = _end_state(state)
        return await self._call(endpoints.end_transaction(transaction_id, self.producer_group, value, from_check=from_check))

    async def get_transaction(self, transaction_id: str) -> dict[str, Any]:
        return await self._call(endpoints.get_transaction(transaction_id))

    async def list_transactions(self, state: str = "pending", limit: int = 100) -> list[dict[str, Any]]:
        return await self._call(endpoints.list_transactions(_check_state_filter(state), limit))

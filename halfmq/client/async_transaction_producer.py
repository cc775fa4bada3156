"""RocketMQ's TransactionMQProducer, written once: the asyncio producer that the blocking one drives.

``send_in_transaction`` is half → local transaction → end, a step sequence
(``half_message_steps``, whose docstring says how each step can fail) run here
on the event loop; ``TransactionProducer`` runs the same steps from its
caller's thread. The producer registers ``check_url`` with the broker by
heartbeat so that the broker can ask about transactions whose end it never
got; ``check_app()`` returns the ASGI app to serve at that URL. Without a
``check_url`` a producer refuses to start unless told ``check_backs=False``:
leaving it out by accident silently turned check-backs off.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Self, Unpack

import msgspec

from halfmq.errors import BrokerError
from halfmq.wire import MAX_HALF_COMPANIONS, OutgoingMessage, TransactionState, TxnMessage

from . import endpoints, half_message_steps, tracing
from .check_app import CheckApp
from .endpoints import Call
from .half_message_steps import Request, RunLocalTransaction, Step, Steps, TransactionSendResult, end_state
from .listener import AnyTransactionListener, LocalTransactionState, call_listener
from .loop_thread import cancel
from .messages import Body, outgoing, sendable_topic
from .numbering import numbering_for
from .retry import async_retrying
from .send_options import SendOptions
from .step_drivers import retry_on, run_steps_async
from .transaction_batches import TransactionBatches
from .transport import AsyncClient, ClientOptions, TransportOptions, require_http_url

__all__ = ["Also", "AsyncTransactionProducer", "TransactionProducerOptions", "companions"]

log = logging.getLogger("halfmq.client.transaction_producer")  # one logger for both producers


Also = Sequence[tuple[str, OutgoingMessage | Body]]  # a send's companions: (topic, message) each


def companions(also: Also) -> list[TxnMessage]:
    """``also`` as the wire's messages, each with its UNIQ_KEY (its msg id); a ValueError past MAX_HALF_COMPANIONS."""
    if len(also) > MAX_HALF_COMPANIONS:
        raise ValueError(f"at most {MAX_HALF_COMPANIONS} companions (also=...) per transaction, not {len(also)}")
    return [TxnMessage(topic=sendable_topic(topic), **msgspec.structs.asdict(outgoing(message))) for topic, message in also]


# A heartbeat in flight must not hold close() up for a whole request timeout.
HEARTBEAT_TIMEOUT = 5.0


class TransactionProducerOptions(ClientOptions, total=False):
    """The keyword settings of ``AsyncTransactionProducer`` (see its docstring), which ``TransactionProducer`` passes on."""

    check_url: str | None
    check_backs: bool
    client_id: str | None
    heartbeat_interval: float


class AsyncTransactionProducer(AsyncClient):
    """Asyncio transaction producer (RocketMQ's TransactionMQProducer); concurrent sends run concurrently.

    ``start()`` (or ``async with``) registers ``check_url`` (required unless
    ``check_backs=False``) with a first heartbeat, raising ``CheckUrlRefused``
    if the broker will not dial it, and keeps it registered every
    ``heartbeat_interval`` seconds from a task; ``close()`` stops it. An async
    listener is awaited; a blocking one runs in a worker thread.

    Requests go through the pooled ``AsyncTransport`` (``pool_size`` clients of
    ``connections_per_client`` connections, at most ``max_in_flight`` requests
    at once), so 64 concurrent sends do not queue behind one HTTP client. Half
    sends are numbered (a retried half is stored once) unless
    ``idempotent=False``; ``idempotent_id`` is a stable identity across
    restarts. ``coalesce``: the halves (and the ends) that concurrent sends
    issue in one event-loop pass go out as one batch request
    (``transaction_batches``); ``coalesce=False`` sends each on its own.
    """

    def __init__(self, base_url: str | None, producer_group: str, listener: AnyTransactionListener, *, check_url: str | None = None,
                 check_backs: bool = True, client_id: str | None = None, heartbeat_interval: float = 10.0, idempotent: bool = True,
                 idempotent_id: str | None = None, coalesce: bool = True, **transport: Unpack[TransportOptions]) -> None:
        # Contradictory settings fail here, where the mistake is, rather than at the first send.
        if check_url is not None:
            if not check_backs:
                raise ValueError("check_url given with check_backs=False: leave one of them out")
            require_http_url(check_url, "check_url")
        if heartbeat_interval <= 0:
            raise ValueError("heartbeat_interval must be positive")
        for name in ("execute_local_transaction", "check_local_transaction"):
            if not callable(getattr(listener, name, None)):
                raise TypeError(f"the listener has no {name} method")
        super().__init__(base_url, **transport)
        self._numbering = numbering_for(idempotent, idempotent_id)
        self.producer_group = producer_group
        self.listener = listener
        self.check_url = check_url
        self.check_backs = check_backs
        # hostname-pid-random by default: unique per producer instance, readable in the broker's producer list
        self.client_id = client_id or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self.heartbeat_interval = heartbeat_interval
        self._batches = TransactionBatches(self._transport.call) if coalesce else None
        self._send_call: Callable[[Call[Any]], Awaitable[Any]] = self._transport.call if self._batches is None else self._batches.call
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._start_lock = asyncio.Lock()
        self._started = False
        self._closed = False

    # --- lifecycle ---------------------------------------------------------------
    async def start(self) -> Self:
        """Register ``check_url`` and keep it registered; a broker that is not up yet is logged, not raised."""
        async with self._start_lock:
            if await run_steps_async(self._start_steps(), self._perform):
                self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeat_loop(), name=f"halfmq-heartbeat-{self.client_id}")
        return self

    async def close(self) -> None:
        """Stop the heartbeat, wait for the batches in flight, close the connections (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await cancel(self._heartbeat_task)
        if self._batches is not None:
            await self._batches.aclose()
        await super().close()

    async def __aenter__(self) -> Self:
        return await self.start()

    def _start_steps(self) -> Steps[bool]:
        """Check the state, register ``check_url`` with a first heartbeat; True when a heartbeat loop must start."""
        if self._closed:
            raise RuntimeError("a closed transaction producer cannot be started again")
        if self._started:
            return False
        if self.check_url is None and self.check_backs:
            # Without a check URL a transaction whose end is lost (a crash between the local
            # commit and the end call) is never asked about: the broker discards it.
            raise RuntimeError(f"producer group {self.producer_group!r} has no check_url, so the broker could never ask about a "
                               "transaction whose end is lost: pass check_url=... (and serve check_app() there), "
                               "or check_backs=False to run without check-backs")
        if self.check_url is not None:
            try:
                yield Request(self._heartbeat_call())
            except BrokerError as exc:
                if not exc.retriable:
                    raise
                # The broker is not up yet; the heartbeat loop registers us once it is.
                log.warning("producer %s of group %s: first heartbeat failed (%s); will keep trying every %.1fs",
                            self.client_id, self.producer_group, exc, self.heartbeat_interval)
        self._started = True
        return self.check_url is not None

    def _heartbeat_call(self) -> Call[Any]:
        return endpoints.producer_heartbeat(self.producer_group, self.client_id, self.check_url, timeout=HEARTBEAT_TIMEOUT)

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            try:
                await self._transport.call(self._heartbeat_call())
            except Exception as exc:  # noqa: BLE001 - the loop must outlive any one failure
                log.warning("producer %s of group %s: heartbeat failed: %s", self.client_id, self.producer_group, exc)

    def check_app(self, **options: Any) -> CheckApp:
        """The ASGI app answering this producer's check-backs; serve it at ``check_url``.

        In FastAPI: ``app.mount("/halfmq/check", producer.check_app())`` with
        ``check_url="http://127.0.0.1:8001/halfmq/check/"`` (trailing slash: the
        mount redirects the slash-less path, and the broker follows no
        redirects), or ``app.add_route("/halfmq/check", producer.check_app())``
        with ``check_url="http://127.0.0.1:8001/halfmq/check"``. See the
        ``halfmq.client.check_app`` module docstring. It refuses checks for
        other producer groups.
        """
        return CheckApp(self.listener, producer_group=self.producer_group, **options)

    # --- sending -----------------------------------------------------------------
    async def send_in_transaction(self, topic: str, message: OutgoingMessage | Body, arg: Any = None, *, also: Also = (),
                                  **options: Unpack[SendOptions]) -> TransactionSendResult:
        """Half → local transaction → end (see ``half_message_steps`` for each step's failures); ``arg`` goes to the listener.

        ``also=[(topic, message), ...]`` (at most ``MAX_HALF_COMPANIONS``): more messages the same local transaction
        decides, committed with ``message`` (each with its own delay, due relative to the commit) or rolled back with it.
        """
        return await run_steps_async(self._send_steps(topic, message, arg, options, also),
                                     tracing.transaction_steps(self._perform, self.producer_group, topic))

    def _send_steps(self, topic: str, message: OutgoingMessage | Body, arg: Any, options: SendOptions, also: Also = ()) -> Steps[TransactionSendResult]:
        """Refuses at once (not at the first step) when not started or the message is malformed."""
        if self._closed:
            raise RuntimeError("the transaction producer is closed")
        if not self._started:
            # As RocketMQ's makeSureStateOK: without start() a check_url is never
            # registered, and a transaction whose end is lost would wait forever.
            raise RuntimeError("call start() (or use the producer as a context manager) before sending")
        msg = tracing.created(sendable_topic(topic), self.producer_group, outgoing(message, **options))
        return half_message_steps.send_in_transaction(self.producer_group, topic, msg, arg, numbered=self._numbering is not None,
                                                     also=companions(also))

    async def _perform(self, step: Step) -> Any:
        """A step of the sequence: a request, retried as far as repeating it is harmless, or the local transaction."""
        if isinstance(step, RunLocalTransaction):
            return await call_listener(self.listener.execute_local_transaction, step.message, step.arg)
        policy = async_retrying(self._retries, retry_on=retry_on(step))
        numbering = self._numbering
        if step.numbered and numbering is not None:
            return await numbering.send(async_retrying(self._retries), policy, self._send_call, step.call)
        return await policy(self._send_call, step.call)

    # --- transactions by id ------------------------------------------------------
    async def end_transaction(self, transaction_id: str, state: LocalTransactionState | str, *, from_check: bool = False) -> dict[str, Any]:
        """End a transaction of this group (retried: ending is idempotent); the broker's view of it.

        For a listener that answered a check-back ``UNKNOW`` and decides later:
        ``from_check=True`` says so to the broker.
        """
        return await self._call(endpoints.end_transaction(transaction_id, self.producer_group, end_state(state), from_check=from_check))

    async def get_transaction(self, transaction_id: str) -> dict[str, Any]:
        """The broker's view of one transaction (state, check count, last answer): for tools and tests."""
        return await self._call(endpoints.get_transaction(transaction_id))

    async def list_transactions(self, state: str = "pending", limit: int = 100) -> list[dict[str, Any]]:
        """The broker's transactions in ``state`` (a ``TransactionState`` value): to find the ones left pending."""
        try:
            state = TransactionState(state).value
        except ValueError:
            raise ValueError(f"state must be one of {tuple(s.value for s in TransactionState)}, not {state!r}") from None
        return await self._call(endpoints.list_transactions(state, limit))


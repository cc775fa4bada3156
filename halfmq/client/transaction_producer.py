"""The blocking transactional producer: RocketMQ's TransactionMQProducer.

``send_in_transaction`` is half → local transaction → end, written once as a
step sequence (``transaction_steps``, whose docstring says how each step can
fail) and run here with blocking I/O (``step_drivers``); what both flavours
share (settings, start's steps, ``check_app``) is ``transaction_producer_base``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Self, TypeVar, Unpack

from halfmq.wire import OutgoingMessage

from . import endpoints
from .endpoints import Call
from .messages import Body
from .retry import retrying
from .send_options import SendOptions
from .step_drivers import retry_on, run_steps
from .transaction import LocalTransactionState, TransactionListener, TransactionSendResult, is_async_callable
from .transaction_producer_base import HEARTBEAT_TIMEOUT, TransactionProducerBase, default_client_id
from .transaction_steps import Request, Step
from .transport import TIMEOUT, Transport, Verify

__all__ = ["TransactionProducer", "default_client_id"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class TransactionProducer(TransactionProducerBase):
    """Blocking transactional producer (RocketMQ's TransactionMQProducer).

    One instance can be shared by many threads; sends do not serialize.
    ``start()`` registers ``check_url`` (required unless ``check_backs=False``) with a first heartbeat,
    raising ``CheckUrlRefused`` if the broker will not dial it, and keeps it
    registered from a daemon thread; ``close()`` stops that thread.
    """

    listener: TransactionListener

    def __init__(
        self,
        base_url: str | None,
        producer_group: str,
        listener: TransactionListener,
        *,
        check_url: str | None = None,
        check_backs: bool = True,
        client_id: str | None = None,
        heartbeat_interval: float = 10.0,
        timeout: float = TIMEOUT,
        retries: int = 3,
        token: str | None = None,
        verify: Verify | None = None,
        idempotent: bool = True,
        idempotent_id: str | None = None,
    ) -> None:
        """Half sends are numbered (a retried half is stored once) unless ``idempotent=False``; ``idempotent_id``: a stable identity."""
        super().__init__(producer_group, listener, check_url, client_id, heartbeat_interval, retries, check_backs, idempotent_id,
                         idempotent)
        if is_async_callable(listener.execute_local_transaction):
            raise TypeError("the listener's methods are coroutines: use AsyncTransactionProducer")
        self._transport = Transport(base_url, timeout=timeout, token=token, verify=verify)
        self._stop = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._numbered_lock = threading.Lock()

    # --- lifecycle ---------------------------------------------------------------
    def start(self) -> Self:
        with self._lock:
            if run_steps(self._start_steps(), self._perform):
                self._heartbeat_thread = threading.Thread(
                    target=self._heartbeat_loop, name=f"halfmq-heartbeat-{self.client_id}", daemon=True
                )
                self._heartbeat_thread.start()
        return self

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop.set()
            thread = self._heartbeat_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(HEARTBEAT_TIMEOUT + 1.0)
        self._transport.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(self.heartbeat_interval):
            try:
                self._transport.call(self._heartbeat_call())
            except Exception as exc:  # noqa: BLE001 - the loop must outlive any one failure
                if not self._stop.is_set():
                    log.warning("producer %s of group %s: heartbeat failed: %s", self.client_id, self.producer_group, exc)

    # --- sending -----------------------------------------------------------------
    def _perform(self, step: Step) -> Any:
        if isinstance(step, Request):
            numbering = self._numbering
            if step.numbered and numbering is not None:
                return numbering.send(self._numbered_lock, retrying(self._retries),
                                      retrying(self._retries, retry_on=retry_on(step)), self._transport.call, step.call)
            return retrying(self._retries, retry_on=retry_on(step))(self._transport.call, step.call)
        return self.listener.execute_local_transaction(step.message, step.arg)

    def _call(self, call: Call[T]) -> T:
        result: T = retrying(self._retries)(self._transport.call, call)
        return result

    def send_in_transaction(
        self, topic: str, message: OutgoingMessage | Body, arg: Any = None, **options: Unpack[SendOptions]
    ) -> TransactionSendResult:
        """Half → local transaction → end (see ``transaction_steps`` for each step's failures)."""
        return run_steps(self._send_steps(topic, message, arg, options), self._perform)

    # --- transactions by id ------------------------------------------------------
    def end_transaction(
        self, transaction_id: str, state: LocalTransactionState | str, *, from_check: bool = False
    ) -> dict[str, Any]:
        """End a transaction of this group (retried: ending is idempotent); the broker's view of it.

        Use ``from_check=True`` when answering a check-back later instead of
        in the check response.
        """
        return self._call(self._end_call(transaction_id, state, from_check))

    def get_transaction(self, transaction_id: str) -> dict[str, Any]:
        return self._call(endpoints.get_transaction(transaction_id))

    def list_transactions(self, state: str = "pending", limit: int = 100) -> list[dict[str, Any]]:
        return self._call(self._list_call(state, limit))

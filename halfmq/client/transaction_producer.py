"""The blocking transaction producer: ``AsyncTransactionProducer`` driven on the SDK's loop thread.

Every request runs on the one event loop (``loop_thread``), with the async
producer's transport, retries, numbering and heartbeat task. The one step that
does not is the local transaction: ``execute_local_transaction`` runs in the
thread that called ``send_in_transaction``, because that is where the caller's
database session, connection and thread-locals live (a ``sqlite3`` connection
refuses other threads). So the send is the async producer's step sequence
(``half_message_steps``) driven from the caller's thread (``step_drivers``),
each request handed to the loop and the local transaction run in place.
"""

from __future__ import annotations

from typing import Any, Self, Unpack

from halfmq.wire import OutgoingMessage

from . import tracing
from .async_transaction_producer import Also, AsyncTransactionProducer, TransactionProducerOptions
from .check_app import CheckApp
from .half_message_steps import RunLocalTransaction, Step, TransactionSendResult
from .listener import TransactionListener, is_async_callable
from .loop_thread import Blocking, blocking, run
from .messages import Body
from .send_options import SendOptions
from .step_drivers import run_steps

__all__ = ["TransactionProducer"]


class TransactionProducer(Blocking[AsyncTransactionProducer]):
    """Blocking transaction producer (RocketMQ's TransactionMQProducer); many threads may share one.

    Settings as ``AsyncTransactionProducer``'s, except that ``coalesce`` is off
    unless asked for: each thread's half and end are requests of their own, as
    RocketMQ's are. ``start()`` (or ``with``) registers ``check_url`` and keeps
    it registered from a task on the loop thread; ``close()`` stops it. The
    listener's methods are blocking: ``execute_local_transaction`` runs in the
    sending thread, ``check_local_transaction`` on a worker thread of the check app.
    """

    def __init__(self, base_url: str | None, producer_group: str, listener: TransactionListener, **options: Unpack[TransactionProducerOptions]) -> None:
        options.setdefault("coalesce", False)
        if is_async_callable(listener.execute_local_transaction):
            raise TypeError("the listener's methods are coroutines: use AsyncTransactionProducer")
        super().__init__(AsyncTransactionProducer(base_url, producer_group, listener, **options))  # closed at exit too
        self.listener = listener
        self.producer_group, self.client_id = producer_group, self._async.client_id

    @property
    def check_url(self) -> str | None:
        """The URL the broker dials for check-backs; set it before ``start()`` once the check server's port is known."""
        return self._async.check_url

    @check_url.setter
    def check_url(self, url: str | None) -> None:
        self._async.check_url = url

    def start(self) -> Self:
        """Register ``check_url`` with a first heartbeat (``CheckUrlRefused`` if the broker will not dial it)."""
        run(self._async.start())
        return self

    def __enter__(self) -> Self:
        return self.start()

    def check_app(self, **options: Any) -> CheckApp:
        """The ASGI app answering this producer's check-backs (``AsyncTransactionProducer.check_app``)."""
        return self._async.check_app(**options)

    def send_in_transaction(self, topic: str, message: OutgoingMessage | Body, arg: Any = None, *, also: Also = (),
                            **options: Unpack[SendOptions]) -> TransactionSendResult:
        """Half → local transaction (in this thread) → end; see ``half_message_steps`` for each step's failures.

        ``also=[(topic, message), ...]``: companions decided with it (``AsyncTransactionProducer.send_in_transaction``).
        """
        return run_steps(self._async._send_steps(topic, message, arg, options, also),
                         tracing.transaction_steps_blocking(self._perform, self.producer_group, topic))

    def _perform(self, step: Step) -> Any:
        if isinstance(step, RunLocalTransaction):
            return self.listener.execute_local_transaction(step.message, step.arg)
        return run(self._async._perform(step))

    end_transaction = blocking(AsyncTransactionProducer.end_transaction)
    get_transaction = blocking(AsyncTransactionProducer.get_transaction)
    list_transactions = blocking(AsyncTransactionProducer.list_transactions)

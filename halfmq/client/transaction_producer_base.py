"""What both transaction producers are, apart from how they do I/O.

The producer registers ``check_url`` with the broker by heartbeat so that the
broker can ask about transactions whose end it never got; ``check_app()``
returns the ASGI app to serve at that URL. Without a ``check_url`` a producer
refuses to start unless told ``check_backs=False``: leaving it out by accident
silently turned check-backs off.

Settings and their checks, the state (started, closed), the check app, and
the steps of ``start`` and ``send_in_transaction`` as ``transaction_steps``
sequences; each flavour only runs them with its own driver and keeps its
heartbeat alive in its own way (a thread, a task).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from typing import Any

from halfmq.errors import BrokerError
from halfmq.wire import OutgoingMessage, TransactionState

from . import endpoints, transaction_steps
from .check_app import CheckApp
from .endpoints import Call
from .messages import Body, outgoing
from .numbering import Numbering
from .send_options import SendOptions
from .transaction import AsyncTransactionListener, LocalTransactionState, TransactionListener, TransactionSendResult
from .transaction_steps import Request, Steps, end_state
from .transport import require_http_url

__all__ = ["HEARTBEAT_TIMEOUT", "TransactionProducerBase", "default_client_id"]

log = logging.getLogger("halfmq.client.transaction_producer")

# A heartbeat in flight must not hold close() up for a whole request timeout.
HEARTBEAT_TIMEOUT = 5.0


def default_client_id() -> str:
    """hostname-pid-random: unique per producer instance, readable in the broker's producer list."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


class TransactionProducerBase:
    """State and steps shared by both flavours (no I/O here)."""

    def __init__(
        self,
        producer_group: str,
        listener: TransactionListener | AsyncTransactionListener,
        check_url: str | None,
        client_id: str | None,
        heartbeat_interval: float,
        retries: int,
        check_backs: bool,
        idempotent_id: str | None = None,
        idempotent: bool = True,
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
        if idempotent_id is not None and not idempotent:
            raise ValueError("idempotent_id given with idempotent=False: leave one of them out")
        self._numbering = Numbering(idempotent_id) if idempotent else None
        self._started = False
        self._closed = False

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

    def _heartbeat_call(self) -> Call[Any]:
        return endpoints.producer_heartbeat(self.producer_group, self.client_id, self.check_url, timeout=HEARTBEAT_TIMEOUT)

    def _start_steps(self) -> Steps[bool]:
        """Check the state, register ``check_url`` with a first heartbeat; True when a heartbeat loop must start."""
        if self._closed:
            raise RuntimeError("a closed transaction producer cannot be started again")
        if self._started:
            return False
        if self.check_url is None and self.check_backs:
            # Without a check URL a transaction whose end is lost (a crash between the local
            # commit and the end call) is never asked about: the broker discards it.
            raise RuntimeError(
                f"producer group {self.producer_group!r} has no check_url, so the broker could never ask about a "
                "transaction whose end is lost: pass check_url=... (and serve check_app() there), "
                "or check_backs=False to run without check-backs"
            )
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

    def _send_steps(self, topic: str, message: OutgoingMessage | Body, arg: Any, options: SendOptions) -> Steps[TransactionSendResult]:
        """Refuses at once (not at the first step) when not started or the message is malformed."""
        if self._closed:
            raise RuntimeError("the transaction producer is closed")
        if not self._started:
            # As RocketMQ's makeSureStateOK: without start() a check_url is never
            # registered, and a transaction whose end is lost would wait forever.
            raise RuntimeError("call start() (or use the producer as a context manager) before sending")
        msg = outgoing(message, **options)
        return transaction_steps.send_in_transaction(self.producer_group, topic, msg, arg, numbered=self._numbering is not None)

    def _end_call(self, transaction_id: str, state: LocalTransactionState | str, from_check: bool) -> Call[dict[str, Any]]:
        return endpoints.end_transaction(transaction_id, self.producer_group, end_state(state), from_check=from_check)

    @staticmethod
    def _list_call(state: str, limit: int) -> Call[list[dict[str, Any]]]:
        try:
            state = TransactionState(state).value
        except ValueError:
            raise ValueError(f"state must be one of {tuple(s.value for s in TransactionState)}, not {state!r}") from None
        return endpoints.list_transactions(state, limit)

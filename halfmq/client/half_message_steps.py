"""Sending in a transaction as a sequence of steps, free of I/O, following RocketMQ's sendMessageInTransaction.

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

The sequence is a generator: it yields each step (a ``Request`` to make, the
``RunLocalTransaction`` to run) and is sent the step's result, or thrown the
``Exception`` it raised. ``AsyncTransactionProducer`` performs every step on
its event loop; ``TransactionProducer`` performs the requests on that loop too
but runs the local transaction in its caller's thread (``step_drivers``). So
both follow this one text, and tests walk it with plain values.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from halfmq.errors import BrokerError
from halfmq.wire import HalfSendResult, OutgoingMessage, SendStatus, TxnMessage

from . import endpoints
from .endpoints import Call
from .listener import LocalTransactionState, coerce_local_state

__all__ = ["Request", "RunLocalTransaction", "Step", "Steps", "TransactionSendResult", "end_state", "listener_message", "send_in_transaction"]

# The producers' logger, as before the steps had a module of their own.
log = logging.getLogger("halfmq.client.transaction_producer")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Request:
    """Make this HTTP call and send back its result.

    ``idempotent`` requests are retried on any retriable error; the others
    only when the request certainly never left (a half send opens a new
    transaction each time it arrives).
    """

    call: Call[Any]
    idempotent: bool = True
    numbered: bool = False  # an idempotent producer adds its {producer_id, epoch, sequence} when it sends this


@dataclass(frozen=True, slots=True)
class RunLocalTransaction:
    """Run ``execute_local_transaction(message, arg)`` and send back its answer (or throw its Exception)."""

    message: OutgoingMessage
    arg: Any


Step = Request | RunLocalTransaction
Steps = Generator[Step, Any, T]


@dataclass(frozen=True, slots=True)
class TransactionSendResult:
    """What ``send_in_transaction`` did; a failed end is returned here, not raised.

    ``local_state`` is the state the end was sent with. ``local_error`` is the
    exception ``execute_local_transaction`` raised (the state is then
    ``ROLLBACK_MESSAGE``). ``end`` is the broker's view of the transaction
    after the end (``state``, ``final`` placement of a committed message,
    ``duplicate``); when the end call failed it is ``None`` and ``end_error``
    says why: the transaction stays pending until the broker's check-back
    settles it, exactly as in RocketMQ, so this is not raised.
    """

    transaction_id: str
    msg_id: str
    send_status: SendStatus
    local_state: LocalTransactionState
    half: HalfSendResult
    message: OutgoingMessage
    end: dict[str, Any] | None = None
    end_error: BrokerError | None = None
    local_error: Exception | None = None
    also: tuple[TxnMessage, ...] = ()  # the companions the same transaction decided, as sent (msg id: their UNIQ_KEY)


def listener_message(message: OutgoingMessage, half: HalfSendResult, producer_group: str) -> OutgoingMessage:
    """The message as sent, with the properties RocketMQ sets before the local transaction runs.

    ``TRANSACTION_ID`` lets the listener record the id next to its business
    change, so a check-back (whose message carries the same property) can find it.
    """
    properties = {**message.properties, "TRAN_MSG": "true", "PGROUP": producer_group, "TRANSACTION_ID": half.transaction_id}
    return msgspec.structs.replace(message, properties=properties)


def end_state(state: LocalTransactionState | str) -> str:
    """The broker's end state for a ``LocalTransactionState``, its value or its name."""
    if isinstance(state, LocalTransactionState):
        return state.value
    try:
        return LocalTransactionState(state).value
    except ValueError:
        member = LocalTransactionState.__members__.get(str(state))
        if member is None:
            raise ValueError(f"not a transaction state: {state!r}") from None
        return member.value


def send_in_transaction(producer_group: str, topic: str, message: OutgoingMessage, arg: Any, numbered: bool = False,
                        also: Sequence[TxnMessage] = ()) -> Steps[TransactionSendResult]:
    """Half → local transaction → end; see the module docstring for each step's failures.

    ``numbered``: the producer numbers its half sends, so retrying one is harmless (the broker answers a repeat).
    ``also``: more messages (each naming its topic) stored with the half in one write group and decided by the same
    end: all committed, or none (halfmq's extension; the listener and a check-back see ``message``).
    """
    # Raises, and the local transaction never runs, if the half is not stored.
    half: HalfSendResult = yield Request(endpoints.half_send(producer_group, topic, message, also), idempotent=numbered, numbered=numbered)
    seen = listener_message(message, half, producer_group)
    local_error: Exception | None = None
    # As RocketMQ's sendMessageInTransaction: a half stored with any status but SEND_OK (not known durable)
    # is rolled back without running the local transaction.
    state = None if half.status is SendStatus.SEND_OK else LocalTransactionState.ROLLBACK_MESSAGE
    if state is not None:
        log.warning("half message %s of transaction %s stored with %s: rolling back without running the local transaction",
                    half.msg_id, half.transaction_id, half.status.value)
    else:
        try:
            answer = yield RunLocalTransaction(seen, arg)
        except Exception as exc:  # only Exception: a BaseException must leave the end unsent
            log.error("execute_local_transaction failed for transaction %s (msg %s); rolling back", half.transaction_id, half.msg_id, exc_info=exc)
            state, local_error = LocalTransactionState.ROLLBACK_MESSAGE, exc
        else:
            state = coerce_local_state(answer, where="execute_local_transaction")
    view: dict[str, Any] | None = None
    end_error: BrokerError | None = None
    try:
        view = yield Request(endpoints.end_transaction(half.transaction_id, producer_group, state.value))
    except BrokerError as exc:
        level = logging.ERROR if state is LocalTransactionState.COMMIT_MESSAGE and not exc.retriable else logging.WARNING
        log.log(level, "end of transaction %s with %s failed (%s: %s); the broker's check-back will settle it",
                half.transaction_id, state.value, type(exc).__name__, exc)
        end_error = exc
    return TransactionSendResult(transaction_id=half.transaction_id, msg_id=half.msg_id, send_status=half.status, local_state=state,
                                 half=half, message=seen, end=view, end_error=end_error, local_error=local_error, also=tuple(also))

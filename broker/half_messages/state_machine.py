"""The end-transaction state machine: one table, every legal move and what it writes.

Anything not in the table is a conflict (409): an outcome, once decided, never flips.
Repeating the decided outcome is legal and writes nothing, which is what makes
ending a transaction idempotent.
"""

from __future__ import annotations

from enum import Enum

from halfmq.errors import TransactionConflict
from halfmq.wire import TransactionState

from .record_names import OpKind


class HalfEvent(str, Enum):
    COMMIT = "commit"
    ROLLBACK = "rollback"
    UNKNOWN = "unknown"
    DISCARD = "discard"  # checked transaction_check_max times without an answer
    RESEND = "resend"  # operator: deliver a discarded message after all


class TxAction(str, Enum):
    NONE = "none"
    APPEND_FINAL_AND_OP = "append_final_and_op"
    APPEND_OP = "append_op"
    MOVE_TO_CHECK_MAX = "move_to_check_max"


S, E, A = TransactionState, HalfEvent, TxAction

TRANSITIONS: dict[tuple[TransactionState, HalfEvent], tuple[TransactionState, TxAction]] = {
    (S.PENDING, E.COMMIT): (S.COMMITTED, A.APPEND_FINAL_AND_OP),
    (S.PENDING, E.ROLLBACK): (S.ROLLED_BACK, A.APPEND_OP),
    (S.PENDING, E.UNKNOWN): (S.PENDING, A.NONE),
    (S.PENDING, E.DISCARD): (S.DISCARDED, A.MOVE_TO_CHECK_MAX),
    (S.COMMITTED, E.COMMIT): (S.COMMITTED, A.NONE),
    (S.COMMITTED, E.UNKNOWN): (S.COMMITTED, A.NONE),
    (S.ROLLED_BACK, E.ROLLBACK): (S.ROLLED_BACK, A.NONE),
    (S.ROLLED_BACK, E.UNKNOWN): (S.ROLLED_BACK, A.NONE),
    (S.DISCARDED, E.UNKNOWN): (S.DISCARDED, A.NONE),
    (S.DISCARDED, E.DISCARD): (S.DISCARDED, A.NONE),
    (S.DISCARDED, E.RESEND): (S.COMMITTED, A.APPEND_FINAL_AND_OP),
}


def transition(state: TransactionState, event: HalfEvent) -> tuple[TransactionState, TxAction]:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise TransactionConflict(f"transaction is {state.value}; {event.value} is not allowed", state=state.value) from None


# Each writing event reaches one state whatever it starts from: what its op record means on replay.
_DECIDED_BY = {event: new for (_, event), (new, action) in TRANSITIONS.items() if action is not A.NONE}


def op_kind(event: HalfEvent) -> OpKind:
    """The op record an event writes: its kind is the event's name."""
    return OpKind(event.value)


def state_after_op(kind: str) -> TransactionState | None:
    """The state an op record of ``kind`` leaves its transaction in; None for a check (it decides nothing)."""
    try:
        return _DECIDED_BY.get(HalfEvent(kind))
    except ValueError:
        return None

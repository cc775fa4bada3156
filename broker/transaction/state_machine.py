"""The end-transaction state machine: one table, every legal move and what it writes.

Anything not in the table is a conflict (409): an outcome, once decided, never flips.
Repeating the decided outcome is legal and writes nothing, which is what makes
ending a transaction idempotent.
"""

from __future__ import annotations

from enum import Enum

from halfmq.broker.errors import TransactionConflict


class TxState(str, Enum):
    PENDING = "pending"
    COMMITTED = "committed"
    ROLLED_BACK = "rolled_back"
    DISCARDED = "discarded"


class TxEvent(str, Enum):
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


S, E, A = TxState, TxEvent, TxAction

TRANSITIONS: dict[tuple[TxState, TxEvent], tuple[TxState, TxAction]] = {
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


def transition(state: TxState, event: TxEvent) -> tuple[TxState, TxAction]:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise TransactionConflict(f"transaction is {state.value}; {event.value} is not allowed", state=state.value) from None

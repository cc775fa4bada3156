"""The producer-transaction state machine (Kafka semantics, DESIGN section 11): one table.

States are Kafka's ``TransactionState`` names without the two PREPARE states:
Kafka needs them because its commit writes markers to many partition leaders
after the coordinator's log says "prepare"; here a commit is ONE atomic write
group on one commit log (every message and the commit record), so there is
no moment when a commit is decided but not yet complete, and recovery never
meets one (docs/decisions/026-producer-transactions.md).

Every (state, event) pair is in the table: either a move (the next state and
what to write) or the typed error the request gets, so nothing is left to an
``if`` elsewhere. Fencing and sequence numbers are checked before the table
(they do not depend on the state).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from halfmq.errors import BrokerError, InvalidTxnState, TransactionAborted


class ProducerTxnState(str, Enum):
    EMPTY = "EMPTY"  # initialised, no transaction begun under this epoch yet
    ONGOING = "ONGOING"
    COMPLETE_COMMIT = "COMPLETE_COMMIT"
    COMPLETE_ABORT = "COMPLETE_ABORT"


class ProducerTxnEvent(str, Enum):
    INIT = "init"  # a (new) producer instance: bump the epoch, abort what the old one left open
    BEGIN = "begin"
    ADD_MESSAGES = "messages"
    ADD_ACKS = "acks"
    COMMIT = "commit"
    ABORT = "abort"  # the producer asks
    EXPIRE = "expire"  # the broker aborts: timeout, recovery after a restart, or an operator


class TxnAction(str, Enum):
    NONE = "none"  # a repeat or a stale timer: nothing written, the first answer stands
    WRITE_INIT = "write_init"
    ABORT_THEN_INIT = "abort_then_init"  # one write group: the abort record, then the init record
    WRITE_BEGIN = "write_begin"
    KEEP_MESSAGES = "keep_messages"  # held in memory until commit (an open transaction never survives a restart)
    HOLD_ACKS = "hold_acks"  # the receipts stay invisible to their group until the end
    WRITE_COMMIT = "write_commit"  # one group: every message, then the commit record carrying the acks
    WRITE_ABORT = "write_abort"


@dataclass(frozen=True, slots=True)
class Move:
    state: ProducerTxnState
    action: TxnAction


S, E, A = ProducerTxnState, ProducerTxnEvent, TxnAction
Outcome = Move | type[BrokerError]

TRANSITIONS: dict[tuple[ProducerTxnState, ProducerTxnEvent], Outcome] = {
    (S.EMPTY, E.INIT): Move(S.EMPTY, A.WRITE_INIT),
    (S.EMPTY, E.BEGIN): Move(S.ONGOING, A.WRITE_BEGIN),
    (S.EMPTY, E.ADD_MESSAGES): InvalidTxnState,
    (S.EMPTY, E.ADD_ACKS): InvalidTxnState,
    (S.EMPTY, E.COMMIT): InvalidTxnState,
    (S.EMPTY, E.ABORT): InvalidTxnState,
    (S.EMPTY, E.EXPIRE): Move(S.EMPTY, A.NONE),

    (S.ONGOING, E.INIT): Move(S.EMPTY, A.ABORT_THEN_INIT),
    (S.ONGOING, E.BEGIN): InvalidTxnState,
    (S.ONGOING, E.ADD_MESSAGES): Move(S.ONGOING, A.KEEP_MESSAGES),
    (S.ONGOING, E.ADD_ACKS): Move(S.ONGOING, A.HOLD_ACKS),
    (S.ONGOING, E.COMMIT): Move(S.COMPLETE_COMMIT, A.WRITE_COMMIT),
    (S.ONGOING, E.ABORT): Move(S.COMPLETE_ABORT, A.WRITE_ABORT),
    (S.ONGOING, E.EXPIRE): Move(S.COMPLETE_ABORT, A.WRITE_ABORT),

    (S.COMPLETE_COMMIT, E.INIT): Move(S.EMPTY, A.WRITE_INIT),
    (S.COMPLETE_COMMIT, E.BEGIN): Move(S.ONGOING, A.WRITE_BEGIN),
    (S.COMPLETE_COMMIT, E.ADD_MESSAGES): InvalidTxnState,
    (S.COMPLETE_COMMIT, E.ADD_ACKS): InvalidTxnState,
    (S.COMPLETE_COMMIT, E.COMMIT): Move(S.COMPLETE_COMMIT, A.NONE),
    (S.COMPLETE_COMMIT, E.ABORT): InvalidTxnState,
    (S.COMPLETE_COMMIT, E.EXPIRE): Move(S.COMPLETE_COMMIT, A.NONE),

    (S.COMPLETE_ABORT, E.INIT): Move(S.EMPTY, A.WRITE_INIT),
    (S.COMPLETE_ABORT, E.BEGIN): Move(S.ONGOING, A.WRITE_BEGIN),
    (S.COMPLETE_ABORT, E.ADD_MESSAGES): TransactionAborted,
    (S.COMPLETE_ABORT, E.ADD_ACKS): TransactionAborted,
    (S.COMPLETE_ABORT, E.COMMIT): TransactionAborted,
    (S.COMPLETE_ABORT, E.ABORT): Move(S.COMPLETE_ABORT, A.NONE),
    (S.COMPLETE_ABORT, E.EXPIRE): Move(S.COMPLETE_ABORT, A.NONE),
}


def transition(state: ProducerTxnState, event: ProducerTxnEvent) -> Move:
    """The move ``event`` makes from ``state``; the table's typed error (409) when it is not allowed."""
    outcome = TRANSITIONS[(state, event)]
    if isinstance(outcome, Move):
        return outcome
    raise outcome(f"the transaction is {state.value}: {event.value} is not allowed", state=state.value)

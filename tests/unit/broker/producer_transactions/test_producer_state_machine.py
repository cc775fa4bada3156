"""The producer-transaction table, every (state, event) pair of it."""

import itertools

import pytest

from halfmq.broker.producer_transactions.producer_state_machine import TRANSITIONS, Move, ProducerTxnEvent, ProducerTxnState, TxnAction, transition
from halfmq.errors import InvalidTxnState, TransactionAborted

S, E, A = ProducerTxnState, ProducerTxnEvent, TxnAction

LEGAL = {
    (S.EMPTY, E.INIT): Move(S.EMPTY, A.WRITE_INIT),
    (S.EMPTY, E.BEGIN): Move(S.ONGOING, A.WRITE_BEGIN),
    (S.EMPTY, E.EXPIRE): Move(S.EMPTY, A.NONE),
    (S.ONGOING, E.INIT): Move(S.EMPTY, A.ABORT_THEN_INIT),
    (S.ONGOING, E.ADD_MESSAGES): Move(S.ONGOING, A.KEEP_MESSAGES),
    (S.ONGOING, E.ADD_ACKS): Move(S.ONGOING, A.HOLD_ACKS),
    (S.ONGOING, E.COMMIT): Move(S.COMPLETE_COMMIT, A.WRITE_COMMIT),
    (S.ONGOING, E.ABORT): Move(S.COMPLETE_ABORT, A.WRITE_ABORT),
    (S.ONGOING, E.EXPIRE): Move(S.COMPLETE_ABORT, A.WRITE_ABORT),
    (S.COMPLETE_COMMIT, E.INIT): Move(S.EMPTY, A.WRITE_INIT),
    (S.COMPLETE_COMMIT, E.BEGIN): Move(S.ONGOING, A.WRITE_BEGIN),
    (S.COMPLETE_COMMIT, E.COMMIT): Move(S.COMPLETE_COMMIT, A.NONE),
    (S.COMPLETE_COMMIT, E.EXPIRE): Move(S.COMPLETE_COMMIT, A.NONE),
    (S.COMPLETE_ABORT, E.INIT): Move(S.EMPTY, A.WRITE_INIT),
    (S.COMPLETE_ABORT, E.BEGIN): Move(S.ONGOING, A.WRITE_BEGIN),
    (S.COMPLETE_ABORT, E.ABORT): Move(S.COMPLETE_ABORT, A.NONE),
    (S.COMPLETE_ABORT, E.EXPIRE): Move(S.COMPLETE_ABORT, A.NONE),
}
ABORTED = {(S.COMPLETE_ABORT, E.ADD_MESSAGES), (S.COMPLETE_ABORT, E.ADD_ACKS), (S.COMPLETE_ABORT, E.COMMIT)}
ALL = list(itertools.product(ProducerTxnState, ProducerTxnEvent))
REFUSED = [pair for pair in ALL if pair not in LEGAL and pair not in ABORTED]


def test_the_table_covers_every_state_and_event() -> None:
    assert set(TRANSITIONS) == set(ALL)


@pytest.mark.parametrize(("state", "event"), sorted(LEGAL, key=str), ids=[f"{s.value}-{e.value}" for s, e in sorted(LEGAL, key=str)])
def test_every_legal_move_lands_where_the_table_says(state, event) -> None:
    assert transition(state, event) == LEGAL[(state, event)]


@pytest.mark.parametrize(("state", "event"), REFUSED, ids=[f"{s.value}-{e.value}" for s, e in REFUSED])
def test_every_other_request_is_an_invalid_state_409(state, event) -> None:
    with pytest.raises(InvalidTxnState) as info:
        transition(state, event)
    assert type(info.value) is InvalidTxnState
    assert info.value.status == 409 and info.value.code == "INVALID_TXN_STATE"
    assert info.value.to_problem()["state"] == state.value


@pytest.mark.parametrize(("state", "event"), sorted(ABORTED, key=str), ids=[f"{s.value}-{e.value}" for s, e in sorted(ABORTED, key=str)])
def test_working_on_an_aborted_transaction_is_the_abortable_error(state, event) -> None:
    with pytest.raises(TransactionAborted) as info:
        transition(state, event)
    assert info.value.code == "TRANSACTION_ABORTED" and info.value.status == 409


def test_commit_without_begin_commit_after_abort_and_messages_after_commit_are_refused() -> None:
    for state, event in ((S.EMPTY, E.COMMIT), (S.COMPLETE_ABORT, E.COMMIT), (S.COMPLETE_COMMIT, E.ADD_MESSAGES),
                         (S.COMPLETE_COMMIT, E.ABORT), (S.ONGOING, E.BEGIN)):
        with pytest.raises(InvalidTxnState):
            transition(state, event)


def test_repeating_the_decided_end_writes_nothing() -> None:
    assert transition(S.COMPLETE_COMMIT, E.COMMIT).action is A.NONE
    assert transition(S.COMPLETE_ABORT, E.ABORT).action is A.NONE


def test_a_refusal_names_the_state_and_the_request() -> None:
    with pytest.raises(InvalidTxnState) as refused:
        transition(ProducerTxnState.EMPTY, ProducerTxnEvent.COMMIT)
    assert refused.value.detail == f"the transaction is {ProducerTxnState.EMPTY.value}: {ProducerTxnEvent.COMMIT.value} is not allowed"
    assert refused.value.to_problem()["state"] == ProducerTxnState.EMPTY.value

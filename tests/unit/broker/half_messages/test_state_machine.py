import itertools

import pytest

from halfmq.broker.half_messages.state_machine import TRANSITIONS, HalfEvent, TxAction, op_kind, state_after_op, transition
from halfmq.errors import TransactionConflict
from halfmq.wire import TransactionState

S, E, A = TransactionState, HalfEvent, TxAction

LEGAL = {
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


@pytest.mark.parametrize(("state", "event"), sorted(LEGAL, key=str))
def test_every_legal_transition_lands_where_the_table_says(state, event) -> None:
    assert transition(state, event) == LEGAL[(state, event)]


ILLEGAL = [pair for pair in itertools.product(TransactionState, HalfEvent) if pair not in LEGAL]


@pytest.mark.parametrize(("state", "event"), ILLEGAL, ids=[f"{s.value}-{e.value}" for s, e in ILLEGAL])
def test_every_other_transition_is_a_conflict(state, event) -> None:
    with pytest.raises(TransactionConflict) as info:
        transition(state, event)
    assert info.value.status == 409


def test_commit_after_rollback_is_rejected() -> None:
    with pytest.raises(TransactionConflict):
        transition(S.ROLLED_BACK, E.COMMIT)


def test_the_states_and_events_have_their_wire_names() -> None:
    assert {s.value for s in S} == {"pending", "committed", "rolled_back", "discarded"}
    assert (S("pending"), S("committed"), S("rolled_back"), S("discarded")) == (S.PENDING, S.COMMITTED, S.ROLLED_BACK, S.DISCARDED)
    assert (E("commit"), E("rollback"), E("unknown")) == (E.COMMIT, E.ROLLBACK, E.UNKNOWN)


def test_a_conflict_tells_the_client_the_decided_state_and_the_refused_end() -> None:
    with pytest.raises(TransactionConflict) as info:
        transition(S.ROLLED_BACK, E.COMMIT)
    problem = info.value.to_problem()
    assert problem["state"] == "rolled_back"
    assert "rolled_back" in problem["detail"] and "commit" in problem["detail"]
    assert problem["code"] == "TRANSACTION_CONFLICT"


def test_a_decided_outcome_never_flips() -> None:
    for (state, _event), (new_state, _) in TRANSITIONS.items():
        if state in (S.COMMITTED, S.ROLLED_BACK):
            assert new_state is state


def test_repeating_the_decided_outcome_writes_nothing() -> None:
    assert transition(S.COMMITTED, E.COMMIT)[1] is A.NONE
    assert transition(S.ROLLED_BACK, E.ROLLBACK)[1] is A.NONE


def test_every_event_that_writes_leaves_an_op_record_of_its_own_name() -> None:
    writing = {event for (_, event), (_, action) in TRANSITIONS.items() if action is not A.NONE}
    assert writing == {E.COMMIT, E.ROLLBACK, E.DISCARD, E.RESEND}
    assert {op_kind(event).value for event in writing} == {"commit", "rollback", "discard", "resend"}


def test_an_op_record_replays_to_the_state_its_event_reached() -> None:
    replayed = {kind: state_after_op(kind) for kind in ("commit", "resend", "rollback", "discard", "check", "unknown", "")}
    assert replayed == {"commit": S.COMMITTED, "resend": S.COMMITTED, "rollback": S.ROLLED_BACK, "discard": S.DISCARDED,
                        "check": None, "unknown": None, "": None}

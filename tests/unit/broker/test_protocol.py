"""The wire spellings both sides read: a rename here breaks every deployed producer and broker."""

from typing import get_args

from halfmq.client import LocalTransactionState
from halfmq.wire import EndState, TransactionState


def test_transaction_states_are_spelled_as_the_api_sends_and_filters_them() -> None:
    assert [state.value for state in TransactionState] == ["pending", "committed", "rolled_back", "discarded"]


def test_an_end_and_a_check_answer_are_commit_rollback_or_unknown() -> None:
    assert get_args(EndState) == ("commit", "rollback", "unknown")


def test_the_sdk_answers_checks_and_ends_with_the_protocols_end_states() -> None:
    assert {state.value for state in LocalTransactionState} == set(get_args(EndState))
    assert LocalTransactionState.COMMIT_MESSAGE == "commit" and LocalTransactionState.ROLLBACK_MESSAGE == "rollback"

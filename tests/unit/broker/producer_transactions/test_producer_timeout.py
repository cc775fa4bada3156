"""The transaction timeout and the transactional ids' expiry as pure decisions over an explicit clock value."""

import pytest

from halfmq.broker.producer_transactions.producer_state_machine import ProducerTxnState
from halfmq.broker.producer_transactions.producer_timeout import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    checked_timeout,
    expired,
    id_expired,
    idle_since_ms,
    is_expired,
)
from halfmq.errors import InvalidTransactionTimeout


def test_the_default_timeout_is_sixty_seconds_and_the_maximum_fifteen_minutes() -> None:
    assert checked_timeout(None) == DEFAULT_TIMEOUT_MS == 60_000
    assert checked_timeout(MAX_TIMEOUT_MS) == 900_000
    assert checked_timeout(1) == 1


@pytest.mark.parametrize("bad", [0, -1, MAX_TIMEOUT_MS + 1, 10**12])
def test_a_timeout_out_of_range_is_a_400_with_a_stable_code(bad: int) -> None:
    with pytest.raises(InvalidTransactionTimeout) as info:
        checked_timeout(bad)
    assert info.value.status == 400 and info.value.code == "INVALID_TRANSACTION_TIMEOUT"


def test_a_transaction_expires_only_once_it_outlives_its_timeout() -> None:
    assert not is_expired(1_000, 500, 1_500)
    assert is_expired(1_000, 500, 1_501)


def test_expired_picks_exactly_the_transactions_past_their_deadline() -> None:
    open_txns = {"a": (0, 100), "b": (50, 100), "c": (0, 1_000)}
    assert expired(open_txns, 100) == []
    assert expired(open_txns, 101) == ["a"]
    assert expired(open_txns, 151) == ["a", "b"]
    assert expired(open_txns, 5_000) == ["a", "b", "c"]


def test_a_refused_timeout_says_the_range_and_the_value_and_carries_the_maximum() -> None:
    with pytest.raises(InvalidTransactionTimeout) as refused:
        checked_timeout(0)
    assert refused.value.detail == f"transaction_timeout_ms must be 1..{MAX_TIMEOUT_MS}, not 0"
    assert refused.value.to_problem()["max"] == MAX_TIMEOUT_MS


DAY_MS = 24 * 3600 * 1000


@pytest.mark.parametrize("state", [ProducerTxnState.EMPTY, ProducerTxnState.COMPLETE_COMMIT, ProducerTxnState.COMPLETE_ABORT])
def test_a_transactional_id_with_nothing_open_expires_once_idle_longer_than_its_expiry(state: ProducerTxnState) -> None:
    assert not id_expired(state, idle_since=0, now_ms=7 * DAY_MS, expiry_ms=7 * DAY_MS)
    assert id_expired(state, idle_since=0, now_ms=7 * DAY_MS + 1, expiry_ms=7 * DAY_MS)


def test_a_transactional_id_with_a_transaction_open_never_expires() -> None:
    assert not id_expired(ProducerTxnState.ONGOING, idle_since=0, now_ms=365 * DAY_MS, expiry_ms=7 * DAY_MS)


def test_a_transactional_id_is_idle_since_its_init_its_last_begin_or_end_or_its_last_numbered_send() -> None:
    assert idle_since_ms(last_used_ms=10, begun_ms=0, ended_ms=None) == 10
    assert idle_since_ms(last_used_ms=10, begun_ms=20, ended_ms=None) == 20
    assert idle_since_ms(last_used_ms=10, begun_ms=20, ended_ms=30) == 30
    assert idle_since_ms(last_used_ms=40, begun_ms=20, ended_ms=30) == 40

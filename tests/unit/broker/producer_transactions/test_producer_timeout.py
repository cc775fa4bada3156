"""The transaction timeout as pure decisions over an explicit clock value."""

import pytest

from halfmq.broker.producer_transactions.producer_timeout import DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, checked_timeout, expired, is_expired
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

"""The ledger of bytes held by open producer transactions: a broker-wide cap, a cap per principal, exact release."""

from __future__ import annotations

import pytest

from halfmq.broker.producer_transactions.held_bytes import HeldBytes
from halfmq.errors import OpenTransactionsFull


def test_bytes_are_held_up_to_the_broker_cap_and_the_next_request_is_refused_without_being_counted() -> None:
    ledger = HeldBytes(cap=100, per_principal=1000)
    ledger.hold("a", None, 60)
    ledger.hold("b", None, 40)
    with pytest.raises(OpenTransactionsFull) as info:
        ledger.hold("c", None, 1)
    assert (info.value.status, info.value.code, info.value.retriable) == (429, "OPEN_TRANSACTIONS_FULL", True)
    assert info.value.extra == {"scope": "broker", "limit_bytes": 100, "held_bytes": 100, "request_bytes": 1}
    assert (ledger.total, ledger.held_by("c")) == (100, 0)


def test_one_principal_at_its_cap_does_not_block_another() -> None:
    ledger = HeldBytes(cap=1000, per_principal=100)
    ledger.hold("a1", "alice", 70)
    ledger.hold("a2", "alice", 30)
    with pytest.raises(OpenTransactionsFull) as info:
        ledger.hold("a3", "alice", 1)
    assert info.value.extra == {"scope": "principal", "limit_bytes": 100, "held_bytes": 100, "request_bytes": 1}
    assert "'alice' hold 100 bytes; 1 more" in info.value.detail
    ledger.hold("b1", "bob", 100)
    assert (ledger.of("alice"), ledger.of("bob"), ledger.total) == (100, 100, 200)


def test_release_gives_back_everything_a_transactional_id_held_whoever_put_it_there() -> None:
    ledger = HeldBytes(cap=1000, per_principal=100)
    ledger.hold("t", "alice", 40)
    ledger.hold("t", "bob", 50)
    ledger.hold("t", "alice", 10)
    ledger.hold("other", "alice", 5)
    assert ledger.release("t") == 100
    assert (ledger.total, ledger.of("alice"), ledger.of("bob"), ledger.held_by("t")) == (5, 5, 0, 0)
    assert ledger.release("t") == 0  # a second release (an abort after a commit's release, a stale timer) is harmless
    ledger.hold("a", "alice", 95)


def test_without_a_principal_only_the_broker_cap_applies() -> None:
    ledger = HeldBytes(cap=300, per_principal=100)
    ledger.hold("t1", None, 150)
    ledger.hold("t2", None, 150)
    assert ledger.total == 300
    with pytest.raises(OpenTransactionsFull):
        ledger.hold("t3", None, 1)


def test_a_refusal_by_the_broker_cap_counts_nothing_against_the_principal() -> None:
    ledger = HeldBytes(cap=100, per_principal=100)
    ledger.hold("t1", "bob", 90)
    with pytest.raises(OpenTransactionsFull) as info:
        ledger.hold("t2", "alice", 20)
    assert info.value.extra["scope"] == "broker"
    assert (ledger.of("alice"), ledger.total) == (0, 90)


def test_what_one_transactional_id_holds_is_counted_apart_from_the_others() -> None:
    ledger = HeldBytes(cap=1000, per_principal=1000)
    ledger.hold("t", None, 30)
    ledger.hold("u", None, 12)
    assert (ledger.held_by("t"), ledger.held_by("u"), ledger.held_by("none")) == (30, 12, 0)

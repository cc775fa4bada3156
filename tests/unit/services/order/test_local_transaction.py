"""The order listener's check-back answers, with a fake store and a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from halfmq.client import LocalTransactionState
from halfmq.services.order.local_transaction import OrderTransactionListener
from halfmq.services.order.repository import NewOrder
from tests.unit.services.fakes import FakeOrderRepository, broker_message

from .conftest import LOCAL_TX_TIMEOUT, NOW


@pytest.fixture
def stored(repo: FakeOrderRepository) -> str:
    repo.create(NewOrder("o-1", "u1", Decimal("1.00"), datetime.now(UTC)), "tx-1")
    return "o-1"


@pytest.mark.parametrize("age", [0.0, LOCAL_TX_TIMEOUT + 1, 86_400.0])
def test_a_stored_order_is_committed_at_any_age(listener: OrderTransactionListener, stored: str, age: float) -> None:
    message = broker_message({"order_id": stored}, born_at=NOW - age)
    assert listener.check_local_transaction(message) is LocalTransactionState.COMMIT_MESSAGE


def test_a_missing_order_is_unknown_while_its_local_transaction_may_still_run(listener: OrderTransactionListener) -> None:
    message = broker_message({"order_id": "o-late"}, born_at=NOW - LOCAL_TX_TIMEOUT + 1)
    assert listener.check_local_transaction(message) is LocalTransactionState.UNKNOW


def test_a_missing_order_older_than_any_local_transaction_is_rolled_back(listener: OrderTransactionListener) -> None:
    message = broker_message({"order_id": "o-never"}, born_at=NOW - LOCAL_TX_TIMEOUT - 1)
    assert listener.check_local_transaction(message) is LocalTransactionState.ROLLBACK_MESSAGE


def test_a_body_that_is_not_an_order_is_answered_by_the_message_key(listener: OrderTransactionListener, stored: str) -> None:
    message = broker_message("not json", keys=[stored], born_at=NOW)
    assert listener.check_local_transaction(message) is LocalTransactionState.COMMIT_MESSAGE

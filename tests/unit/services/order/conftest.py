from __future__ import annotations

import pytest

from halfmq.services.order.local_transaction import OrderTransactionListener
from halfmq.services.order.order_service import OrderService
from tests.unit.services.fakes import FakeOrderRepository, FakeTransactionSender

NOW = 1_800_000_000.0  # the fake clock's "now", in seconds
LOCAL_TX_TIMEOUT = 30.0


@pytest.fixture
def repo() -> FakeOrderRepository:
    return FakeOrderRepository()


@pytest.fixture
def listener(repo: FakeOrderRepository) -> OrderTransactionListener:
    return OrderTransactionListener(repo, LOCAL_TX_TIMEOUT, clock=lambda: NOW)


@pytest.fixture
def sender(listener: OrderTransactionListener) -> FakeTransactionSender:
    return FakeTransactionSender(listener)


@pytest.fixture
def service(repo: FakeOrderRepository, sender: FakeTransactionSender) -> OrderService:
    return OrderService(repo, sender, "ORDER_TOPIC", faults_enabled=True)

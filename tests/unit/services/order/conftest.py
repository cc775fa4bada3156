from __future__ import annotations

import pytest

from halfmq.services.order.order_service import OrderService
from tests.unit.services.fakes import FakeBarrier, FakeOrderRepository


@pytest.fixture
def repo() -> FakeOrderRepository:
    return FakeOrderRepository()


@pytest.fixture
def sender(repo: FakeOrderRepository) -> FakeBarrier:
    return FakeBarrier(repo)


@pytest.fixture
def service(repo: FakeOrderRepository, sender: FakeBarrier) -> OrderService:
    return OrderService(repo, sender, sender, "ORDER_TOPIC", faults_enabled=True)

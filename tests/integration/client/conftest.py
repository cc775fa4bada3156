"""What the SDK's tests against a real broker share: the broker in this test process, a producer on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from halfmq import Producer
from halfmq.testing import InProcessBroker


@pytest.fixture
def broker_url(halfmq_broker: InProcessBroker) -> str:
    """The real broker in this test process: these tests need no broker process of their own."""
    return halfmq_broker.url


@pytest.fixture
def producer(broker_url: str) -> Iterator[Producer]:
    with Producer(broker_url) as p:
        yield p

"""What operators see of consumer groups, on a real store and a real delivery service with a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.errors import ConsumerGroupNotFound
from tests.support.fake_clock import FakeClock


@pytest.fixture
def store(tmp_path: Path):
    s = MessageStore(StoreConfig(tmp_path))
    s.create_topic("T", 2)
    s.put([PutItem("T", 0, b"%d" % i) for i in range(5)])
    yield s
    s.close()


@pytest.fixture
def service(store: MessageStore) -> DeliveryService:
    return DeliveryService(store, DeliveryPolicy(retry_delays=(0, 0)), FakeClock(1000.0))


def test_a_group_that_has_consumed_nothing_has_no_lag_to_show(service: DeliveryService) -> None:
    with pytest.raises(ConsumerGroupNotFound):
        service.views.group_lag("nobody")


async def test_lag_counts_what_is_past_the_committed_offset_and_what_is_in_flight(service: DeliveryService) -> None:
    got = await service.receive("g", "T", 3, invisible=30, wait=0)
    service.ack("g", "T", [got[0].receipt_handle])
    q0, q1 = service.views.group_lag("g")["T"]
    assert (q0.queue_id, q0.committed_offset, q0.max_offset, q0.lag, q0.in_flight) == (0, 1, 5, 4, 2)
    assert (q1.queue_id, q1.lag, q1.in_flight) == (1, 0, 0)


async def test_the_groups_are_those_that_consumed_and_those_with_committed_offsets(service: DeliveryService, store: MessageStore) -> None:
    store.offsets.commit("committed-only", "T", 0, 2)
    await service.receive("consuming", "T", 1, invisible=30, wait=0)
    assert service.views.groups() == ["committed-only", "consuming"]
    assert service.views.group_lag("committed-only")["T"][0].committed_offset == 2


async def test_retrying_counts_the_deliveries_past_their_first_attempt(service: DeliveryService) -> None:
    first, _ = await service.receive("g", "T", 2, invisible=30, wait=0)
    assert service.views.retrying("g") == 0
    service.nack("g", "T", [first.receipt_handle])
    [again] = await service.receive("g", "T", 1, invisible=30, wait=0)
    assert again.delivery_attempt == 2
    assert service.views.retrying("g") == 1
    assert service.views.retrying("another group") == 0

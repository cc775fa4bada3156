"""FIFO message groups through DeliveryService, on a real store in a temp dir, with a fake clock: no sleeping.

Invariant O: a message of a group is handed out only when every earlier message of its group is settled (acked or
moved to the DLQ); other groups, and messages without a group, are served meanwhile.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from halfmq.broker.delivery.delivery_service import Delivery, DeliveryPolicy, DeliveryService
from halfmq.broker.delivery.fifo_gate import MESSAGE_GROUP
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from tests.support.fake_clock import FakeClock


@pytest.fixture
def store(tmp_path: Path):
    s = MessageStore(StoreConfig(tmp_path))
    s.create_topic("T", 1)
    yield s
    s.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


def service_on(store: MessageStore, clock: FakeClock, *, window: int = 20_000) -> DeliveryService:
    return DeliveryService(store, DeliveryPolicy(max_reconsume_times=2, retry_delays=(5, 50), fifo_window=window), clock)


@pytest.fixture
def service(store: MessageStore, clock: FakeClock) -> DeliveryService:
    return service_on(store, clock)


def put(store: MessageStore, *messages: tuple[str | None, str]) -> None:
    """(group or None, body) pairs, in this order, into queue 0."""
    store.put([PutItem("T", 0, body.encode(), {MESSAGE_GROUP: group} if group else {}) for group, body in messages])


async def receive(service: DeliveryService, n: int = 32, invisible: float = 30) -> list[Delivery]:
    return await service.receive("c", "T", n, invisible=invisible, wait=0)


def bodies(deliveries: list[Delivery]) -> list[str]:
    return [d.message.body.decode() for d in deliveries]


async def test_a_message_of_a_busy_group_waits_and_is_the_next_one_handed_out_once_its_predecessor_is_acked(
        service, store) -> None:
    put(store, ("g", "g1"), ("g", "g2"), ("g", "g3"))
    [first] = await receive(service)
    assert bodies([first]) == ["g1"]
    assert await receive(service) == []
    service.ack("c", "T", [first.receipt_handle])
    assert bodies(await receive(service)) == ["g2"]


async def test_other_groups_are_served_while_one_group_waits(service, store) -> None:
    put(store, ("a", "a1"), ("a", "a2"), ("b", "b1"), ("a", "a3"), ("b", "b2"), ("c", "c1"))
    assert bodies(await receive(service)) == ["a1", "b1", "c1"]


async def test_a_nacked_head_keeps_its_group_busy_until_it_is_acked_and_then_the_next_message_follows(
        service, store, clock) -> None:
    put(store, ("g", "g1"), ("g", "g2"))
    [head] = await receive(service)
    service.nack("c", "T", [head.receipt_handle])
    clock.now += 5.1
    [again] = await receive(service)
    assert bodies([again]) == ["g1"] and again.delivery_attempt == 2
    assert await receive(service) == []
    service.ack("c", "T", [again.receipt_handle])
    assert bodies(await receive(service)) == ["g2"]


async def test_a_nacked_head_keeps_its_group_busy_until_it_is_dead_lettered_and_then_the_next_message_follows(
        service, store, clock) -> None:
    put(store, ("g", "poison"), ("g", "g2"))
    for attempt in (1, 2, 3):  # 1 + max_reconsume_times deliveries
        [head] = await receive(service)
        assert bodies([head]) == ["poison"] and head.delivery_attempt == attempt
        service.nack("c", "T", [head.receipt_handle])
        clock.now += 60
    [after] = await receive(service)  # due again, exhausted: moved to the DLQ and settled, so g2 follows
    assert bodies([after]) == ["g2"]
    assert store.reads.queue_range("%DLQ%c", 0)[1] == 1


async def test_an_expired_invisibility_redelivers_the_head_never_the_second(service, store, clock) -> None:
    put(store, ("g", "g1"), ("g", "g2"))
    [first] = await receive(service, invisible=2)
    for attempt in (2, 3):
        clock.now += 2.1
        got = await receive(service, invisible=2)
        assert bodies(got) == ["g1"] and got[0].delivery_attempt == attempt


async def test_a_delivery_handed_back_stays_its_groups_head(service, store) -> None:
    put(store, ("g", "g1"), ("g", "g2"))
    [first] = await receive(service)
    service.release("c", "T", [first.receipt_handle])
    assert bodies(await receive(service)) == ["g1"]


async def test_a_consumer_group_giving_up_on_the_head_lets_the_next_message_follow(service, store) -> None:
    put(store, ("g", "g1"), ("g", "g2"))
    [first] = await receive(service)
    assert service.dead_letter("c", "T", first.receipt_handle)
    assert bodies(await receive(service)) == ["g2"]


async def test_messages_without_a_group_are_not_held(service, store) -> None:
    put(store, ("g", "g1"), (None, "p1"), ("g", "g2"), (None, "p2"))
    assert bodies(await receive(service)) == ["g1", "p1", "p2"]


async def test_each_consumer_group_keeps_its_own_order(service, store) -> None:
    put(store, ("g", "g1"), ("g", "g2"))
    [mine] = await receive(service)
    [theirs] = await service.receive("other", "T", 32, invisible=30, wait=0)
    assert bodies([mine, theirs]) == ["g1", "g1"]
    service.ack("other", "T", [theirs.receipt_handle])
    assert await receive(service) == []


async def test_the_cursor_stops_at_the_window_and_moves_again_when_committed_moves(store, clock) -> None:
    service = service_on(store, clock, window=4)
    put(store, ("stuck", "s1"), ("stuck", "s2"), ("stuck", "s3"), ("stuck", "s4"), ("free", "f1"))
    [stuck] = await receive(service)
    assert bodies([stuck]) == ["s1"]  # s2..s4 wait; f1 is past committed (0) + 4: not read
    assert await receive(service) == []
    service.ack("c", "T", [stuck.receipt_handle])  # committed moves to 1: f1 is inside the window again
    assert bodies(await receive(service)) == ["s2", "f1"]


async def test_a_head_holding_its_queue_at_the_window_is_reported_with_how_long_until_it_is_acked(store, clock) -> None:
    service = service_on(store, clock, window=4)
    put(store, ("stuck", "s1"), ("stuck", "s2"), ("stuck", "s3"), ("stuck", "s4"), ("free", "f1"))
    [stuck] = await receive(service, invisible=600)

    def stalled() -> float:
        [queue] = service.views.group_lag("c")["T"]
        return queue.fifo_window_stalled_seconds

    assert await receive(service) == [] and stalled() == 0.0  # f1 waits past the window from now
    clock.advance(90)
    assert await receive(service) == [] and stalled() == 90.0
    service.ack("c", "T", [stuck.receipt_handle])
    assert stalled() == 0.0


async def test_without_waiting_messages_the_window_does_not_hold_the_cursor(store, clock) -> None:
    service = service_on(store, clock, window=2)
    put(store, *[(f"g{i}", f"m{i}") for i in range(5)])
    assert len(await receive(service)) == 5


async def test_a_long_poll_wakes_when_the_next_message_of_its_group_becomes_ready(service, store, clock) -> None:
    import asyncio

    put(store, ("g", "g1"), ("g", "g2"))
    [first] = await receive(service)
    clock_free_wait = asyncio.ensure_future(service.receive("c", "T", 32, invisible=30, wait=5))
    await asyncio.sleep(0)
    service.ack("c", "T", [first.receipt_handle])
    got = await asyncio.wait_for(clock_free_wait, 2)
    assert bodies(got) == ["g2"]


async def test_after_a_restart_each_group_comes_back_in_order_from_its_first_unacked_message(store, clock) -> None:
    before = service_on(store, clock)
    put(store, ("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2"), ("a", "a3"))
    got = await before.receive("c", "T", 32, invisible=30, wait=0)
    assert bodies(got) == ["a1", "b1"]
    before.ack("c", "T", [got[1].receipt_handle])  # b1 acked, a1 in flight when the broker goes down
    after = service_on(store, clock)
    after.restore_acked("c", "T", 0, 1)  # the acks record, read back at start
    assert bodies(await after.receive("c", "T", 32, invisible=30, wait=0)) == ["a1", "b2"]


async def test_in_a_broker_set_the_next_message_waits_until_the_high_watermark_passes_its_predecessors_ack(
        service, store) -> None:
    put(store, ("g", "g1"), ("g", "g2"))
    store.visible.limit(store.commit_log.end_offset)  # a set's leader: consumers see up to the high watermark
    [first] = await receive(service)
    service.ack("c", "T", [first.receipt_handle])  # its acks record is past the high watermark: a new leader may lack it
    assert await receive(service) == []
    store.visible.advance(store.commit_log.end_offset)  # the replicas have it
    assert bodies(await receive(service)) == ["g2"]


async def test_the_metric_counts_groups_with_messages_waiting(service, store) -> None:
    put(store, ("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2"), ("c", "c1"))
    await receive(service)
    [lag] = service.views.group_lag("c")["T"]
    assert lag.fifo_groups_waiting == 2

"""DeliveryService on a real store in a temp dir, with a fake clock: no sleeping."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.delivery.queue_progress import DUE_SLACK
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.errors import ConsumerGroupNotFound, InvalidReceiptHandle, NotLeader, TooManyConsumerGroups
from tests.support.fake_clock import FakeClock
from tests.support.loop_steps import run_ready


@pytest.fixture
def store(tmp_path: Path):
    s = MessageStore(StoreConfig(tmp_path))
    s.create_topic("T", 2)
    yield s
    s.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


@pytest.fixture
def service(store: MessageStore, clock: FakeClock) -> DeliveryService:
    return DeliveryService(store, DeliveryPolicy(max_reconsume_times=2, retry_delays=(5, 50)), clock)


def put(store: MessageStore, *bodies: str, qid: int = 0) -> None:
    store.put([PutItem("T", qid, b.encode()) for b in bodies])


async def test_unacked_message_comes_back_only_after_its_invisibility(service, store, clock) -> None:
    put(store, "a")
    [d] = await service.receive("g", "T", 10, invisible=30, wait=0)
    assert await service.receive("g", "T", 10, invisible=30, wait=0) == []
    clock.now += 29.9
    assert await service.receive("g", "T", 10, invisible=30, wait=0) == []
    clock.now += 0.2
    [again] = await service.receive("g", "T", 10, invisible=30, wait=0)
    assert again.message.body == b"a" and again.delivery_attempt == 2


async def test_a_long_poll_that_wakes_after_its_node_may_no_longer_deliver_hands_out_nothing(service, store) -> None:
    """A set's leader paused past its lease fence (SIGSTOP, a stall) while another node led: its waiting long poll must
    not answer from the state it had, or a message the other leader settled meanwhile is delivered again."""
    leading = True

    def fence() -> None:
        if not leading:
            raise NotLeader("this node leads but cannot renew its lease in etcd")

    service.fence = fence
    poll = asyncio.create_task(service.receive("g", "T", 10, invisible=30, wait=30))
    await run_ready()
    assert not poll.done()  # the poll waits for a message
    leading = False  # the pause outlived the lease
    put(store, "a")  # wakes the poll
    with pytest.raises(NotLeader):
        await poll
    leading = True
    [d] = await service.receive("g", "T", 10, invisible=30, wait=0)
    assert d.message.body == b"a" and d.delivery_attempt == 1  # the refused poll took nothing in flight


async def test_nack_waits_for_the_backoff_level_of_its_attempt(service, store, clock) -> None:
    put(store, "a")
    [d] = await service.receive("g", "T", 1, invisible=30, wait=0)
    service.nack("g", "T", [d.receipt_handle])
    clock.now += 4.9
    assert await service.receive("g", "T", 1, invisible=30, wait=0) == []
    clock.now += 0.2
    [d2] = await service.receive("g", "T", 1, invisible=30, wait=0)
    service.nack("g", "T", [d2.receipt_handle])
    clock.now += 49
    assert await service.receive("g", "T", 1, invisible=30, wait=0) == []
    clock.now += 1.1
    [d3] = await service.receive("g", "T", 1, invisible=30, wait=0)
    assert d3.delivery_attempt == 3


async def test_exhausted_message_goes_to_the_dlq_and_commits(service, store, clock) -> None:
    put(store, "poison", "ok")
    for attempt in range(3):
        got = await service.receive("g", "T", 10, invisible=30, wait=0)
        for d in got:
            if d.message.body == b"ok":
                service.ack("g", "T", [d.receipt_handle])
            else:
                assert d.delivery_attempt == attempt + 1
                service.nack("g", "T", [d.receipt_handle])
        clock.now += 100
    assert await service.receive("g", "T", 10, invisible=30, wait=0) == []
    [dead] = store.reads.read_queue("%DLQ%g", 0, 0, 10)
    assert dead.body == b"poison" and dead.properties["RECONSUME_TIME"] == "2"
    assert store.offsets.get("g", "T", 0) == 2


async def test_a_dead_letter_says_why_it_is_there(service, store, clock) -> None:
    put(store, "nacked", qid=0)
    put(store, "ignored", qid=1)
    for _ in range(3):
        for d in await service.receive("g", "T", 10, invisible=30, wait=0):
            if d.message.body == b"nacked":
                service.nack("g", "T", [d.receipt_handle])  # the other is neither acked nor nacked: it times out
        clock.now += 100
    assert await service.receive("g", "T", 10, invisible=30, wait=0) == []
    reasons = {m.body: m.properties["DLQ_REASON"] for m in store.reads.read_queue("%DLQ%g", 0, 0, 10)}
    assert reasons == {b"nacked": "3 deliveries, none acked; the last was nacked",
                       b"ignored": "3 deliveries, none acked; the last was not acked within its invisible time"}
    put(store, "given up")
    [d] = await service.receive("g", "T", 1, invisible=30, wait=0)
    service.dead_letter("g", "T", d.receipt_handle)
    assert store.reads.read_queue("%DLQ%g", 0, 2, 1)[0].properties["DLQ_REASON"] == "dead-lettered by its consumer"


async def test_ack_of_a_stale_receipt_is_expired_and_changes_nothing(service, store, clock) -> None:
    put(store, "a")
    [d] = await service.receive("g", "T", 1, invisible=1, wait=0)
    clock.now += 2
    [d2] = await service.receive("g", "T", 1, invisible=30, wait=0)
    assert service.ack("g", "T", [d.receipt_handle]) == [(d.receipt_handle, False)]
    assert store.offsets.get("g", "T", 0) is None
    assert service.ack("g", "T", [d2.receipt_handle]) == [(d2.receipt_handle, True)]
    assert store.offsets.get("g", "T", 0) == 1


async def test_receive_spreads_over_queues(service, store) -> None:
    put(store, "q0-a", "q0-b", qid=0)
    put(store, "q1-a", qid=1)
    got = await service.receive("g", "T", 10, invisible=30, wait=0)
    assert sorted(d.message.body for d in got) == [b"q0-a", b"q0-b", b"q1-a"]


def reopen_with_damage(tmp_path: Path, store: MessageStore, victim) -> MessageStore:
    store.close()
    seg = tmp_path / "commitlog" / ("0" * 20)
    data = bytearray(seg.read_bytes())
    data[victim.commit_log_offset + victim.size - 1] ^= 0x01
    seg.write_bytes(bytes(data))
    return MessageStore(StoreConfig(tmp_path))


async def test_a_damaged_message_is_skipped_and_counted_and_the_group_consumes_past_it(tmp_path: Path, clock) -> None:
    store = MessageStore(StoreConfig(tmp_path))
    store.create_topic("T", 2)
    results, _ = store.put([PutItem("T", i % 2, f"m{i}".encode()) for i in range(8)])
    store = reopen_with_damage(tmp_path, store, results[2])  # queue 0, offset 1
    try:
        service = DeliveryService(store, DeliveryPolicy(), clock)
        got = []
        for _ in range(10):  # one at a time: a receive whose only candidate is damaged goes on past it
            batch = await service.receive("g", "T", 1, invisible=30, wait=0)
            got += batch
            service.ack("g", "T", [d.receipt_handle for d in batch])
        assert sorted(d.message.body for d in got) == [b"m0", b"m1", b"m3", b"m4", b"m5", b"m6", b"m7"]
        lag = service.views.group_lag("g")["T"]
        assert [(q.committed_offset, q.max_offset) for q in lag] == [(4, 4), (4, 4)]
        assert service.damaged_skips == 1
    finally:
        store.close()


async def test_a_handle_from_another_broker_is_refused_and_creates_no_group(service, store, clock) -> None:
    put(store, "a")
    elsewhere = DeliveryService(store, DeliveryPolicy(), clock, key=b"another broker's key".ljust(32, b"."))
    [d] = await elsewhere.receive("never", "T", 1, invisible=30, wait=0)
    for settle in (service.ack, service.nack):
        with pytest.raises(InvalidReceiptHandle):
            settle("never", "T", [d.receipt_handle])
    with pytest.raises(ConsumerGroupNotFound):
        service.views.group_lag("never")


async def test_a_genuine_handle_from_before_a_restart_is_expired_and_creates_no_state(store, clock) -> None:
    put(store, "a")
    key = b"persisted receipt key".ljust(32, b".")
    before = DeliveryService(store, DeliveryPolicy(), clock, key=key)
    [d] = await before.receive("g", "T", 1, invisible=30, wait=0)
    after = DeliveryService(store, DeliveryPolicy(), clock, key=key)
    assert after.ack("g", "T", [d.receipt_handle]) == [(d.receipt_handle, False)]
    assert after.nack("g", "T", [d.receipt_handle]) == [(d.receipt_handle, False)]
    with pytest.raises(ConsumerGroupNotFound):
        after.views.group_lag("g")  # nothing received or acked in this incarnation, nothing committed before


async def test_change_invisible_hides_a_delivery_for_exactly_the_new_duration(service, store, clock) -> None:
    put(store, "a")
    [d] = await service.receive("g", "T", 1, invisible=30, wait=0)
    assert service.change_invisible("g", "T", d.receipt_handle, 100)
    clock.now += 99.9
    assert await service.receive("g", "T", 1, invisible=30, wait=0) == []
    clock.now += 0.2
    [again] = await service.receive("g", "T", 1, invisible=30, wait=0)
    assert again.delivery_attempt == 2
    assert not service.change_invisible("g", "T", d.receipt_handle, 5)  # the old delivery's handle is no longer held


async def test_dead_letter_moves_a_held_delivery_to_the_groups_dlq_and_settles_it(service, store, clock) -> None:
    put(store, "poison")
    [d] = await service.receive("g", "T", 1, invisible=30, wait=0)
    assert service.dead_letter("g", "T", d.receipt_handle)
    assert [m.body for m in store.reads.read_queue("%DLQ%g", 0, 0, 10)] == [b"poison"]
    clock.now += 1000
    assert await service.receive("g", "T", 1, invisible=30, wait=0) == []
    assert not service.dead_letter("g", "T", d.receipt_handle)


async def test_change_invisible_and_dead_letter_refuse_a_forged_handle(service, store) -> None:
    put(store, "a")
    await service.receive("g", "T", 1, invisible=30, wait=0)
    with pytest.raises(InvalidReceiptHandle):
        service.change_invisible("g", "T", "forged", 1)
    with pytest.raises(InvalidReceiptHandle):
        service.dead_letter("g", "T", "forged")


async def test_acked_deliveries_are_released_at_the_ack_not_when_their_invisible_time_ends(service, store) -> None:
    """Consuming must hold memory flat: an acked delivery leaves nothing behind (its due entry went with the ack)."""
    for _ in range(10):
        put(store, *(f"m{i}" for i in range(100)))
        deliveries = await service.receive("g", "T", 100, invisible=3600, wait=0)
        service.ack("g", "T", [d.receipt_handle for d in deliveries])
    state = service._progress.find("g", "T")
    assert state is not None and sum(len(q.in_flight) for q in state.queues) == 0
    assert len(state.due) <= DUE_SLACK  # 1,000 acked under an hour's invisible time: without the release, 1,000 entries


async def test_a_receive_that_would_begin_a_group_past_the_bound_is_refused_and_a_deleted_group_makes_room(store, clock) -> None:
    service = DeliveryService(store, DeliveryPolicy(max_groups=2), clock)
    put(store, "a")
    for group in ("g1", "g2"):
        await service.receive(group, "T", 1, invisible=30, wait=0)
    with pytest.raises(TooManyConsumerGroups):
        await service.receive("g3", "T", 1, invisible=30, wait=0)
    assert sorted(service.views.groups()) == ["g1", "g2"]  # the refused one holds nothing
    store.create_topic("U", 1)
    await service.receive("g1", "U", 1, invisible=30, wait=0)  # a group already held reads any topic
    service.forget(group="g2")  # a deleted group
    await service.receive("g3", "T", 1, invisible=30, wait=0)


async def test_an_offset_reset_or_commit_that_would_begin_a_group_past_the_bound_is_refused_and_writes_nothing(store, clock) -> None:
    service = DeliveryService(store, DeliveryPolicy(max_groups=1), clock)
    service.reset_offsets("g1", "T", [(0, 0)])
    end = store.commit_log.end_offset
    with pytest.raises(TooManyConsumerGroups):
        service.reset_offsets("g2", "T", [(0, 0)])
    assert store.commit_log.end_offset == end  # no offsets-reset record for the refused group
    assert sorted(service.views.groups()) == ["g1"]
    service.reset_offsets("g1", "T", [(1, 0)])  # a group already held moves as before

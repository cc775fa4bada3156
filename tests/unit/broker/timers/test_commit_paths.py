"""A delay starts when the message becomes visible: a half's commit, a producer transaction's commit (fake clock)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.half_messages.check_policy import CheckPolicy
from halfmq.broker.half_messages.half_message_service import HalfMessageService
from halfmq.broker.idempotence.producer_ids import SendKey, SentRef, sent_messages
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator, TxnLimits
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.topics import REAL_TOPIC, TIMER_OUT_MS, TIMER_TOPIC
from halfmq.broker.timers.routing import TIMER_DELAY_MS, TIMER_DELIVER_MS, route_all

from ..half_messages.fakes import FakeClock


async def _durable(offset: int) -> None:
    return None


def _store(path: Path, clock: FakeClock) -> MessageStore:
    store = MessageStore(StoreConfig(path), clock=clock)
    store.create_topic("ORDERS", 2)
    return store


def _timers(store: MessageStore) -> list[dict[str, str]]:
    return [m.properties for m in store.reads.read_queue(TIMER_TOPIC, 0, 0, 100)]


def _now_ms(clock: FakeClock) -> int:
    return int(clock() * 1000)


def test_a_delay_on_a_half_message_starts_at_its_commit(tmp_path: Path) -> None:
    clock = FakeClock()
    store = _store(tmp_path, clock)
    try:
        txs = HalfMessageService(store, CheckPolicy(6, 5, 3), _durable, clock=clock)
        tx, _ = txs.send_half("pg", PutItem("ORDERS", 1, b"due", {"UNIQ_KEY": "d1", TIMER_DELAY_MS: "30000"}), 2)
        clock.advance(100)
        committed_at = _now_ms(clock)
        outcome = asyncio.run(txs.end(tx.transaction_id, "pg", "commit"))
        [timer] = _timers(store)
        assert (timer[TIMER_OUT_MS], timer[REAL_TOPIC]) == (str(committed_at + 30_000), "ORDERS")
        assert TIMER_DELAY_MS not in timer
        assert store.reads.read_queue("ORDERS", 1, 0, 10) == []
        final = outcome.tx.final
        assert final is not None and (final.topic, final.queue_id, final.queue_offset, final.deliver_at_ms) == (
            "ORDERS", 1, -1, committed_at + 30_000)
    finally:
        store.close()


def test_a_rolled_back_half_with_a_delay_writes_no_timer(tmp_path: Path) -> None:
    clock = FakeClock()
    store = _store(tmp_path, clock)
    try:
        txs = HalfMessageService(store, CheckPolicy(6, 5, 3), _durable, clock=clock)
        tx, _ = txs.send_half("pg", PutItem("ORDERS", 0, b"x", {"UNIQ_KEY": "r1", TIMER_DELAY_MS: "1000"}), 2)
        asyncio.run(txs.end(tx.transaction_id, "pg", "rollback"))
        assert _timers(store) == [] and store.reads.read_queue("ORDERS", 0, 0, 10) == []
    finally:
        store.close()


def test_a_producer_transactions_delayed_message_is_due_relative_to_the_commit_not_the_add(tmp_path: Path) -> None:
    clock = FakeClock()
    store = _store(tmp_path, clock)
    try:
        delivery = DeliveryService(store, DeliveryPolicy(), clock=clock, key=b"k" * 32)
        txns = TransactionCoordinator(store, delivery, _durable, limits=TxnLimits(), clock=clock)
        answer = asyncio.run(txns.init("t1", None, "order"))
        pid, epoch = answer.producer_id, answer.epoch
        txns.begin("t1", pid, epoch, 0)
        at = _now_ms(clock) + 50_000
        txns.add_messages("t1", pid, epoch, 1, [PutItem("ORDERS", 0, b"later", {"UNIQ_KEY": "l1", TIMER_DELAY_MS: "20000"}),
                                                PutItem("ORDERS", 1, b"at", {"UNIQ_KEY": "a1", TIMER_DELIVER_MS: str(at)}),
                                                PutItem("ORDERS", 0, b"now", {"UNIQ_KEY": "n1"})], [])
        clock.advance(10)
        committed_at = _now_ms(clock)
        end = asyncio.run(txns.commit("t1", pid, epoch))
        assert [t[TIMER_OUT_MS] for t in _timers(store)] == [str(committed_at + 20_000), str(at)]
        assert [m.body for m in store.reads.read_queue("ORDERS", 0, 0, 10)] == [b"now"]
        assert [(r.topic, r.queue_id, r.queue_offset) for r in end.results] == [("ORDERS", 0, -1), ("ORDERS", 1, -1), ("ORDERS", 0, 0)]
    finally:
        store.close()


def test_a_numbered_timed_send_is_answered_with_its_real_topic_and_due_time_even_after_a_restart(tmp_path: Path) -> None:
    clock = FakeClock()
    due = _now_ms(clock) + 60_000

    def broker() -> tuple[MessageStore, TransactionCoordinator]:
        store = _store(tmp_path, clock)
        delivery = DeliveryService(store, DeliveryPolicy(), clock=clock, key=b"k" * 32)
        return store, TransactionCoordinator(store, delivery, _durable, limits=TxnLimits(), clock=clock)

    store, txns = broker()
    pid = asyncio.run(txns.ids.new_producer_id("order")).producer_id
    txn = txns.ids.sender(pid, 0, "order")
    [item] = route_all(store, [PutItem("ORDERS", 1, b"t", {"UNIQ_KEY": "t1", TIMER_DELIVER_MS: str(due)})], _now_ms(clock), None)
    results, _ = store.put([item, txns.ids.send_record(txn, 0, [item])])
    key = SendKey(SendKind.MESSAGES, "", "ORDERS")
    txns.ids.sent(txn, 0, SentRef(SendKind.MESSAGES, results[0].commit_log_offset, 1))
    assert txns.ids.sent_before(txn, 0, key) == sent_messages(results[:1])  # read back from the log, as first answered
    store.close()
    store, txns = broker()
    try:
        [answer] = txns.ids.sent_before(txns.ids.sender(pid, 0, "order"), 0, key)  # read back from the log
        assert (answer.topic, answer.queue_id, answer.queue_offset, answer.deliver_at_ms) == ("ORDERS", 1, -1, due)
    finally:
        store.close()

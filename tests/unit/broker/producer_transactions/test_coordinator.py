"""The TransactionCoordinator on a real store and a real DeliveryService, with a fake clock; restarts reopen the data dir."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.idempotence.principal_caps import PrincipalCaps
from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator, TxnLimits
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.topics import TXN_STATE_TOPIC
from halfmq.errors import (
    InvalidProducerEpoch,
    InvalidTxnState,
    OutOfOrderSequence,
    ProducerFenced,
    ReceiptInOtherTransaction,
    ReceiptNotHeld,
    TransactionAborted,
    TransactionTooLarge,
    UnknownTransactionalId,
)

from ..half_messages.fakes import FakeClock

KEY = b"k" * 32
OWNER = "order"  # the principal every producer id of these tests is handed to


async def _durable(offset: int) -> None:
    return None


class Broker:
    def __init__(self, path: Path, clock: FakeClock, limits: TxnLimits | None = None, caps: PrincipalCaps | None = None,
                 send_window: int = 1024) -> None:
        self.store = MessageStore(StoreConfig(path), clock=clock)
        self.store.create_topic("IN", 1)
        self.store.create_topic("OUT", 2)
        self.delivery = DeliveryService(self.store, DeliveryPolicy(), clock=clock, key=KEY)
        self.txns = TransactionCoordinator(self.store, self.delivery, _durable, limits=limits or TxnLimits(), clock=clock,
                                           producer_caps=caps, send_window=send_window)
        self.ids = self.txns.ids  # the idempotent producer's ids: the coordinator replays them in its one scan

    def item(self, body: str, queue: int = 0) -> PutItem:
        return PutItem("OUT", queue, body.encode(), {"UNIQ_KEY": body})

    def visible(self) -> list[str]:
        return sorted(m.body.decode() for q in range(2) for m in self.store.reads.read_queue("OUT", q, 0, 10_000))

    def receive(self, n: int = 10) -> list:
        return asyncio.run(self.delivery.receive("g", "IN", n, 30, 0))

    def close(self) -> None:
        self.store.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def broker(tmp_path: Path, clock: FakeClock):
    b = Broker(tmp_path, clock)
    yield b
    b.close()


def run(coro):
    return asyncio.run(coro)


def init(b: Broker, tid: str = "t1", timeout_ms: int | None = None) -> tuple[int, int]:
    answer = run(b.txns.init(tid, timeout_ms, OWNER))
    return answer.producer_id, answer.epoch


def test_a_commit_makes_every_message_visible_at_once_and_only_then(broker: Broker) -> None:
    pid, epoch = init(broker)
    broker.txns.begin("t1", pid, epoch, 0)
    broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a"), broker.item("b", 1)], [])
    broker.txns.add_messages("t1", pid, epoch, 2, [broker.item("c")], [])
    assert broker.visible() == []
    answer = run(broker.txns.commit("t1", pid, epoch))
    assert broker.visible() == ["a", "b", "c"]
    assert answer.state == "COMPLETE_COMMIT" and answer.messages == 3 and not answer.duplicate
    again = run(broker.txns.commit("t1", pid, epoch))
    assert again.duplicate and again.results == answer.results
    assert broker.visible() == ["a", "b", "c"]


def test_an_abort_shows_nothing_and_commit_after_it_is_refused(broker: Broker) -> None:
    pid, epoch = init(broker)
    broker.txns.begin("t1", pid, epoch, 0)
    broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a")], [])
    run(broker.txns.abort("t1", pid, epoch))
    with pytest.raises(TransactionAborted):
        run(broker.txns.commit("t1", pid, epoch))
    assert broker.visible() == []


def test_a_second_init_fences_the_first_instance_and_aborts_its_transaction(broker: Broker) -> None:
    pid, old = init(broker)
    broker.txns.begin("t1", pid, old, 0)
    broker.txns.add_messages("t1", pid, old, 1, [broker.item("zombie")], [])
    pid2, new = init(broker)
    assert (pid2, new) == (pid, old + 1)
    for request in (lambda: run(broker.txns.commit("t1", pid, old)),
                    lambda: broker.txns.add_messages("t1", pid, old, 2, [broker.item("z2")], []),
                    lambda: broker.txns.begin("t1", pid, old, 0)):
        with pytest.raises(ProducerFenced):
            request()
    assert broker.visible() == []
    assert broker.txns.get("t1").state.value == "EMPTY"


def test_unknown_ids_foreign_producer_ids_and_unissued_epochs_are_refused(broker: Broker) -> None:
    with pytest.raises(UnknownTransactionalId):
        broker.txns.begin("nope", 1, 0, 0)
    pid, epoch = init(broker)
    with pytest.raises(InvalidProducerEpoch):
        broker.txns.begin("t1", pid + 1, epoch, 0)
    with pytest.raises(InvalidProducerEpoch):
        broker.txns.begin("t1", pid, epoch + 1, 0)
    with pytest.raises(InvalidTxnState):
        run(broker.txns.commit("t1", pid, epoch))  # commit without begin
    with pytest.raises(InvalidTxnState):
        broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a")], [])


def test_a_retried_request_gets_the_stored_answer_and_a_gap_is_out_of_order(broker: Broker) -> None:
    pid, epoch = init(broker)
    first_begin = broker.txns.begin("t1", pid, epoch, 0)
    assert broker.txns.begin("t1", pid, epoch, 0).transaction == first_begin.transaction
    first = broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a")], [])
    again = broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a")], [])
    assert again.duplicate and again.results == first.results
    with pytest.raises(OutOfOrderSequence) as info:
        broker.txns.add_messages("t1", pid, epoch, 3, [broker.item("c")], [])
    assert info.value.extra["expected"] == 2
    run(broker.txns.commit("t1", pid, epoch))
    assert broker.visible() == ["a"]


def test_an_oversized_transaction_is_refused_and_keeps_what_it_had(tmp_path: Path, clock: FakeClock) -> None:
    b = Broker(tmp_path, clock, TxnLimits(max_messages=2))
    try:
        pid, epoch = init(b)
        b.txns.begin("t1", pid, epoch, 0)
        b.txns.add_messages("t1", pid, epoch, 1, [b.item("a")], [])
        with pytest.raises(TransactionTooLarge):
            b.txns.add_messages("t1", pid, epoch, 2, [b.item("b"), b.item("c")], [])
        b.txns.add_messages("t1", pid, epoch, 2, [b.item("b")], [])
        run(b.txns.commit("t1", pid, epoch))
        assert b.visible() == ["a", "b"]
    finally:
        b.close()


def test_acks_are_held_while_open_applied_on_commit_and_given_back_on_abort(broker: Broker, clock: FakeClock) -> None:
    broker.store.put([PutItem("IN", 0, f"m{i}".encode(), {"UNIQ_KEY": f"m{i}"}) for i in range(4)])
    got = broker.receive(2)
    receipts = broker.delivery.parse_receipts([d.receipt_handle for d in got])
    pid, epoch = init(broker)
    broker.txns.begin("t1", pid, epoch, 0)
    broker.txns.add_acks("t1", pid, epoch, 1, receipts)
    clock.advance(60)  # past the invisibility: still held by the open transaction
    assert [d.message.body for d in broker.receive()] == [b"m2", b"m3"]
    run(broker.txns.commit("t1", pid, epoch))
    assert broker.store.offsets.get("g", "IN", 0) == 2

    clock.advance(60)
    again = broker.receive()  # m2 and m3 are due again
    assert sorted(d.message.body for d in again) == [b"m2", b"m3"]
    broker.txns.begin("t1", pid, epoch, 0)
    broker.txns.add_acks("t1", pid, epoch, 1, broker.delivery.parse_receipts([d.receipt_handle for d in again]))
    run(broker.txns.abort("t1", pid, epoch))
    assert sorted(d.message.body for d in broker.receive()) == [b"m2", b"m3"]  # deliverable again at once


def test_consumed_offsets_move_at_the_commit_never_at_an_abort_and_again_after_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    b = Broker(tmp_path, clock)
    b.store.put([PutItem("IN", 0, f"m{i}".encode(), {"UNIQ_KEY": f"m{i}"}) for i in range(4)])
    pid, epoch = init(b)
    b.txns.begin("t1", pid, epoch, 0)
    b.txns.add_acks("t1", pid, epoch, 1, [], [("kgroup", "IN", 0, 1)])
    b.txns.add_acks("t1", pid, epoch, 2, [], [("kgroup", "IN", 0, 3)])  # a later offset of the same queue replaces it
    assert b.store.offsets.get("kgroup", "IN", 0) is None  # held until the commit
    run(b.txns.commit("t1", pid, epoch))
    assert b.store.offsets.get("kgroup", "IN", 0) == 3
    b.txns.begin("t1", pid, epoch, 0)
    b.txns.add_acks("t1", pid, epoch, 1, [], [("kgroup", "IN", 0, 4)])
    run(b.txns.abort("t1", pid, epoch))
    assert b.store.offsets.get("kgroup", "IN", 0) == 3
    b.store.offsets.drop_group("kgroup")  # as if the offsets file had not caught up before a crash
    b.close()
    again = Broker(tmp_path, clock)
    try:
        assert again.store.offsets.get("kgroup", "IN", 0) == 3  # the commit record's offsets, replayed
    finally:
        again.close()


def test_consumed_offsets_count_against_the_acks_bound(tmp_path: Path, clock: FakeClock) -> None:
    b = Broker(tmp_path, clock, limits=TxnLimits(max_acks=2))
    try:
        pid, epoch = init(b)
        b.txns.begin("t1", pid, epoch, 0)
        with pytest.raises(TransactionTooLarge):
            b.txns.add_acks("t1", pid, epoch, 1, [], [("kgroup", "OUT", 0, 1), ("kgroup", "OUT", 1, 1), ("kgroup", "IN", 0, 1)])
        b.txns.add_acks("t1", pid, epoch, 1, [], [("kgroup", "OUT", 0, 1), ("kgroup", "OUT", 1, 1)])
    finally:
        b.close()


def test_an_expired_or_doubly_held_receipt_is_refused_and_nothing_is_held(broker: Broker, clock: FakeClock) -> None:
    broker.store.put([PutItem("IN", 0, b"m0", {"UNIQ_KEY": "m0"}), PutItem("IN", 0, b"m1", {"UNIQ_KEY": "m1"})])
    got = broker.receive(2)
    receipts = broker.delivery.parse_receipts([d.receipt_handle for d in got])
    broker.delivery.ack("g", "IN", [got[0].receipt_handle])
    a = init(broker, "a")
    b = init(broker, "b")
    broker.txns.begin("a", *a, 0)
    broker.txns.begin("b", *b, 0)
    with pytest.raises(ReceiptNotHeld):
        broker.txns.add_acks("a", *a, 1, receipts)
    broker.txns.add_acks("a", *a, 1, receipts[1:])
    with pytest.raises(ReceiptInOtherTransaction):
        broker.txns.add_acks("b", *b, 1, receipts[1:])


def test_the_timeout_aborts_an_open_transaction_and_gives_its_acks_back(broker: Broker, clock: FakeClock) -> None:
    broker.store.put([PutItem("IN", 0, b"m0", {"UNIQ_KEY": "m0"})])
    got = broker.receive()
    pid, epoch = init(broker, timeout_ms=1_000)
    broker.txns.begin("t1", pid, epoch, 0)
    broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a")], [])
    broker.txns.add_acks("t1", pid, epoch, 2, broker.delivery.parse_receipts([got[0].receipt_handle]))
    clock.advance(1.0)
    assert broker.txns.abort_expired() == []
    clock.advance(0.01)
    assert broker.txns.abort_expired() == ["t1"]
    with pytest.raises(TransactionAborted):
        run(broker.txns.commit("t1", pid, epoch))
    assert broker.visible() == []
    assert [d.message.body for d in broker.receive()] == [b"m0"]
    assert broker.txns.view(broker.txns.get("t1")).aborted_by == "timeout"


def test_a_restart_keeps_ids_and_epochs_aborts_the_open_transaction_and_reapplies_committed_acks(tmp_path: Path, clock: FakeClock) -> None:
    b = Broker(tmp_path, clock)
    b.store.put([PutItem("IN", 0, f"m{i}".encode(), {"UNIQ_KEY": f"m{i}"}) for i in range(3)])
    got = b.receive(2)
    pid, epoch = init(b)
    b.txns.begin("t1", pid, epoch, 0)
    b.txns.add_messages("t1", pid, epoch, 1, [b.item("a")], [])
    b.txns.add_acks("t1", pid, epoch, 2, b.delivery.parse_receipts([d.receipt_handle for d in got]))
    run(b.txns.commit("t1", pid, epoch))
    pid2, epoch2 = init(b, "t2")
    b.txns.begin("t2", pid2, epoch2, 0)
    b.txns.add_messages("t2", pid2, epoch2, 1, [b.item("open")], [])
    b.close()
    (tmp_path / "consumer_offsets.json").unlink()  # as if the offsets file had not caught up before a crash

    again = Broker(tmp_path, clock)
    try:
        assert again.store.offsets.get("g", "IN", 0) == 2  # the committed acks, re-applied from the commit record
        assert [d.message.body for d in again.receive()] == [b"m2"]
        t1, t2 = again.txns.get("t1"), again.txns.get("t2")
        assert (t1.state.value, t1.producer_id, t1.epoch) == ("COMPLETE_COMMIT", pid, epoch)
        assert t2.state.value == "COMPLETE_ABORT" and again.txns.view(t2).aborted_by == "recovery"
        with pytest.raises(TransactionAborted):
            run(again.txns.commit("t2", pid2, epoch2))
        assert again.visible() == ["a"]
        assert run(again.txns.init("t3", None, OWNER)).producer_id not in (pid, pid2)  # random, never one in use
        assert again.store.reads.queue_range(TXN_STATE_TOPIC, 0)[1] > 0
    finally:
        again.close()


def test_a_begin_after_an_abort_starts_a_new_transaction_not_a_repeat_of_the_last_begin(broker: Broker) -> None:
    pid, epoch = init(broker)
    first = broker.txns.begin("t1", pid, epoch, 0)
    run(broker.txns.abort("t1", pid, epoch))
    second = broker.txns.begin("t1", pid, epoch, 0)
    assert second.transaction == first.transaction + 1 and not second.duplicate
    broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a")], [])
    run(broker.txns.commit("t1", pid, epoch))
    assert broker.visible() == ["a"]


def test_too_many_acks_in_one_transaction_is_refused_and_none_of_them_is_held(tmp_path: Path, clock: FakeClock) -> None:
    b = Broker(tmp_path, clock, TxnLimits(max_acks=1))
    try:
        b.store.put([PutItem("IN", 0, f"m{i}".encode(), {"UNIQ_KEY": f"m{i}"}) for i in range(2)])
        got = b.receive(2)
        pid, epoch = init(b)
        b.txns.begin("t1", pid, epoch, 0)
        with pytest.raises(TransactionTooLarge):
            b.txns.add_acks("t1", pid, epoch, 1, b.delivery.parse_receipts([d.receipt_handle for d in got]))
        assert b.txns.view(b.txns.get("t1")).open.acks == 0
        b.txns.add_acks("t1", pid, epoch, 1, b.delivery.parse_receipts([got[0].receipt_handle]))
    finally:
        b.close()


def test_a_nack_cannot_free_a_delivery_an_open_transaction_has_acked(broker: Broker, clock: FakeClock) -> None:
    broker.store.put([PutItem("IN", 0, b"m0", {"UNIQ_KEY": "m0"})])
    [got] = broker.receive()
    pid, epoch = init(broker)
    broker.txns.begin("t1", pid, epoch, 0)
    broker.txns.add_acks("t1", pid, epoch, 1, broker.delivery.parse_receipts([got.receipt_handle]))
    assert broker.delivery.nack("g", "IN", [got.receipt_handle]) == [(got.receipt_handle, False)]
    clock.advance(3600)
    assert broker.receive() == []  # still held: redelivering it could copy it twice
    run(broker.txns.commit("t1", pid, epoch))
    assert broker.store.offsets.get("g", "IN", 0) == 1


def test_a_plain_ack_of_a_delivery_an_open_transaction_has_acked_is_refused_and_settles_nothing(broker: Broker) -> None:
    broker.store.put([PutItem("IN", 0, f"m{i}".encode(), {"UNIQ_KEY": f"m{i}"}) for i in range(2)])
    held, free = broker.receive()
    pid, epoch = init(broker)
    broker.txns.begin("t1", pid, epoch, 0)
    broker.txns.add_acks("t1", pid, epoch, 1, broker.delivery.parse_receipts([held.receipt_handle]))
    with pytest.raises(ReceiptInOtherTransaction):
        broker.delivery.ack("g", "IN", [free.receipt_handle, held.receipt_handle])
    with pytest.raises(ReceiptInOtherTransaction):
        broker.delivery.dead_letter("g", "IN", held.receipt_handle)
    run(broker.txns.abort("t1", pid, epoch))
    assert sorted(d.message.body for d in broker.receive()) == [b"m0"]  # the abort gave it back: nothing had settled it
    assert broker.store.offsets.get("g", "IN", 0) is None  # nothing was committed for the group
    assert broker.delivery.ack("g", "IN", [free.receipt_handle]) == [(free.receipt_handle, True)]


def test_a_transactions_bytes_count_multi_byte_text_in_bytes_not_characters(tmp_path: Path, clock: FakeClock) -> None:
    b = Broker(tmp_path, clock, TxnLimits(max_bytes=4096))
    try:
        pid, epoch = init(b)
        b.txns.begin("t1", pid, epoch, 0)
        emoji = PutItem("OUT", 0, b"x", {"UNIQ_KEY": "m1", "note": "\N{GRINNING FACE}" * 1010})  # 1,010 characters, 4,040 bytes
        with pytest.raises(TransactionTooLarge):
            b.txns.add_messages("t1", pid, epoch, 1, [emoji], [])
        assert b.txns.held.total == 0  # nothing held for it
        b.txns.add_messages("t1", pid, epoch, 1, [PutItem("OUT", 0, b"x", {"UNIQ_KEY": "m1", "note": "\N{GRINNING FACE}" * 900})], [])
        assert 3600 < b.txns.held.total <= 4096  # what is held is counted in bytes too (PRODUCER_TXN_MAX_OPEN_BYTES)
    finally:
        b.close()

"""ProducerTransactions on a real store and a real DeliveryService, with a fake clock; restarts reopen the data dir."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.producer_transactions.producer_transactions import ProducerTransactions, TxnLimits
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
    def __init__(self, path: Path, clock: FakeClock, limits: TxnLimits | None = None) -> None:
        self.store = MessageStore(StoreConfig(path), clock=clock)
        self.store.create_topic("IN", 1)
        self.store.create_topic("OUT", 2)
        self.delivery = DeliveryService(self.store, DeliveryPolicy(), clock=clock, key=KEY)
        self.txns = ProducerTransactions(self.store, self.delivery, _durable, limits=limits or TxnLimits(), clock=clock)

    def item(self, body: str, queue: int = 0) -> PutItem:
        return PutItem("OUT", queue, body.encode(), {"UNIQ_KEY": body})

    def visible(self) -> list[str]:
        return sorted(m.body.decode() for q in range(2) for m in self.store.read_queue("OUT", q, 0, 10_000))

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
    return answer["producer_id"], answer["epoch"]


def test_a_commit_makes_every_message_visible_at_once_and_only_then(broker: Broker) -> None:
    pid, epoch = init(broker)
    broker.txns.begin("t1", pid, epoch, 0)
    broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a"), broker.item("b", 1)], [])
    broker.txns.add_messages("t1", pid, epoch, 2, [broker.item("c")], [])
    assert broker.visible() == []
    answer = run(broker.txns.commit("t1", pid, epoch))
    assert broker.visible() == ["a", "b", "c"]
    assert answer["state"] == "COMPLETE_COMMIT" and answer["messages"] == 3 and not answer["duplicate"]
    again = run(broker.txns.commit("t1", pid, epoch))
    assert again["duplicate"] and again["results"] == answer["results"]
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
    assert broker.txns.begin("t1", pid, epoch, 0)["transaction"] == first_begin["transaction"]
    first = broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a")], [])
    again = broker.txns.add_messages("t1", pid, epoch, 1, [broker.item("a")], [])
    assert again["duplicate"] and again["results"] == first["results"]
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
    assert broker.txns.view(broker.txns.get("t1"))["aborted_by"] == "timeout"


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
        assert t2.state.value == "COMPLETE_ABORT" and again.txns.view(t2)["aborted_by"] == "recovery"
        with pytest.raises(TransactionAborted):
            run(again.txns.commit("t2", pid2, epoch2))
        assert again.visible() == ["a"]
        assert run(again.txns.init("t3", None, OWNER))["producer_id"] not in (pid, pid2)  # random, never one in use
        assert again.store.queue_range(TXN_STATE_TOPIC, 0)[1] > 0
    finally:
        again.close()


def test_a_begin_after_an_abort_starts_a_new_transaction_not_a_repeat_of_the_last_begin(broker: Broker) -> None:
    pid, epoch = init(broker)
    first = broker.txns.begin("t1", pid, epoch, 0)
    run(broker.txns.abort("t1", pid, epoch))
    second = broker.txns.begin("t1", pid, epoch, 0)
    assert second["transaction"] == first["transaction"] + 1 and "duplicate" not in second
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
        assert b.txns.view(b.txns.get("t1"))["open"]["acks"] == 0
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


# --- producer ids without a transactional id ------------------------------------------------------

def _numbered_send(b: Broker, txn, sequence: int, body: str) -> None:
    item = b.item(body)
    b.store.put([item, b.txns.send_record(txn, sequence, [item])])
    b.txns.sent(txn, sequence, ("messages", "", "OUT"), [{"body": body}])


def test_a_producer_id_idle_past_its_expiry_is_forgotten_and_a_used_one_is_kept(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.errors import UnknownProducerId

    b = Broker(tmp_path, clock)
    b.txns.producer_id_expiry_ms = 10_000
    idle, busy = run(b.txns.new_producer_id(OWNER)), run(b.txns.new_producer_id(OWNER))
    for second in range(12):
        clock.advance(1)
        _numbered_send(b, b.txns.sender(busy["producer_id"], 0, OWNER), second, f"busy {second}")
    assert b.txns.expire_idle_producers() == 1
    with pytest.raises(UnknownProducerId):
        b.txns.sender(idle["producer_id"], 0, OWNER)
    b.txns.sender(busy["producer_id"], 0, OWNER)
    b.close()


def test_a_restart_rebuilds_a_producer_ids_window_and_its_idle_time_from_the_log(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.broker.idempotence.send_window import Verdict
    from halfmq.errors import UnknownProducerId

    b = Broker(tmp_path, clock)
    ids = run(b.txns.new_producer_id(OWNER))
    txn = b.txns.sender(ids["producer_id"], 0, OWNER)
    for sequence in (1, 0, 3):  # 2 never arrived
        _numbered_send(b, txn, sequence, f"m{sequence}")
    b.close()
    clock.advance(3600)
    again = Broker(tmp_path, clock)
    txn = again.txns.sender(ids["producer_id"], 0, OWNER)
    assert (txn.sends.high, sorted(txn.sends.answers)) == (1, [0, 1, 3])
    assert txn.sends.decide(2) is Verdict.STORE and txn.sends.decide(3) is Verdict.REPEAT
    assert run(again.txns.new_producer_id(OWNER))["producer_id"] != ids["producer_id"]  # ids are never handed out twice
    again.close()
    clock.advance(25 * 3600)  # past a day without a send: gone after the next restart too
    third = Broker(tmp_path, clock)
    with pytest.raises(UnknownProducerId):
        third.txns.sender(ids["producer_id"], 0, OWNER)
    third.close()


def test_a_producer_id_is_random_and_only_its_owner_numbers_sends_with_it_even_after_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.errors import ProducerIdNotOwned

    b = Broker(tmp_path, clock)
    ids = [run(b.txns.new_producer_id(OWNER))["producer_id"] for _ in range(3)]
    tid_pid, _ = init(b, "t1")
    assert len({*ids, tid_pid}) == 4 and all(0 < pid < 2**63 for pid in ids) and max(ids) > 2**32
    for pid in (ids[0], tid_pid):
        with pytest.raises(ProducerIdNotOwned):
            b.txns.sender(pid, 0, "mallory")
        assert b.txns.sender(pid, 0, OWNER).producer_id == pid
    b.close()
    again = Broker(tmp_path, clock)
    for pid in (ids[0], tid_pid):
        with pytest.raises(ProducerIdNotOwned):
            again.txns.sender(pid, 0, "mallory")
        again.txns.sender(pid, 0, OWNER)
    again.txns.check_acting("t1", OWNER)
    with pytest.raises(ProducerIdNotOwned):
        again.txns.check_acting("t1", "mallory")  # the steps of t1's transactions too
    again.txns.check_acting("no-such-tid", "mallory")  # unknown: the step itself answers UNKNOWN_TRANSACTIONAL_ID
    run(again.txns.init("t1", None, "mallory"))  # a principal allowed on the transactional id initialises it anew
    with pytest.raises(ProducerIdNotOwned):
        again.txns.sender(tid_pid, 1, OWNER)  # the id is now the new instance's (the old epoch is fenced anyway)
    with pytest.raises(ProducerIdNotOwned):
        again.txns.check_acting("t1", OWNER)
    again.txns.sender(tid_pid, 1, "mallory")
    again.close()


def test_a_producer_id_handed_out_before_ids_were_bound_is_unknown_so_the_sdk_takes_a_new_one(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.broker.producer_transactions import producer_records as rec
    from halfmq.errors import UnknownProducerId

    b = Broker(tmp_path, clock)
    legacy = {rec.TXN_ID: "", rec.TXN_OP: "init", rec.PRODUCER_ID: "7", rec.EPOCH: "0", rec.TXN_NO: "0", rec.TIMEOUT_MS: "0"}
    b.store.put([PutItem(TXN_STATE_TOPIC, 0, b"", legacy), PutItem(TXN_STATE_TOPIC, 0, b"", {**legacy, rec.TXN_ID: "t1",
                                                                                             rec.PRODUCER_ID: "8"})])
    b.close()  # what an older broker wrote: no OWNER
    again = Broker(tmp_path, clock)
    for principal in (OWNER, "anonymous"):
        for pid in (7, 8):
            with pytest.raises(UnknownProducerId):
                again.txns.sender(pid, 0, principal)
        again.txns.check_acting("t1", principal)  # its steps are the transactional-id policy's to allow
    run(again.txns.init("t1", None, OWNER))  # the next init binds it
    again.txns.sender(8, 1, OWNER)
    again.close()


def test_a_number_is_answered_from_the_window_only_for_the_same_request_even_after_a_restart(tmp_path: Path, clock: FakeClock) -> None:
    from halfmq.errors import SequenceNumberReused

    b = Broker(tmp_path, clock)
    pid = run(b.txns.new_producer_id(OWNER))["producer_id"]
    txn = b.txns.sender(pid, 0, OWNER)
    _numbered_send(b, txn, 0, "m0")  # a plain send to OUT
    plain, half = ("messages", "", "OUT"), ("half", "pg", "OUT")
    assert b.txns.sent_before(txn, 0, plain) == [{"body": "m0"}]
    for other in (half, ("messages", "", "IN")):
        with pytest.raises(SequenceNumberReused):
            b.txns.sent_before(txn, 0, other)
    assert b.txns.sent_before(txn, 1, half) is None  # a new number: store it
    b.close()
    again = Broker(tmp_path, clock)
    txn = again.txns.sender(pid, 0, OWNER)
    for other in (half, ("messages", "", "IN")):  # the key is read back from the stored messages
        with pytest.raises(SequenceNumberReused):
            again.txns.sent_before(txn, 0, other)
    assert [r["msg_id"] for r in again.txns.sent_before(txn, 0, plain)] == ["m0"]
    again.close()

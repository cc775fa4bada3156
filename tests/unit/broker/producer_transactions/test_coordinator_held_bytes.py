"""The TransactionCoordinator keeps open transactions' bytes under the broker's and each principal's cap, on a real store.

Each end of a transaction (commit, abort, timeout, a new epoch, recovery after a restart) gives its bytes back;
a refused request keeps nothing, creates no topic and does not use up its sequence number.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator, TxnLimits
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.topics import TopicConfig
from halfmq.errors import OpenTransactionsFull

from ..half_messages.fakes import FakeClock

BODY = 1000  # each message's body; it holds a little more (header, topic, properties), under SIZE
SIZE = 1100
LIMITS = TxnLimits(max_open_bytes=5 * SIZE, max_open_bytes_per_principal=2 * SIZE + SIZE // 2)
OWNER = "anonymous"  # who obtained the transactional ids (the binding of issue 30 item 1); the caps count by the acting principal


async def _durable(offset: int) -> None:
    return None


def run(coro):
    return asyncio.run(coro)


class Broker:
    def __init__(self, path: Path, clock: FakeClock) -> None:
        self.path, self.clock = path, clock
        self.open()

    def open(self) -> None:
        self.store = MessageStore(StoreConfig(self.path), clock=self.clock)
        self.store.create_topic("OUT", 1)
        delivery = DeliveryService(self.store, DeliveryPolicy(), clock=self.clock, key=b"k" * 32)
        self.txns = TransactionCoordinator(self.store, delivery, _durable, limits=LIMITS, clock=self.clock)

    def restart(self) -> None:
        self.store.close()
        self.open()

    def begin(self, tid: str, timeout_ms: int | None = None) -> tuple[int, int]:
        answer = run(self.txns.init(tid, timeout_ms, OWNER))
        pid, epoch = answer.producer_id, answer.epoch
        self.txns.begin(tid, pid, epoch, 0)
        return pid, epoch

    def add(self, tid: str, pid: int, epoch: int, sequence: int, principal: str | None = None, topic: str = "OUT",
            missing: list[TopicConfig] | None = None) -> dict:
        item = PutItem(topic, 0, b"x" * BODY, {"UNIQ_KEY": f"{tid}-{sequence}"})
        return self.txns.add_messages(tid, pid, epoch, sequence, [item], missing or [], principal=principal)


@pytest.fixture
def broker(tmp_path: Path):
    b = Broker(tmp_path, FakeClock())
    yield b
    b.store.close()


def test_open_transactions_fill_the_broker_cap_and_the_next_request_is_refused_keeping_nothing(broker: Broker) -> None:
    opened = [(tid, *broker.begin(tid)) for tid in ("a", "b", "c", "d", "e")]
    for tid, pid, epoch in opened[:4]:
        broker.add(tid, pid, epoch, 1)
    held = broker.txns.held.total
    tid, pid, epoch = opened[4]
    broker.add(tid, pid, epoch, 1)  # the fifth still fits under the cap
    with pytest.raises(OpenTransactionsFull) as info:
        broker.add(tid, pid, epoch, 2, topic="NEW", missing=[TopicConfig("NEW", 1, 0)])
    assert info.value.extra["scope"] == "broker" and broker.txns.held.total > held
    assert broker.store.topic("NEW") is None and broker.txns.view(broker.txns.get("e")).open.messages == 1
    run(broker.txns.abort("a", opened[0][1], opened[0][2]))
    broker.add(tid, pid, epoch, 2, topic="NEW", missing=[TopicConfig("NEW", 1, 0)])  # the same number: it was not used up
    assert run(broker.txns.commit("e", pid, epoch)).messages == 2


def test_one_principal_at_its_cap_is_refused_while_another_still_sends(broker: Broker) -> None:
    mine = [(tid, *broker.begin(tid)) for tid in ("m1", "m2", "m3")]
    for tid, pid, epoch in mine[:2]:
        broker.add(tid, pid, epoch, 1, principal="mallory")
    tid, pid, epoch = mine[2]
    with pytest.raises(OpenTransactionsFull) as info:
        broker.add(tid, pid, epoch, 1, principal="mallory")
    assert info.value.extra["scope"] == "principal"
    other = broker.begin("o1")
    broker.add("o1", *other, 1, principal="order")
    broker.add("o1", *other, 2, principal="order")
    assert broker.txns.held.of("order") == broker.txns.held.of("mallory")


def test_commit_abort_timeout_and_a_new_epoch_each_give_the_bytes_back(broker: Broker) -> None:
    committed, aborted, timed_out, fenced = (broker.begin(t, timeout_ms=1000) for t in ("c", "a", "t", "f"))
    for tid, (pid, epoch) in zip("catf", (committed, aborted, timed_out, fenced), strict=True):
        broker.add(tid, pid, epoch, 1, principal=tid)
    full = broker.txns.held.total
    run(broker.txns.commit("c", *committed))
    assert broker.txns.held.total == full * 3 // 4
    run(broker.txns.abort("a", *aborted))
    assert broker.txns.held.total == full // 2
    run(broker.txns.init("f", None, OWNER))  # a new instance fences the old one and aborts its transaction
    assert broker.txns.held.total == full // 4
    broker.clock.advance(2)
    assert broker.txns.abort_expired() == ["t"]
    assert broker.txns.held.total == 0 and [broker.txns.held.of(p) for p in "catf"] == [0, 0, 0, 0]


def test_after_a_restart_nothing_is_held_and_the_whole_cap_is_free_again(broker: Broker) -> None:
    for tid in ("a", "b", "c"):
        broker.add(tid, *broker.begin(tid), 1)
    assert broker.txns.held.total > 0
    broker.restart()  # recovery aborts what was open: nothing of it is in memory any more
    assert broker.txns.held.total == 0
    for tid in ("a", "b", "c", "d", "e"):
        broker.add(tid, *broker.begin(tid), 1)
    assert [t.state.value for t in broker.txns.all()] == ["ONGOING"] * 5

"""A replay from the state snapshot (store.state_snapshot, snapshot_state) rebuilds what a replay from the first entry of
HALFMQ_TXN_STATE rebuilds, reading only the records after the snapshot; a damaged, missing or foreign snapshot falls
back to the full scan; transactional ids idle past their expiry are forgotten for good."""

from __future__ import annotations

import asyncio
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.half_messages.producer_registry import ProducerRegistry
from halfmq.broker.idempotence.producer_ids import SendKey, SentMessage, SentRef
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.producer_transactions import snapshot_state
from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator
from halfmq.broker.producer_transactions.producer_state_machine import ProducerTxnState
from halfmq.broker.store import state_snapshot
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.topics import TXN_STATE_TOPIC
from halfmq.errors import UnknownProducerId

from ..half_messages.fakes import FakeClock

OWNER = "order"
TO_OUT = SendKey(SendKind.MESSAGES, "", "OUT")
KEY = b"k" * 32
WEEK_MS = 7 * 24 * 3600 * 1000


async def _durable(offset: int) -> None:
    return None


@dataclass
class Node:
    """What the runtime builds over a data dir for the replay (broker/runtime/services.py), on a fake clock."""

    store: MessageStore
    delivery: DeliveryService
    registry: ProducerRegistry
    txns: TransactionCoordinator

    @classmethod
    def open(cls, path: Path, clock: FakeClock) -> Node:
        store = MessageStore(StoreConfig(path), clock=clock)
        store.log_topics()
        delivery = DeliveryService(store, DeliveryPolicy(), clock=clock, key=KEY)
        registry = ProducerRegistry(None, expiry=3600, clock=clock, store=store)
        return cls(store, delivery, registry, TransactionCoordinator(store, delivery, _durable, clock=clock, producers=registry))

    def numbered_send(self, producer_id: int, epoch: int, sequence: int, body: str) -> None:
        """What the send use case does: ask the window, write the message and its send record, remember where they are."""
        producer = self.txns.ids.sender(producer_id, epoch, OWNER)
        assert self.txns.ids.sent_before(producer, sequence, TO_OUT) is None
        item = PutItem("OUT", 0, body.encode(), {"UNIQ_KEY": body})
        results, _ = self.store.put([item, self.txns.ids.send_record(producer, sequence, [item])])
        self.txns.ids.sent(producer, sequence, SentRef(SendKind.MESSAGES, results[0].commit_log_offset, 1))

    def snapshot(self) -> state_snapshot.StateSnapshot:
        """The snapshot the runtime takes between two requests, written at once."""
        taken = state_snapshot.take(self.store, self.delivery.settled(), snapshot_state.state_of(self.txns, self.delivery))
        state_snapshot.save(state_snapshot.path_of(self.store), taken)
        return taken

    def state(self) -> tuple[bytes, list]:
        """Everything the replay rebuilt, comparable: what a snapshot would hold, and the settled offsets."""
        return orjson.dumps(snapshot_state.state_of(self.txns, self.delivery), default=list), sorted(self.delivery.settled())

    def entries(self) -> int:
        return self.store.reads.queue_range(TXN_STATE_TOPIC, 0)[1]

    def close(self) -> None:
        self.store.close()


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def _transaction(node: Node, tid: str, end: str) -> None:
    answer = run(node.txns.init(tid, None, OWNER))
    node.txns.begin(tid, answer.producer_id, answer.epoch, 0)
    node.txns.add_messages(tid, answer.producer_id, answer.epoch, 1, [PutItem("OUT", 1, tid.encode(), {"UNIQ_KEY": tid})], [])
    if end == "commit":
        run(node.txns.commit(tid, answer.producer_id, answer.epoch))
    elif end == "abort":
        run(node.txns.abort(tid, answer.producer_id, answer.epoch))


def _history(node: Node, clock: FakeClock, part: int) -> None:
    """Producers obtained alone with out-of-order numbered sends, transactions ended every way, registrations, acks."""
    alone = run(node.txns.ids.new_producer_id(OWNER))
    for sequence in (0, 2, 1, 4):  # 3 never arrived: a gap
        clock.advance(1)
        node.numbered_send(alone.producer_id, 0, sequence, f"p{part}-{sequence}")
    _transaction(node, f"committed-{part}", "commit")
    _transaction(node, f"aborted-{part}", "abort")
    _transaction(node, f"open-{part}", "open")
    node.registry.heartbeat(f"group-{part}", "client", f"http://127.0.0.1:9/check/{part}", "127.0.0.1")
    node.store.put([PutItem("IN", 0, f"in-{part}-{i}".encode()) for i in range(4)])
    got = run(node.delivery.receive("g", "IN", 4, 600, 0))
    node.delivery.ack("g", "IN", [d.receipt_handle for d in got if not d.message.body.endswith(b"-0")])  # a gap
    node.store.create_topic(f"T{part}", 3)


def _two_data_dirs(tmp_path: Path, clock: FakeClock) -> tuple[Path, Path, int]:
    """A data dir with a snapshot half way through its history, and a copy of it without one; the entries it counts."""
    with_snapshot, without = tmp_path / "with", tmp_path / "without"
    node = Node.open(with_snapshot, clock)
    node.store.create_topic("IN", 1)
    node.store.create_topic("OUT", 2)
    _history(node, clock, 1)
    counted = node.snapshot().entries
    _history(node, clock, 2)
    node.close()
    shutil.copytree(with_snapshot, without)
    (without / state_snapshot.FILE).unlink()
    return with_snapshot, without, counted


def test_a_replay_from_the_snapshot_rebuilds_what_a_replay_from_the_first_entry_rebuilds_reading_only_the_tail(
        tmp_path: Path) -> None:
    clock = FakeClock()
    with_snapshot, without, counted = _two_data_dirs(tmp_path, clock)
    full = Node.open(without, clock)
    from_snapshot = Node.open(with_snapshot, clock)
    try:
        assert full.txns.replayed.snapshot_entries == 0
        assert from_snapshot.txns.replayed.snapshot_entries == counted
        # every entry after the snapshot's (the full scan's less the counted ones), not one before it
        assert from_snapshot.txns.replayed.records_read == full.txns.replayed.records_read - counted
        assert from_snapshot.state() == full.state()
        for tid in ("open-1", "open-2"):  # what was open is aborted, as ever
            assert from_snapshot.txns.get(tid).state is ProducerTxnState.COMPLETE_ABORT
        assert from_snapshot.txns.get("committed-1").state is ProducerTxnState.COMPLETE_COMMIT
        assert {g for g, *_ in from_snapshot.registry.registrations()} == {"group-1", "group-2"}
        assert from_snapshot.store.topic("T1") is not None and from_snapshot.delivery.logged_receipt_key == KEY
    finally:
        full.close()
        from_snapshot.close()


def test_a_numbered_send_before_the_snapshot_is_still_answered_as_a_duplicate_after_a_restart(tmp_path: Path) -> None:
    clock = FakeClock()
    node = Node.open(tmp_path, clock)
    node.store.create_topic("OUT", 2)
    alone = run(node.txns.ids.new_producer_id(OWNER))
    for sequence in range(5):
        node.numbered_send(alone.producer_id, 0, sequence, f"m{sequence}")
    node.snapshot()
    node.close()
    node = Node.open(tmp_path, clock)
    try:
        assert node.txns.replayed.records_read == 0
        producer = node.txns.ids.sender(alone.producer_id, 0, OWNER)
        answer = node.txns.ids.sent_before(producer, 3, TO_OUT)
        assert isinstance(answer, list) and isinstance(answer[0], SentMessage) and answer[0].msg_id == "m3"
        assert producer.sends.next_expected == 5
    finally:
        node.close()


def _tamper_state(path: Path) -> None:
    """Change what the snapshot says (an epoch), its header left as it was: only its CRC tells."""
    head, _, body = path.read_bytes().partition(b"\n")
    raw = orjson.loads(body)
    raw["state"]["txns"][0][2] += 7
    path.write_bytes(head + b"\n" + orjson.dumps(raw)[:len(body)].ljust(len(body)))


def _not_json(path: Path) -> None:
    """A body that is not JSON, under a header whose length and CRC are its own."""
    head, _, _ = path.read_bytes().partition(b"\n")
    body = b"{not json"
    parts = head.split(b" ")
    parts[1], parts[2] = b"%08x" % zlib.crc32(body), str(len(body)).encode()
    path.write_bytes(b" ".join(parts) + b"\n" + body)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _not_a_snapshot(path: Path) -> None:
    path.write_bytes(b'{"entries": 5}')


@pytest.mark.parametrize("damage", [_tamper_state, _not_json, _truncated, _not_a_snapshot],
                         ids=["bad CRC", "bad JSON", "truncated", "no header"])
def test_a_damaged_snapshot_falls_back_to_a_replay_from_the_first_entry(
        tmp_path: Path, damage: Callable[[Path], None]) -> None:
    clock = FakeClock()
    with_snapshot, without, _ = _two_data_dirs(tmp_path, clock)
    damage(with_snapshot / state_snapshot.FILE)
    full = Node.open(without, clock)
    damaged = Node.open(with_snapshot, clock)
    try:
        assert damaged.txns.replayed == full.txns.replayed  # every record read, from the first entry
        assert damaged.state() == full.state()
    finally:
        full.close()
        damaged.close()


def test_a_snapshot_that_counts_past_the_logs_end_falls_back_to_a_replay_from_the_first_entry(tmp_path: Path) -> None:
    clock = FakeClock()
    node = Node.open(tmp_path / "live", clock)
    node.store.create_topic("IN", 1)
    node.store.create_topic("OUT", 2)
    _history(node, clock, 1)
    node.store.checkpoint()
    shutil.copytree(tmp_path / "live", tmp_path / "older")  # this log ends here
    _history(node, clock, 2)
    node.snapshot()  # counts what the older log has not got
    node.close()
    shutil.copy(tmp_path / "live" / state_snapshot.FILE, tmp_path / "older" / state_snapshot.FILE)
    shutil.copytree(tmp_path / "older", tmp_path / "without")
    (tmp_path / "without" / state_snapshot.FILE).unlink()
    full, foreign = Node.open(tmp_path / "without", clock), Node.open(tmp_path / "older", clock)
    try:
        assert foreign.txns.replayed == full.txns.replayed and foreign.txns.replayed.snapshot_entries == 0
        assert foreign.state() == full.state()
        with pytest.raises(Exception, match="no producer"):
            foreign.txns.get("committed-2")
    finally:
        full.close()
        foreign.close()


def test_a_damaged_newest_snapshot_falls_back_to_the_previous_one(tmp_path: Path) -> None:
    clock = FakeClock()
    node = Node.open(tmp_path / "live", clock)
    node.store.create_topic("IN", 1)
    node.store.create_topic("OUT", 2)
    _history(node, clock, 1)
    previous = node.snapshot()
    _history(node, clock, 2)
    node.snapshot()
    _history(node, clock, 3)
    node.close()
    shutil.copytree(tmp_path / "live", tmp_path / "without")
    for name in (state_snapshot.FILE, state_snapshot.PREVIOUS):
        (tmp_path / "without" / name).unlink()
    _truncated(tmp_path / "live" / state_snapshot.FILE)
    full, node = Node.open(tmp_path / "without", clock), Node.open(tmp_path / "live", clock)
    try:
        assert node.txns.replayed.snapshot_entries == previous.entries
        assert node.state() == full.state()
    finally:
        full.close()
        node.close()


def test_replay_start_offset_is_where_the_oldest_usable_snapshots_last_counted_entry_starts(tmp_path: Path) -> None:
    clock = FakeClock()
    node = Node.open(tmp_path, clock)
    try:
        node.store.create_topic("IN", 1)
        node.store.create_topic("OUT", 2)
        assert state_snapshot.replay_start_offset(node.store) == 0  # no snapshot: the whole log
        _history(node, clock, 1)
        first = node.snapshot()
        assert state_snapshot.replay_start_offset(node.store) == first.entry_start > 0
        _history(node, clock, 2)
        second = node.snapshot()
        assert second.entry_start > first.entry_start
        assert state_snapshot.replay_start_offset(node.store) == first.entry_start  # the previous one is kept too
        node.snapshot()
        assert state_snapshot.replay_start_offset(node.store) == second.entry_start
    finally:
        node.close()


def test_a_transactional_id_idle_past_its_expiry_is_forgotten_and_comes_back_at_a_new_producer_id(tmp_path: Path) -> None:
    clock = FakeClock()
    node = Node.open(tmp_path, clock)
    node.store.create_topic("OUT", 2)
    _transaction(node, "idle", "commit")
    _transaction(node, "open", "open")
    old = node.txns.get("idle")
    clock.advance(WEEK_MS / 1000 - 1)
    assert node.txns.expire_idle_transactional_ids() == []
    clock.advance(2)
    assert node.txns.expire_idle_transactional_ids() == ["idle"]  # the open one is never forgotten this way
    with pytest.raises(UnknownProducerId):
        node.txns.ids.sender(old.producer_id, old.epoch, OWNER)
    assert "idle" not in {t[0] for t in snapshot_state.state_of(node.txns, node.delivery)["txns"]}
    again = run(node.txns.init("idle", None, OWNER))
    assert again.producer_id != old.producer_id and again.epoch == 0
    node.close()
    for replayed in (Node.open(tmp_path, clock),):  # a full replay (no snapshot) ends the same
        try:
            assert replayed.txns.get("idle").producer_id == again.producer_id
            with pytest.raises(UnknownProducerId):
                replayed.txns.ids.sender(old.producer_id, old.epoch, OWNER)
        finally:
            replayed.close()


def test_a_transactional_id_expired_while_the_broker_was_down_is_not_rebuilt(tmp_path: Path) -> None:
    clock = FakeClock()
    node = Node.open(tmp_path, clock)
    node.store.create_topic("OUT", 2)
    _transaction(node, "idle", "commit")
    node.snapshot()
    node.close()
    clock.advance(WEEK_MS / 1000 + 1)
    node = Node.open(tmp_path, clock)
    try:
        with pytest.raises(Exception, match="no producer"):
            node.txns.get("idle")
    finally:
        node.close()


def test_a_topics_own_retention_is_rebuilt_from_its_records_and_from_the_snapshot_without_topics_json(tmp_path: Path) -> None:
    """topics.json lost: a replay from the first entry and one from the snapshot both give each topic its retention as
    last changed (every ``topic`` record carries the current limits; the snapshot holds them)."""
    clock = FakeClock()
    node = Node.open(tmp_path / "with", clock)
    node.store.create_topic("SHORT", 1, retention_ms=60_000)
    node.store.create_topic("SIZED", 2, retention_bytes=4096)
    node.store.topic_writes.set_retention("SHORT", 5_000, None)
    node.snapshot()
    node.store.topic_writes.set_retention("SIZED", None, 8192)
    node.store.create_topic("LATE", 1, retention_ms=3_600_000)
    node.close()
    shutil.copytree(tmp_path / "with", tmp_path / "without")
    (tmp_path / "without" / state_snapshot.FILE).unlink()
    for data_dir in (tmp_path / "with", tmp_path / "without"):
        (data_dir / "topics.json").unlink()
        again = Node.open(data_dir, clock)
        try:
            kept = {name: (again.store.topic(name).retention_ms, again.store.topic(name).retention_bytes)  # type: ignore[union-attr]
                    for name in ("SHORT", "SIZED", "LATE")}
            assert kept == {"SHORT": (5_000, None), "SIZED": (None, 8192), "LATE": (3_600_000, None)}, data_dir
        finally:
            again.close()

"""The coordinator's replay starts from the state snapshot: the records before its entry are not read, and the state
it rebuilds is the one a replay from the start of HALFMQ_TXN_STATE rebuilds (issue 32, S1's open item; issue 44)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.delivery.receipt_handle import load_or_create_key
from halfmq.broker.producer_transactions import snapshot_state
from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator
from halfmq.broker.store import state_snapshot
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig
from halfmq.broker.store.queue_reads import QueueReads
from halfmq.broker.store.state_records import acks_record
from halfmq.broker.store.topics import TXN_STATE_TOPIC

MESSAGES = 24


async def _nothing(end: int) -> None:
    return None


def _open(data: Path) -> tuple[MessageStore, DeliveryService]:
    """What the runtime builds for these records, as it builds it (broker/runtime/); the coordinator replays."""
    store, delivery, _ = _open_all(data)
    return store, delivery


def _open_all(data: Path) -> tuple[MessageStore, DeliveryService, TransactionCoordinator]:
    store = MessageStore(StoreConfig(data))
    store.log_topics()
    delivery = DeliveryService(store, DeliveryPolicy(), key=load_or_create_key(data / "receipt-key.json"))
    return store, delivery, TransactionCoordinator(store, delivery, _nothing)


def _snapshot(store: MessageStore, delivery: DeliveryService, coordinator: TransactionCoordinator) -> state_snapshot.StateSnapshot:
    """The snapshot the runtime takes (BrokerRuntime._keep_state_snapshot), written at once."""
    snapshot = state_snapshot.take(store, delivery.settled(), snapshot_state.state_of(coordinator, delivery))
    state_snapshot.save(state_snapshot.path_of(store), snapshot)
    return snapshot


def _rebuilt(data: Path) -> tuple[list[tuple[str, str, int, int, tuple[int, ...]]], dict[str, dict[int, int]]]:
    store, delivery = _open(data)
    try:
        for topic in ("T",):  # every queue of the group, as a receive would see it
            delivery.restore_acked("g", topic, 0, -1)
        return sorted(delivery.settled()), store.offsets.topics_of("g")
    finally:
        store.close()


def _history(data: Path, order: list[int], batches: list[int], checkpoint_after: int) -> None:
    """Receive every message of T (2 queues), ack them in ``order`` in requests of ``batches`` sizes; checkpoint after
    ``checkpoint_after`` requests (and the offsets file as the store last wrote it)."""
    store, delivery, coordinator = _open_all(data)
    try:
        store.create_topic("T", 2)
        store.put([PutItem("T", i % 2, str(i).encode()) for i in range(MESSAGES)])

        async def run() -> None:
            got = []
            while len(got) < MESSAGES:
                got += await delivery.receive("g", "T", MESSAGES, invisible=600, wait=0)
            handles = {int(d.message.body): d.receipt_handle for d in got}
            done = 0
            for request, size in enumerate(batches):
                if request == checkpoint_after:
                    _snapshot(store, delivery, coordinator)
                delivery.ack("g", "T", [handles[i] for i in order[done:done + size]])
                done += size
                if request % 3 == 0:
                    store.checkpoint()  # the offsets file catches up now and then, as its flusher does

        asyncio.run(run())
    finally:
        store.close()


@settings(max_examples=15, deadline=None)
@given(st.permutations(list(range(MESSAGES))), st.lists(st.integers(1, 5), min_size=1, max_size=12), st.integers(0, 12))
def test_replay_from_the_state_snapshot_rebuilds_what_replay_from_the_start_rebuilds(
        order: list[int], sizes: list[int], checkpoint_after: int) -> None:
    batches, left = [], len(order) // 2  # half of the messages acked, in any order: gaps everywhere
    for size in sizes:
        if left <= 0:
            break
        batches.append(min(size, left))
        left -= batches[-1]
    with tempfile.TemporaryDirectory() as tmp:
        live, from_start = Path(tmp) / "live", Path(tmp) / "from-start"
        _history(live, order, batches, min(checkpoint_after, len(batches)))
        shutil.copytree(live, from_start)
        (from_start / state_snapshot.FILE).unlink(missing_ok=True)
        (from_start / state_snapshot.PREVIOUS).unlink(missing_ok=True)
        assert _rebuilt(live) == _rebuilt(from_start)


def test_a_restart_with_100_000_ack_records_before_the_snapshot_reads_only_the_records_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, delivery, coordinator = _open_all(tmp_path)
    try:
        store.create_topic("T", 1)
        for start in range(0, 100_000, 5_000):
            store.put([PutItem("T", 0, b"m") for _ in range(5_000)])
            store.put([acks_record([("g", "T", 0, i)]) for i in range(start, start + 5_000)])  # one record per ack request
            for i in range(start, start + 5_000):
                delivery.restore_acked("g", "T", 0, i)  # as each ack request settled it
        before = store.reads.queue_range(TXN_STATE_TOPIC, 0)[1]
        _snapshot(store, delivery, coordinator)
        store.put([PutItem("T", 0, b"m") for _ in range(5)])
        for i in range(100_000, 100_005):
            store.put([acks_record([("g", "T", 0, i)])])
    finally:
        store.close()
    reads: list[int] = []
    read_entry = QueueReads._read_entry

    def counted(self: QueueReads, topic: str, queue_id: int, queue_offset: int, entry: object) -> object:
        if topic == TXN_STATE_TOPIC:
            reads.append(queue_offset)
        return read_entry(self, topic, queue_id, queue_offset, entry)  # type: ignore[arg-type]

    monkeypatch.setattr(QueueReads, "_read_entry", counted)
    store, delivery = _open(tmp_path)
    try:
        assert [r for r in reads if r >= before] == list(range(before, before + 5))
        assert [r for r in reads if r < before] == [before - 1]  # only the snapshot's last entry: is it still there?
        assert store.offsets.get("g", "T", 0) == 100_005
    finally:
        store.close()


def test_a_snapshot_whose_last_entry_no_longer_ends_where_it_did_is_not_used(tmp_path: Path) -> None:
    store, delivery, coordinator = _open_all(tmp_path)
    try:
        store.create_topic("T", 1)
        store.put([PutItem("T", 0, b"m")])
        store.put([acks_record([("g", "T", 0, 0)])])
        snapshot = _snapshot(store, delivery, coordinator)
        loaded = state_snapshot.load(store)
        assert loaded is not None and (loaded.entries, loaded.entry_end, loaded.settled) == (snapshot.entries, snapshot.entry_end, snapshot.settled)
        store.truncate_log(snapshot.entry_end - 1)  # a cut, then another history written over it
        store.put([acks_record([("g", "T", 0, 0), ("g", "T", 0, 1)])])
        assert state_snapshot.load(store) is None
    finally:
        store.close()


def test_a_snapshot_is_written_only_once_the_log_it_counts_is_acknowledged() -> None:
    snapshot = state_snapshot.StateSnapshot(entries=3, entry_start=200, entry_end=300, log_end=500, settled=())
    assert not snapshot.due(acknowledged=499)
    assert snapshot.due(acknowledged=500)



def test_a_cut_of_a_divergent_tail_takes_back_the_offsets_its_acks_settled(tmp_path: Path) -> None:
    store, delivery, coordinator = _open_all(tmp_path)
    try:
        store.create_topic("T", 1)
        store.put([PutItem("T", 0, str(i).encode()) for i in range(4)])
        for i in (0, 1):  # acknowledged: the snapshot counts them
            store.put([acks_record([("g", "T", 0, i)])])
            delivery.restore_acked("g", "T", 0, i)
        _snapshot(store, delivery, coordinator)
        cut = store.commit_log.end_offset
        for i in (2, 3):  # written by an old leader, never acknowledged: the new leader's log has not got them
            store.put([acks_record([("g", "T", 0, i)])])
            delivery.restore_acked("g", "T", 0, i)
        assert store.offsets.get("g", "T", 0) == 4
        store.truncate_log(cut)
        assert store.offsets.get("g", "T", 0) == 2  # messages 2 and 3 are delivered again
    finally:
        store.close()
    assert _rebuilt(tmp_path)[1] == {"T": {0: 2}}

"""An operator's offset reset is read back from the log (its ``offsets-reset`` record) or from the state snapshot
taken after it, whatever the offsets file (a checkpoint written about once a second) said when the broker stopped."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from halfmq.broker.delivery.delivery_service import DeliveryPolicy, DeliveryService
from halfmq.broker.delivery.receipt_handle import load_or_create_key
from halfmq.broker.producer_transactions import snapshot_state
from halfmq.broker.producer_transactions.coordinator import TransactionCoordinator
from halfmq.broker.store import state_snapshot
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig


async def _nothing(end: int) -> None:
    return None


def _open(data: Path) -> tuple[MessageStore, DeliveryService, TransactionCoordinator]:
    store = MessageStore(StoreConfig(data))
    store.log_topics()
    delivery = DeliveryService(store, DeliveryPolicy(), key=load_or_create_key(data / "receipt-key.json"))
    return store, delivery, TransactionCoordinator(store, delivery, _nothing)


def _snapshot(store: MessageStore, delivery: DeliveryService, coordinator: TransactionCoordinator) -> None:
    state_snapshot.save(state_snapshot.path_of(store),
                        state_snapshot.take(store, delivery.settled(), snapshot_state.state_of(coordinator, delivery)))


def _reset_after_acking_all(data: Path, *, checkpoint_after_reset: bool) -> None:
    """Ack 5 messages (the offsets file says 5), reset the group to 1; the offsets file is left as it was before."""
    store, delivery, coordinator = _open(data)
    try:
        store.create_topic("T", 1)
        store.put([PutItem("T", 0, b"m") for _ in range(5)])

        async def consume() -> None:
            got = await delivery.receive("g", "T", 5, invisible=600, wait=0)
            delivery.ack("g", "T", [d.receipt_handle for d in got])

        asyncio.run(consume())
        store.checkpoint()
        _snapshot(store, delivery, coordinator)
        stale = data / "stale-offsets"
        shutil.copy(store.offsets.path, stale)
        delivery.reset_offsets("g", "T", [(0, 1)])
        if checkpoint_after_reset:
            _snapshot(store, delivery, coordinator)
        offsets = store.offsets.path
    finally:
        store.close()
    shutil.copy(stale, offsets)  # a kill -9 before the offsets file caught up


def _committed_after_restart(data: Path) -> int | None:
    store, delivery, coordinator = _open(data)
    try:
        return delivery.positions("g", "T")[0][1]
    finally:
        store.close()


def test_a_reset_is_read_back_from_its_record(tmp_path: Path) -> None:
    _reset_after_acking_all(tmp_path, checkpoint_after_reset=False)
    assert _committed_after_restart(tmp_path) == 1


def test_a_reset_is_read_back_from_the_state_snapshot_taken_after_it(tmp_path: Path) -> None:
    _reset_after_acking_all(tmp_path, checkpoint_after_reset=True)
    assert _committed_after_restart(tmp_path) == 1

"""A started broker keeps the state snapshot (store.state_snapshot) as its acks become durable; a restart starts from it."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from halfmq.broker.config import BrokerSettings
from halfmq.broker.producer_transactions import snapshot_state
from halfmq.broker.runtime import BrokerRuntime
from halfmq.broker.store import state_snapshot
from halfmq.broker.store.message_store import PutItem
from tests.support.grants import subscribed


async def test_a_started_broker_writes_the_state_snapshot_of_its_acks_and_a_restart_uses_it(tmp_path: Path) -> None:
    settings = BrokerSettings(data_dir=tmp_path, grpc_port=0, offset_flush_interval=0.1, state_snapshot_interval=0.1)
    rt = BrokerRuntime.open(settings)
    await rt.start()
    try:
        rt.store.create_topic("T", 1)
        rt.store.put([PutItem("T", 0, str(i).encode()) for i in range(5)])
        got = await rt.delivery.receive("g", "T", 5, invisible=30, wait=0)
        await rt.usecases.settling.ack(subscribed(rt, "g", "T"), [d.receipt_handle for d in got if d.message.body != b"0"])  # a gap at 0
        for _ in range(600):  # a hang guard (30 s), not a measurement
            if (checkpoint := state_snapshot.load(rt.store)) is not None and checkpoint.settled:
                break
            await asyncio.sleep(0.05)  # wall-clock: the runtime's checkpoint loop sleeps for real (broker/runtime.py takes no sleep yet)
        assert [tuple(q) for q in checkpoint.settled] == [("g", "T", 0, 0, (1, 2, 3, 4))]
    finally:
        await rt.stop()
    rt = BrokerRuntime.open(settings)
    try:
        assert [d.message.body for d in await rt.delivery.receive("g", "T", 5, invisible=30, wait=0)] == [b"0"]
    finally:
        await rt.stop()


async def test_a_group_deleted_before_the_snapshot_stays_deleted_though_the_replay_does_not_read_its_record(tmp_path: Path) -> None:
    settings = BrokerSettings(data_dir=tmp_path / "live", grpc_port=0, offset_flush_interval=3600)  # no periodic checkpoint
    rt = BrokerRuntime.open(settings)
    try:
        rt.store.create_topic("T", 1)
        rt.store.put([PutItem("T", 0, b"m")])
        got = await rt.delivery.receive("g", "T", 1, invisible=30, wait=0)
        rt.delivery.ack("g", "T", [got[0].receipt_handle])
        rt.store.checkpoint()  # the offsets file names g
        rt.delivery.delete_group("g")
        rt._save_state_snapshot(state_snapshot.path_of(rt.store), state_snapshot.take(
            rt.store, rt.delivery.settled(), snapshot_state.state_of(rt.producer_txns, rt.delivery)))
        shutil.copytree(tmp_path / "live", tmp_path / "killed", ignore=shutil.ignore_patterns("*.lock"))  # a kill -9 here
    finally:
        rt.store.close()
    rt = BrokerRuntime.open(settings.model_copy(update={"data_dir": tmp_path / "killed"}))
    try:
        assert rt.producer_txns.replayed.records_read == 0  # the group-deleted record is before the snapshot: not read
        assert "g" not in rt.store.offsets.groups()
    finally:
        rt.store.close()

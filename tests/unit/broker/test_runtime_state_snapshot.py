"""A started broker keeps the state snapshot (store.state_snapshot) as its acks become durable; a restart starts from it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from halfmq.broker.config import BrokerSettings
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

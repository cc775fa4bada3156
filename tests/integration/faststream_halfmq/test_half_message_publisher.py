"""The transactional publisher (a half message around the database work) survives a kill -9 between its database
commit and the end: the barrier answers the check-back, the message is committed, and the consumer handles it once."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faststream_halfmq import HalfmqBroker
from sqlalchemy import Column, MetaData, String, Table, create_engine
from sqlalchemy.ext.asyncio import create_async_engine

from halfmq.client.sqlalchemy.async_barrier import AsyncTransactionBarrier
from halfmq.client.sqlalchemy.records import create_transaction_records
from halfmq.testing import ServedApp, loopback_socket
from tests.conftest import TEST_BROKER_ENV
from tests.integration.faststream_halfmq.conftest import Seen
from tests.support.processes import BrokerProcess
from tests.support.unique_names import unique

pytestmark = pytest.mark.slow

FAST_CHECKS = {"HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5", "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.3",
               "HALFMQ_BROKER_TRANSACTION_CHECK_MAX": "60", "HALFMQ_BROKER_PRODUCER_EXPIRY": "1.5"}
CHILD = Path(__file__).with_name("half_message_child.py")

orders = Table("orders", MetaData(), Column("id", String(64), primary_key=True))


@pytest.fixture
def tx_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", tmp_path, {**TEST_BROKER_ENV, **FAST_CHECKS}).start()
    yield proc
    proc.stop()


def committed_orders(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT id FROM orders")]


async def test_a_publisher_killed_after_its_database_commit_is_committed_by_the_check_back_and_consumed_once(
        tx_broker: BrokerProcess, tmp_path: Path) -> None:
    db, group, topic, key = tmp_path / "shop.db", unique("shop"), unique("ORDERS"), "o-kill"
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        orders.metadata.create_all(conn)
        create_transaction_records(conn)
    engine.dispose()

    child = await asyncio.to_thread(subprocess.run, [sys.executable, str(CHILD), tx_broker.url, f"sqlite+aiosqlite:///{db}",
                                                     group, topic, key], capture_output=True, text=True, timeout=60)
    assert child.returncode == -9, child.stdout + child.stderr
    assert committed_orders(db) == [key], "the database transaction committed before the kill"

    seen = Seen()
    sock = loopback_socket()
    broker = HalfmqBroker(tx_broker.url)  # the service, restarted: same producer group, its check URL served
    barrier = AsyncTransactionBarrier(create_async_engine(f"sqlite+aiosqlite:///{db}"), local_tx_timeout=3.0, commit_grace=1.0)
    publisher = broker.half_message_publisher(topic, producer_group=group, barrier=barrier,
                                              check_url=f"http://127.0.0.1:{sock.getsockname()[1]}/halfmq/check",
                                              producer_options={"heartbeat_interval": 0.3})

    @broker.subscriber(topic, group="credit", wait_seconds=0.5)
    async def handle(order: dict[str, Any]) -> None:
        seen.add(order)

    async with broker:
        await broker.start()
        served = ServedApp(publisher.check_app(), sock=sock).start()
        try:
            await seen.at_least(1, within=30)
            with pytest.raises(TimeoutError):
                await seen.at_least(2, within=2.0)
        finally:
            served.stop()
    assert seen.items == [{"order_id": key}]

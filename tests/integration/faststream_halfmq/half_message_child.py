"""A FastStream service that dies by kill -9 right after its half message's local commit (argv: broker, db, group, topic, key)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from faststream_halfmq import HalfmqBroker
from sqlalchemy import Column, MetaData, String, Table
from sqlalchemy.ext.asyncio import create_async_engine

from halfmq.client.sqlalchemy.async_barrier import AsyncTransactionBarrier

orders = Table("orders", MetaData(), Column("id", String(64), primary_key=True))


def die(_value: object) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


async def main(broker_url: str, db_url: str, group: str, topic: str, key: str) -> None:
    barrier = AsyncTransactionBarrier(create_async_engine(db_url), local_tx_timeout=3.0, commit_grace=1.0)
    broker = HalfmqBroker(broker_url)
    # Its check URL is never served: this process dies before any check could reach it.
    orders_out = broker.half_message_publisher(topic, producer_group=group, barrier=barrier,
                                               check_url="http://127.0.0.1:9/halfmq/check")

    async def write(session):  # type: ignore[no-untyped-def]
        await session.execute(orders.insert().values(id=key))

    async with broker:
        await broker.start()
        await orders_out.publish({"order_id": key}, business_key=key, run=write, after_commit=die)
    print("not killed", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))

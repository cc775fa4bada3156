"""A service process that dies by kill -9 right after its barrier's local commit (argv: broker, db, flavour, group, topic, key)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from sqlalchemy import Column, MetaData, String, Table, create_engine
from sqlalchemy.ext.asyncio import create_async_engine

from halfmq.client import AsyncTransactionProducer
from halfmq.client.sqlalchemy.async_barrier import AsyncTransactionBarrier
from halfmq.client.sqlalchemy.barrier import TransactionBarrier

items = Table("items", MetaData(), Column("id", String(64), primary_key=True))


def die(_value: object) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


async def main(broker_url: str, db_url: str, flavour: str, group: str, topic: str, key: str) -> None:
    settings = {"local_tx_timeout": 3.0, "commit_grace": 1.0, "retention": 3600.0}
    if flavour == "sync":
        barrier: TransactionBarrier | AsyncTransactionBarrier = TransactionBarrier(create_engine(db_url), **settings)
    else:
        barrier = AsyncTransactionBarrier(create_async_engine(db_url), **settings)
    # Its check URL is never served: this process dies before any check could reach it.
    async with AsyncTransactionProducer(broker_url, group, barrier, check_url="http://127.0.0.1:9/halfmq/check") as producer:
        if isinstance(barrier, TransactionBarrier):
            await barrier.send(producer, topic, {"id": key}, key, lambda s: s.execute(items.insert().values(id=key)), after_commit=die)
        else:
            async def run(s):  # type: ignore[no-untyped-def]
                await s.execute(items.insert().values(id=key))
            await barrier.send(producer, topic, {"id": key}, key, run, after_commit=die)
    print("not killed", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))

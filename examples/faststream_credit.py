"""The demo's credit service once more, as a FastStream app on faststream-halfmq (docs/faststream.md).

Consumes ORDER_TOPIC as `credit_group`: each order credits its user whole units of the amount × CREDIT_POINTS_PER_UNIT,
a refund takes them back; the credit, the balance and the inbox row commit in one database transaction, then
FastStream acks the message. A redelivery (a crash before the ack, a retry) finds the inbox row and changes nothing,
so every order is credited exactly once. A message that can never be credited is rejected: settled, not retried.

    HALFMQ_URL=http://127.0.0.1:10911 CREDIT_DB=sqlite+aiosqlite:///credits.db python examples/faststream_credit.py

(or `faststream run faststream_credit:app` with FastStream's `cli` extra).
"""

import asyncio
import os
from decimal import Decimal, InvalidOperation

from faststream import FastStream
from faststream.exceptions import RejectMessage
from faststream_halfmq import HalfmqBroker
from faststream_halfmq.annotations import HalfmqMessage
from sqlalchemy import Column, Integer, MetaData, String, Table, update
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from halfmq.client.sqlalchemy.inbox import Inbox, inbox_table

POINTS_PER_UNIT = int(os.environ.get("CREDIT_POINTS_PER_UNIT", "1"))

metadata = MetaData()
inbox_table(metadata)  # halfmq_inbox: one row per order (and per refund) credited
credits = Table("credits", metadata, Column("inbox_key", String(80), primary_key=True), Column("order_id", String(64)),
                Column("user_id", String(64)), Column("points", Integer))
balances = Table("balances", metadata, Column("user_id", String(64), primary_key=True), Column("points", Integer))
engine = create_async_engine(os.environ.get("CREDIT_DB", "sqlite+aiosqlite:///faststream_credits.db"))
sessions = async_sessionmaker(engine)
inbox = Inbox(engine, "credit_group")

broker = HalfmqBroker(os.environ.get("HALFMQ_URL", "http://127.0.0.1:10911"), token=os.environ.get("HALFMQ_TOKEN"))
app = FastStream(broker)


@app.on_startup
async def create_tables() -> None:
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)


def credit_of(order: dict) -> tuple[str, str, str, int]:
    """(inbox key, order id, user id, points) of an order or refund; RejectMessage for one that can never be credited."""
    try:
        order_id, user_id, amount = str(order["order_id"]), str(order["user_id"]), Decimal(str(order["amount"]))
    except (KeyError, TypeError, InvalidOperation):
        raise RejectMessage from None
    if not amount.is_finite() or amount <= 0:
        raise RejectMessage
    points = int(amount) * POINTS_PER_UNIT
    if order.get("kind") == "refund":
        return f"refund:{order_id}", order_id, user_id, -points
    return order_id, order_id, user_id, points


@broker.subscriber("ORDER_TOPIC", group="credit_group", max_workers=4)
async def credit(order: dict, message: HalfmqMessage) -> None:
    key, order_id, user_id, points = credit_of(order)
    async with sessions.begin() as session:
        if not (await inbox.claim_keys_async(session, [(key, message.message_id)]))[0]:
            return  # credited already: a redelivery
        await session.execute(credits.insert().values(inbox_key=key, order_id=order_id, user_id=user_id, points=points))
        await session.execute(insert(balances).values(user_id=user_id, points=0).on_conflict_do_nothing())
        await session.execute(update(balances).where(balances.c.user_id == user_id).values(points=balances.c.points + points))


if __name__ == "__main__":
    asyncio.run(app.run())  # until SIGINT or SIGTERM; the messages in hand are finished first

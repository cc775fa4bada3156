import logging
import os
import signal

from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine
from sqlalchemy.dialects.sqlite import insert

from halfmq import Consumer, message_json
from halfmq.client.sqlalchemy.inbox import Inbox, inbox_table

logging.basicConfig(level=logging.INFO, format="%(message)s")

metadata = MetaData()
inbox_table(metadata)  # halfmq_inbox: one row per order credited; create it with your tables
balances = Table("balances", metadata, Column("user_id", String(64), primary_key=True), Column("points", Integer))
engine = create_engine("sqlite:///credits.db")
metadata.create_all(engine)
inbox = Inbox(engine, "credits", key="order_id")  # one credit per order_id, however often it arrives


@inbox.handler  # credit() runs only for an order not seen yet, in one transaction with its inbox row
def credit(session, message):
    order = message_json(message)
    add = insert(balances).values(user_id=order["user_id"], points=order["points"])
    session.execute(add.on_conflict_do_update(index_elements=["user_id"], set_={"points": balances.c.points + add.excluded.points}))
    logging.info("credited %s", order["order_id"])


def on_order(message):  # other programs send orders without points to ORDERS too (the README's): none to credit
    if "points" in message_json(message):
        credit(message)


consumer = Consumer(os.environ.get("HALFMQ_URL", "http://127.0.0.1:10911"), "credits", "ORDERS", on_order)
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda *_: consumer.stop())
consumer.run()  # acks each message after its transaction has committed

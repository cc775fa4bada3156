import os
import uuid

import uvicorn
from fastapi import FastAPI
from sqlalchemy import Column, MetaData, String, Table, create_engine

from halfmq import AsyncTransactionProducer
from halfmq.client.fastapi_checks import mount_check_endpoint, producer_lifespan
from halfmq.client.sqlalchemy.barrier import TransactionBarrier
from halfmq.client.sqlalchemy.records import create_transaction_records

port = int(os.environ.get("PORT", "8000"))
engine = create_engine("sqlite:///shop.db")
orders = Table("orders", MetaData(), Column("id", String, primary_key=True), Column("item", String))
orders.metadata.create_all(engine)
create_transaction_records(engine)  # in a real service: create_transaction_records(op) in an Alembic migration

barrier = TransactionBarrier(engine)
producer = AsyncTransactionProducer(os.environ.get("HALFMQ_URL", "http://127.0.0.1:10911"), "shop", barrier,
                                    check_url=f"http://127.0.0.1:{port}/halfmq/check")
app = FastAPI(lifespan=producer_lifespan(producer, barrier))
mount_check_endpoint(app, producer)


@app.post("/orders")
async def place_order(item: str):
    order_id = uuid.uuid4().hex
    sent = await barrier.send(producer, "ORDERS", {"order_id": order_id, "item": item}, order_id,
                              lambda session: session.execute(orders.insert().values(id=order_id, item=item)))
    return {"order_id": order_id, "committed": sent.committed}


if __name__ == "__main__":
    uvicorn.run(app, port=port)

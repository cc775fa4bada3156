"""A user's service code: it publishes an event for every order it places."""

from halfmq import Producer


def place_order(broker_url: str, order_id: str, amount: str) -> str:
    with Producer(broker_url) as producer:
        return producer.send("SHOP_ORDERS", {"order_id": order_id, "amount": amount}, keys=[order_id]).msg_id

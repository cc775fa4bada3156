"""A user's test suite: `halfmq_broker` comes from halfmq's pytest plugin, no conftest needed."""

import threading

from shop import place_order

from halfmq import Consumer, message_json


def test_a_placed_order_is_published_once(halfmq_broker):
    msg_id = place_order(halfmq_broker.url, "o-1", "42.10")

    seen = []
    consumer = Consumer(halfmq_broker.url, "audit", "SHOP_ORDERS", handler=seen.append, wait_seconds=1)
    runner = threading.Thread(target=consumer.run)
    runner.start()
    for _ in range(100):
        if seen:
            break
        threading.Event().wait(0.05)
    consumer.stop()
    runner.join(10)

    assert [(m.msg_id, message_json(m)) for m in seen] == [(msg_id, {"order_id": "o-1", "amount": "42.10"})]


def test_each_test_gets_an_empty_broker(halfmq_broker):
    from halfmq import Producer

    with Producer(halfmq_broker.url) as producer:
        assert "SHOP_ORDERS" not in [t.name for t in producer.list_topics()]

"""The SDK's message groups (FIFO) against the real broker, served in this test process (halfmq.testing)."""

from __future__ import annotations

import uuid

from halfmq.client import Producer
from halfmq.client.simple_consumer import SimpleConsumer
from halfmq.testing import InProcessBroker


def test_a_group_sent_with_the_sdk_is_received_one_message_at_a_time_in_send_order(halfmq_broker: InProcessBroker) -> None:
    topic, group = f"GROUPS_{uuid.uuid4().hex[:8]}", f"c_{uuid.uuid4().hex[:8]}"
    with Producer(halfmq_broker.url) as producer:
        for n in range(3):
            producer.send(topic, f"u1-{n}", message_group="u1")
        producer.send(topic, "plain")
    seen = []
    with SimpleConsumer(halfmq_broker.url, group, topic) as consumer:
        for _ in range(20):
            batch = consumer.receive(16)
            assert len([m for m in batch if m.message_group == "u1"]) <= 1  # one message of the group at a time
            seen += [(m.body, m.message_group) for m in batch]
            if batch:
                consumer.ack([m.receipt_handle for m in batch if m.receipt_handle])
            if len(seen) == 4:
                break
    assert [body for body, g in seen if g == "u1"] == ["u1-0", "u1-1", "u1-2"]
    assert ("plain", None) in seen

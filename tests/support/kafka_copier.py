"""A transactional copier on confluent-kafka (librdkafka's 0103 consume-transform-produce, Kafka's
``transactions_test.py`` copier), run as its own process so a test can kill -9 it.

``python tests/support/kafka_copier.py BOOTSTRAP SOURCE SINK GROUP TRANSACTIONAL_ID BATCH``: reads SOURCE's partitions
``read_committed`` from the group's committed offsets (assigned, not subscribed: a killed copier's member never holds
a restarted one back), and copies each batch to the same partition of SINK in one transaction with its input offsets
(``send_offsets_to_transaction``). Every fifth transaction is first tried with ``ABORT-`` records and aborted, so a
reader that sees one has read an aborted transaction. Exits 0 once every partition is copied to its end.
"""

from __future__ import annotations

import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

PARTITIONS = 2


def main(bootstrap: str, source: str, sink: str, group: str, tid: str, batch: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5})
    producer.init_transactions(30)  # fences the killed copier's producer and aborts its open transaction
    partitions = [TopicPartition(source, q) for q in range(PARTITIONS)]
    consumer.assign(partitions)  # from the group's committed offsets
    done = 0
    while True:
        messages = [m for m in consumer.consume(num_messages=batch, timeout=1) if m.error() is None]
        if not messages:
            try:
                ends = [consumer.get_watermark_offsets(p, timeout=10)[1] for p in partitions]
            except KafkaException:  # no metadata for the partitions yet
                continue
            committed = consumer.committed(partitions, timeout=10)  # a partition not read by this process has no position
            positions = [p.offset if p.offset >= 0 else c.offset for p, c in zip(consumer.position(partitions), committed, strict=True)]
            if all(at >= end for at, end in zip(positions, ends, strict=True)):
                return 0
            continue
        if done % 5 == 4:
            producer.begin_transaction()
            for m in messages:
                producer.produce(sink, b"ABORT-" + m.value(), partition=m.partition())
            producer.flush(30)
            producer.abort_transaction(30)
        producer.begin_transaction()
        for m in messages:
            producer.produce(sink, m.value(), partition=m.partition())
        producer.send_offsets_to_transaction(consumer.position(partitions), consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        done += 1
        print(f"transaction {done}: {len(messages)} copied", flush=True)


if __name__ == "__main__":
    bootstrap, source, sink, group, tid, batch = sys.argv[1:7]
    sys.exit(main(bootstrap, source, sink, group, tid, int(batch)))

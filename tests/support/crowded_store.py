"""A data dir holding many topics and consumer groups, built in-process before a broker opens it.

Creating 3,000 topics through the API rewrites topics.json 3,000 times; here every topic is learnt in memory and
saved once, one message lands on each queue in batched write groups, and each group commits offset 0 on every
queue of the topics it reads (so it has lag on each). The broker then opens the dir as it would after a restart.
"""

from __future__ import annotations

from pathlib import Path

from halfmq.broker.store.message_store import MessageStore
from halfmq.broker.store.store_types import PutItem, StoreConfig
from halfmq.broker.store.topics import dlq_topic

BATCH = 200  # messages per write group: within the test brokers' 256 KiB segments


def topic_name(i: int) -> str:
    return f"T{i:05d}"


def group_name(i: int) -> str:
    return f"G{i:05d}"


def topics_of(group: int, topics: int, per_group: int) -> list[str]:
    """The topics group number ``group`` reads: ``per_group`` of them, spread over the ``topics``."""
    return [topic_name((group + k * topics // per_group) % topics) for k in range(per_group)]


def fill(data_dir: Path, topics: int, groups: int, queues: int = 4, per_group: int = 1, dead: tuple[int, int] = (0, 0)) -> None:
    """``topics`` topics of ``queues`` queues with one message each, and ``groups`` groups reading ``per_group`` topics each;
    ``dead`` = (n, each): the first n groups have ``each`` messages in their DLQ."""
    # No periodic checkpoint while filling: one that snapshots the offsets halfway could land after ``persist``.
    store = MessageStore(StoreConfig(data_dir, segment_bytes=256 * 1024, checkpoint_interval=3600))
    try:
        for i in range(topics):
            store.adopt_topic(topic_name(i), queues)
        store.topics.save_if_changed()
        for g in range(dead[0]):
            store.adopt_topic(dlq_topic(group_name(g)), 1)
        store.topics.save_if_changed()
        items = [PutItem(topic_name(i), q, b"x") for i in range(topics) for q in range(queues)]
        items += [PutItem(dlq_topic(group_name(g)), 0, b"dead", {"REAL_TOPIC": topic_name(g % topics), "REAL_QID": "0",
                                                                   "DLQ_REASON": "4 deliveries, none acked"})
                  for g in range(dead[0]) for _ in range(dead[1])]
        for start in range(0, len(items), BATCH):
            store.put(items[start:start + BATCH])
        for g in range(groups):
            for topic in topics_of(g, topics, per_group):
                for q in range(queues):
                    store.offsets.commit(group_name(g), topic, q, 0)
        store.offsets.persist()
    finally:
        store.close()

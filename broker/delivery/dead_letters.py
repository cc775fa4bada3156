"""A consumer group's DLQ (``%DLQ%{group}``): what is in it, and an operator's resend.

A message lands there after ``max_reconsume_times`` deliveries (delivery_service);
its properties remember where it came from (REAL_TOPIC, REAL_QID). A resend puts
a copy back on that topic and queue, so it is delivered again — to every group
that reads the topic, as RocketMQ's "resend" of a DLQ message through the
original topic does. The DLQ copy stays (the DLQ is a log); the resent copy
carries ``DLQ_RESENT_FROM`` so a second resend is visible in the message.
"""

from __future__ import annotations

from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.message_store import MessageStore, PutItem
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.state_records import acks_record
from halfmq.broker.store.topics import dlq_topic
from halfmq.errors import DlqMessageNotFound

DLQ_BOOKKEEPING = ("ORIGIN_MESSAGE_ID", "REAL_TOPIC", "REAL_QID", "RECONSUME_TIME", "CONSUMER_GROUP", "DLQ_REASON")
GIVEN_UP = "dead-lettered by its consumer"


def exhausted_reason(deliveries: int, nacked: bool) -> str:
    """Why a message ran out of deliveries, as an operator reads it in the DLQ (``DLQ_REASON``)."""
    last = "was nacked" if nacked else "was not acked within its invisible time"
    return f"{deliveries} deliveries, none acked; the last {last}"


def moved(group: str, message: StoredMessage, deliveries: int, reason: str) -> list[PutItem]:
    """The write group that moves ``message`` to ``group``'s DLQ: the copy, and the ``acks`` record that settles it."""
    props = dict(message.properties)
    props.update({
        "ORIGIN_MESSAGE_ID": message.properties.get("UNIQ_KEY", ""),
        "REAL_TOPIC": message.topic,
        "REAL_QID": str(message.queue_id),
        "RECONSUME_TIME": str(deliveries - 1),
        "CONSUMER_GROUP": group,
        "DLQ_REASON": reason,
    })
    return [PutItem(dlq_topic(group), 0, message.body, props, message.born_timestamp, message.binary, props.get("TAGS")),
            acks_record([(group, message.topic, message.queue_id, message.queue_offset)])]


def depth(store: MessageStore, group: str) -> int:
    """Messages ever moved to the group's DLQ (its one queue's max offset minus min)."""
    topic = dlq_topic(group)
    if store.topic(topic) is None:
        return 0
    lo, hi = store.visible.queue_range(topic, 0)
    return hi - lo


def dead_letters(store: MessageStore, group: str, offset: int, limit: int) -> list[StoredMessage]:
    topic = dlq_topic(group)
    if store.topic(topic) is None:
        return []
    return [e for e in store.visible.read_entries(topic, 0, offset, limit) if type(e) is not DamagedEntry]


def resend_item(store: MessageStore, group: str, offset: int) -> PutItem:
    """The copy to put back on the message's own topic and queue (DlqMessageNotFound when there is none)."""
    found = dead_letters(store, group, offset, 1)
    if not found or found[0].queue_offset != offset:
        raise DlqMessageNotFound(f"consumer group {group!r} has no DLQ message at offset {offset}")
    msg = found[0]
    topic = msg.properties.get("REAL_TOPIC", "")
    cfg = store.topic(topic)
    if cfg is None:
        raise DlqMessageNotFound(f"the DLQ message's topic {topic!r} no longer exists")
    queue_id = int(msg.properties.get("REAL_QID", "0"))
    props = {k: v for k, v in msg.properties.items() if k not in DLQ_BOOKKEEPING}
    props["DLQ_RESENT_FROM"] = f"{dlq_topic(group)}@{offset}"
    return PutItem(topic, queue_id if queue_id < cfg.queues else 0, msg.body, props, msg.born_timestamp, msg.binary,
                   props.get("TAGS"))

"""Stored records → ``halfmq.wire.MessageView`` (built field by field: this is the hot path of every read)."""

from __future__ import annotations

import base64

from msgspec import UNSET

from halfmq.broker.delivery.fifo_gate import MESSAGE_GROUP
from halfmq.broker.half_messages.record_names import REAL_QID, REAL_TOPIC
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import TIMER_OUT_MS
from halfmq.wire import MessageView

HIDDEN = ("KEYS", "TAGS", MESSAGE_GROUP)


def message_view(msg: StoredMessage, *, topic: str | None = None, queue_id: int | None = None) -> MessageView:
    props = msg.properties
    keys = props.get("KEYS")
    view = MessageView(
        msg_id=props.get("UNIQ_KEY", f"{msg.commit_log_offset:016X}"),
        topic=topic or msg.topic,
        queue_id=msg.queue_id if queue_id is None else queue_id,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
        born_timestamp=msg.born_timestamp,
        store_timestamp=msg.store_timestamp,
        body=base64.b64encode(msg.body).decode() if msg.binary else msg.body.decode("utf-8", "replace"),
        body_encoding="base64" if msg.binary else "utf-8",
        keys=keys.split(" ") if keys else [],
        tag=props.get("TAGS"),
        properties={k: v for k, v in props.items() if k not in HIDDEN},
        message_group=props.get(MESSAGE_GROUP, UNSET),
    )
    due = props.get(TIMER_OUT_MS)
    if due is not None:  # a timed message (released, or still waiting when read from a system queue)
        view.deliver_at_ms = int(due)
    return view


def restored_view(msg: StoredMessage) -> MessageView:
    """A half message as its producer sent it: real topic and queue, broker bookkeeping hidden."""
    view = message_view(msg)
    props = view.properties
    view.topic = props.pop(REAL_TOPIC, view.topic)
    view.queue_id = int(props.pop(REAL_QID, view.queue_id))
    return view

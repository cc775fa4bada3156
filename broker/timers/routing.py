"""Where a timed message goes when it becomes visible: a pure decision, applied by its three callers.

A plain send (at store time), a half message's commit and a producer transaction's commit each call ``route``
on the message as it becomes visible, so a relative delay starts there (RocketMQ also places a transactional
message's delay at its commit, ``HookUtils.handleScheduleMessage``). A message not yet due is written to
RMQ_SYS_WHEEL_TIMER/0 with its real place in REAL_TOPIC/REAL_QID and its due time in TIMER_OUT_MS; the release
service writes it to its topic once due.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from halfmq.broker.store.message_store import MessageStore
from halfmq.broker.store.store_types import PutItem
from halfmq.broker.store.topics import REAL_QID, REAL_TOPIC, TIMER_OUT_MS, TIMER_QUEUE, TIMER_QUEUES, TIMER_TOPIC
from halfmq.errors import InvalidDeliveryTime

# As sent (RocketMQ's names): an absolute due time, or a delay from the moment the message becomes visible.
TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
TIMER_DELAY_MS = "TIMER_DELAY_MS"
REQUESTED = (TIMER_DELIVER_MS, TIMER_DELAY_MS)
RESERVED = (TIMER_DELIVER_MS, TIMER_DELAY_MS, TIMER_OUT_MS)  # the wire's fields are the one way in
DEFAULT_MAX_DELAY_MS = 3 * 24 * 3600 * 1000  # RocketMQ's timerMaxDelaySec


def requested(deliver_at_ms: int | None, delay_ms: int | None, now_ms: int, max_delay_ms: int) -> dict[str, str]:
    """The properties a send's timer fields become, checked against ``now_ms`` (INVALID_DELIVERY_TIME otherwise)."""
    if deliver_at_ms is None and delay_ms is None:
        return {}
    if deliver_at_ms is not None and delay_ms is not None:
        raise InvalidDeliveryTime("give deliver_at_ms or delay_ms, not both")
    if deliver_at_ms is not None:
        _check(deliver_at_ms - now_ms, max_delay_ms, "deliver_at_ms")
        return {TIMER_DELIVER_MS: str(deliver_at_ms)}
    assert delay_ms is not None
    _check(delay_ms, max_delay_ms, "delay_ms")
    return {TIMER_DELAY_MS: str(delay_ms)}


def _check(delay_ms: int, max_delay_ms: int, field: str) -> None:
    if delay_ms > max_delay_ms:
        raise InvalidDeliveryTime(f"{field} is {delay_ms} ms away; at most {max_delay_ms} ms (timer_max_delay)",
                                  max_delay_ms=max_delay_ms)


def due_of(properties: dict[str, str], now_ms: int) -> int | None:
    """When a message that becomes visible at ``now_ms`` is due, or None when it carries no timer."""
    at = properties.get(TIMER_DELIVER_MS)
    if at is not None:
        return int(at)
    delay = properties.get(TIMER_DELAY_MS)
    return None if delay is None else now_ms + int(delay)


def route(item: PutItem, now_ms: int, max_delay_ms: int | None) -> PutItem:
    """``item`` as it is written when it becomes visible at ``now_ms``: to its topic, or to the timer queue.

    ``max_delay_ms`` None: the limit was checked when the message was sent (a commit never refuses for it).
    """
    due = due_of(item.properties, now_ms)
    if due is None:
        return item
    if max_delay_ms is not None:
        _check(due - now_ms, max_delay_ms, "the delivery time")
    props = {k: v for k, v in item.properties.items() if k not in REQUESTED}
    if due <= now_ms:
        return replace(item, properties=props)  # due already: visible at once, like any message
    props.update({REAL_TOPIC: item.topic, REAL_QID: str(item.queue_id), TIMER_OUT_MS: str(due)})
    return replace(item, topic=TIMER_TOPIC, queue_id=TIMER_QUEUE, properties=props)


def route_all(store: MessageStore, items: Iterable[PutItem], now_ms: int, max_delay_ms: int | None) -> list[PutItem]:
    """``route`` for each of a group's items; the timer topic is created the first time a timer is written."""
    routed = [route(item, now_ms, max_delay_ms) for item in items]
    if any(item.topic == TIMER_TOPIC for item in routed):
        store.create_topic(TIMER_TOPIC, TIMER_QUEUES)
    return routed


def released(topic: str, queue_id: int, properties: dict[str, str]) -> tuple[str, int, dict[str, str]]:
    """A timer record's real topic, queue and properties once released (TIMER_OUT_MS kept: when it was due)."""
    return (properties[REAL_TOPIC], int(properties[REAL_QID]),
            {k: v for k, v in properties.items() if k not in (REAL_TOPIC, REAL_QID)})


def visible_place(topic: str, queue_id: int, queue_offset: int, properties: dict[str, str]) -> tuple[str, int, int, int | None]:
    """Where a written message will be read: (topic, queue, queue offset, due ms). A timer answers its real topic
    and queue, queue offset -1 (it takes one when it is released) and its due time."""
    if topic != TIMER_TOPIC or queue_id != TIMER_QUEUE:
        return topic, queue_id, queue_offset, None
    return properties[REAL_TOPIC], int(properties[REAL_QID]), -1, int(properties[TIMER_OUT_MS])

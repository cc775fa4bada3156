"""A message's journey from the records a lookup found: pure, so it is tested with plain records and no store.

The records are every copy and op the key index found by the message's id and its transaction's id: the half, its
ops (checks, the end), the committed copy, a timer's waiting and released copies, dead letters and resent copies.
Each becomes at most one event; the acks come from the consumer groups' committed offsets (the log has no record
of a delivery yet: the journal, J2, will add them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import chain, zip_longest

from halfmq.broker.delivery import journal
from halfmq.broker.delivery.fifo_gate import MESSAGE_GROUP
from halfmq.broker.half_messages import record_names as names
from halfmq.broker.half_messages.record_names import OpKind
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.state_records import TXN_OP, StateRecord, decode_acks
from halfmq.broker.store.topics import (
    CHECK_MAX_TIME_TOPIC,
    DLQ_PREFIX,
    HALF_TOPIC,
    OP_HALF_TOPIC,
    REAL_QID,
    REAL_TOPIC,
    TIMER_OUT_MS,
    TIMER_TOPIC,
    TXN_STATE_TOPIC,
)
from halfmq.wire import JourneyEvent, MessageJourney, MessageSummary
from halfmq.wire import JourneyEventKind as Kind

RESENT_FROM = "DLQ_RESENT_FROM"  # on a dead letter put back (delivery/dead_letters.py)
CONSUMER_GROUP = "CONSUMER_GROUP"  # on a dead letter: the group that gave up
DLQ_REASON = "DLQ_REASON"
_OP_EVENTS = {OpKind.COMMIT.value: Kind.COMMITTED, OpKind.ROLLBACK.value: Kind.ROLLED_BACK,
              OpKind.DISCARD.value: Kind.DISCARDED, OpKind.RESEND.value: Kind.RESENT}
_STATES = {Kind.ROLLED_BACK: "rolled_back", Kind.DISCARDED: "discarded"}


def is_visible_copy(rec: StoredMessage) -> bool:
    """A copy on the message's own topic, where consumers read it (not a half, an op, a timer or a dead letter)."""
    return not rec.topic.startswith(DLQ_PREFIX) and rec.topic not in (HALF_TOPIC, OP_HALF_TOPIC, CHECK_MAX_TIME_TOPIC,
                                                                      TIMER_TOPIC, TXN_STATE_TOPIC)


def first_visible(records: Iterable[StoredMessage]) -> StoredMessage | None:
    """The message's first copy on its own topic (the one its consumer groups' offsets say were acked or not)."""
    return min((r for r in records if is_visible_copy(r)), key=lambda r: r.commit_log_offset, default=None)


def summary(msg_id: str, records: list[StoredMessage]) -> MessageSummary | None:
    """The message as its producer sent it, where it is now; None when no record is the message itself."""
    own = [r for r in records if r.properties.get(names.UNIQ_KEY) == msg_id and not r.topic.startswith(DLQ_PREFIX)
           and r.topic != OP_HALF_TOPIC]
    if not own:
        return None
    visible = first_visible(own)
    first = visible or min(own, key=lambda r: r.commit_log_offset)
    props = first.properties
    keys = props.get("KEYS")
    state = "visible" if visible else ("pending" if first.topic == HALF_TOPIC else "waiting")
    due = props.get(TIMER_OUT_MS)
    return MessageSummary(
        msg_id=msg_id, topic=props.get(REAL_TOPIC, first.topic), queue_id=int(props.get(REAL_QID, first.queue_id)),
        queue_offset=visible.queue_offset if visible else None, commit_log_offset=first.commit_log_offset,
        store_timestamp=first.store_timestamp, keys=keys.split(" ") if keys else [], tag=props.get(names.TAGS),
        message_group=props.get(MESSAGE_GROUP), deliver_at_ms=int(due) if due else None,
        producer_group=props.get(names.PRODUCER_GROUP), transaction_id=props.get(names.TRANSACTION_ID), state=state)


def summaries(records: list[StoredMessage]) -> list[MessageSummary]:
    """The messages among ``records`` (one topic's, found by a key), each once, newest first."""
    by_id: dict[str, list[StoredMessage]] = {}
    for rec in records:
        msg_id = rec.properties.get(names.UNIQ_KEY)
        if msg_id:
            by_id.setdefault(msg_id, []).append(rec)
    found = [s for msg_id, own in by_id.items() if (s := summary(msg_id, own)) is not None]
    found.sort(key=lambda s: (s.store_timestamp, s.commit_log_offset), reverse=True)
    return found


def fair_share(by_topic: Mapping[str, list[MessageSummary]], limit: int) -> list[MessageSummary]:
    """At most ``limit`` of each topic's messages (newest first in each): every topic's newest, then every topic's
    next, …, so a topic holding many messages with a key cannot crowd another's out of the answer; newest first."""
    taken = [s for s in chain.from_iterable(zip_longest(*by_topic.values())) if s is not None][:limit]
    taken.sort(key=lambda s: (s.store_timestamp, s.commit_log_offset), reverse=True)
    return taken


def journey(msg_id: str, records: list[StoredMessage], committed: Mapping[str, int]) -> MessageJourney | None:
    """The journey of ``msg_id``: its summary and its events in log order; ``committed`` is each consumer group's
    committed offset on the message's queue (a group past the message acked it)."""
    found = summary(msg_id, records)
    if found is None:
        return None
    events = [e for r in sorted(records, key=lambda r: r.commit_log_offset) if (e := event_of(r, found)) is not None]
    for e in events:
        if e.kind in _STATES and found.state == "pending":
            found.state = _STATES[e.kind]
    logged = {e.group for e in events if e.kind is Kind.ACKED}
    if found.queue_offset is not None:  # an ack older than the acks records (or one a crash lost): the group's offset says so
        events += [JourneyEvent(kind=Kind.ACKED, topic=found.topic, queue_id=found.queue_id, queue_offset=found.queue_offset,
                                group=group, detail="offset committed")
                   for group, offset in sorted(committed.items()) if offset > found.queue_offset and group not in logged]
    return MessageJourney(message=found, events=events)


def event_of(rec: StoredMessage, msg: MessageSummary) -> JourneyEvent | None:
    """What one record says happened to the message (None: a record of the transaction that says nothing of it)."""
    by_topic = _BY_TOPIC.get(rec.topic)
    if by_topic is not None:
        return by_topic(rec, msg)
    if rec.topic.startswith(DLQ_PREFIX):
        return JourneyEvent(kind=Kind.DEAD_LETTERED, at_ms=rec.store_timestamp, topic=rec.topic, queue_offset=rec.queue_offset,
                            group=rec.properties.get(CONSUMER_GROUP), detail=rec.properties.get(DLQ_REASON))
    if not is_visible_copy(rec) or rec.properties.get(names.UNIQ_KEY) != msg.msg_id:
        return None
    return _copy_event(rec)


def _copy_event(rec: StoredMessage) -> JourneyEvent | None:
    """A copy on the message's own topic: sent, released at its due time, or resent from a DLQ."""
    props = rec.properties
    at = rec.store_timestamp
    if RESENT_FROM in props:
        found = JourneyEvent(kind=Kind.RESENT, at_ms=at, detail=f"from {props[RESENT_FROM]}")
    elif TIMER_OUT_MS in props:
        found = JourneyEvent(kind=Kind.RELEASED, at_ms=at, due_ms=int(props[TIMER_OUT_MS]))
    elif props.get(names.TRANSACTION_ID):
        return None  # a transaction's committed copy: its commit op says so, with this place
    else:
        found = JourneyEvent(kind=Kind.SENT, at_ms=at, group=props.get(names.PRODUCER_GROUP))
    found.topic, found.queue_id, found.queue_offset = rec.topic, rec.queue_id, rec.queue_offset
    return found


def _half_event(rec: StoredMessage, msg: MessageSummary) -> JourneyEvent | None:
    props = rec.properties
    if props.get(names.UNIQ_KEY) != msg.msg_id:
        return None  # the half of another message the same transaction decides (a half send's ``also``)
    return JourneyEvent(kind=Kind.HALF_STORED, at_ms=rec.store_timestamp, group=props.get(names.PRODUCER_GROUP),
                        transaction_id=props.get(names.TRANSACTION_ID))


def _timer_event(rec: StoredMessage, msg: MessageSummary) -> JourneyEvent | None:
    due = rec.properties.get(TIMER_OUT_MS)
    if due is None or rec.properties.get(names.UNIQ_KEY) != msg.msg_id:
        return None  # a release marker, or the timer of another message of the same transaction
    return JourneyEvent(kind=Kind.TIMER_STORED, at_ms=rec.store_timestamp, due_ms=int(due),
                        transaction_id=rec.properties.get(names.TRANSACTION_ID))


def _op_event(rec: StoredMessage, msg: MessageSummary) -> JourneyEvent | None:
    props = rec.properties
    kind = props.get(names.OP, "")
    txid = props.get(names.TRANSACTION_ID)
    if kind == OpKind.CHECK.value:
        return JourneyEvent(kind=Kind.CHECKED, at_ms=rec.store_timestamp, group=props.get(names.PRODUCER_GROUP),
                            transaction_id=txid, answer=props.get(names.LAST_ANSWER),
                            detail=f"check {props.get(names.CHECK_TIMES, '?')}")
    event = _OP_EVENTS.get(kind)
    if event is None:
        return None
    found = JourneyEvent(kind=event, at_ms=rec.store_timestamp, transaction_id=txid, group=props.get(names.PRODUCER_GROUP))
    if event is Kind.COMMITTED and msg.queue_offset is not None:
        found.topic, found.queue_id, found.queue_offset = msg.topic, msg.queue_id, msg.queue_offset
    return found


def _journal_event(rec: StoredMessage, msg: MessageSummary) -> JourneyEvent | None:
    """A journal line naming the message's place: delivered (attempt) or nacked (reason)."""
    attempt = next((a for t, q, o, a in journal.entries_of(rec.body) if (t, q, o) == (msg.topic, msg.queue_id, msg.queue_offset)),
                   None)
    if attempt is None:
        return None
    props = rec.properties
    kind = Kind.DELIVERED if props.get(journal.JOURNAL) == journal.DELIVERED else Kind.NACKED
    return JourneyEvent(kind=kind, at_ms=rec.store_timestamp, topic=msg.topic, queue_id=msg.queue_id,
                        queue_offset=msg.queue_offset, group=props.get(journal.CONSUMER_GROUP), attempt=attempt,
                        detail=props.get(journal.NACK_REASON))


def _acks_event(rec: StoredMessage, msg: MessageSummary) -> JourneyEvent | None:
    """An ``acks`` record naming the message's place: acked, by that group, then."""
    if rec.properties.get(TXN_OP) != StateRecord.ACKS.value:
        return None
    group = next((g for g, t, q, o in decode_acks(rec.body) if (t, q, o) == (msg.topic, msg.queue_id, msg.queue_offset)), None)
    if group is None:
        return None
    return JourneyEvent(kind=Kind.ACKED, at_ms=rec.store_timestamp, topic=msg.topic, queue_id=msg.queue_id,
                        queue_offset=msg.queue_offset, group=group)


_BY_TOPIC: dict[str, Callable[[StoredMessage, MessageSummary], JourneyEvent | None]] = {
    HALF_TOPIC: _half_event, OP_HALF_TOPIC: _op_event, TIMER_TOPIC: _timer_event, journal.JOURNAL_TOPIC: _journal_event,
    TXN_STATE_TOPIC: _acks_event,
}

"""Where is my message: a message's journey by its id, and the messages sent with a key, newest first.

At most a few key-index lookups (the id, its transaction's id, its place), each capped at ``MAX_HITS`` records, so the
cost is bounded by the message's events, never by the log's size. Access: SUBSCRIBE on the message's topic (ADMIN
implies it); a message the principal may not read is answered as no message at all, like a transaction of another
producer group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from halfmq.broker.half_messages.record_names import TRANSACTION_ID, UNIQ_KEY
from halfmq.broker.journeys import reconstruct
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.key_index import position_key
from halfmq.broker.store.record import StoredMessage
from halfmq.errors import MessageNotFound
from halfmq.wire import MessageJourney, MessageSearch, MessageSummary

from .caller import Scope

if TYPE_CHECKING:
    from halfmq.broker.api.runtime import BrokerRuntime

MAX_HITS = 256  # records one lookup reads
MAX_TRANSACTIONS = 4  # transaction ids of one message followed (a resent copy is a second one at most)


def show(rt: BrokerRuntime, who: Principal, scope: Scope, msg_id: str) -> MessageJourney:
    """The journey of ``msg_id``: MessageNotFound if the index has no record of it, or the principal may not read it."""
    found = journey_of(rt, msg_id, lambda topic: rt.guard.allows(who, Action.SUBSCRIBE, Resource.topic(topic)))
    if found is None:
        raise MessageNotFound(f"no message {msg_id!r}")
    return found


def find(rt: BrokerRuntime, who: Principal, scope: Scope, key: str, since_ms: int, limit: int) -> MessageSearch:
    """The messages sent with ``key`` (their id, a key, or an index key) since ``since_ms``, newest first."""
    return search(rt, key, since_ms, limit, lambda topic: rt.guard.allows(who, Action.SUBSCRIBE, Resource.topic(topic)))


def console_search(rt: BrokerRuntime, text: str) -> dict[str, Any]:
    """The console's messages page (its session is a cluster admin): the journey when ``text`` is an id, else the search."""
    if not text:
        return {"q": "", "journey": None, "found": None}
    found = journey_of(rt, text, lambda topic: True)
    listed = None if found is not None else search(rt, text, 0, 50, lambda topic: True)
    return {"q": text, "journey": msgspec.to_builtins(found) if found else None,
            "found": msgspec.to_builtins(listed) if listed else None}


def journey_of(rt: BrokerRuntime, msg_id: str, may_read: Callable[[str], bool]) -> MessageJourney | None:
    records = _lookup(rt, msg_id)
    txids = list(dict.fromkeys(t for r in records if (t := r.properties.get(TRANSACTION_ID))))[:MAX_TRANSACTIONS]
    for txid in txids:
        records += _lookup(rt, txid)
    found = reconstruct.summary(msg_id, records)
    if found is None or not may_read(found.topic):
        return None
    if found.queue_offset is not None:  # its deliveries, nacks and acks name its place
        records += _lookup(rt, position_key(found.topic, found.queue_id, found.queue_offset))
    offsets = rt.store.offsets
    committed = {g: off for g in offsets.groups() if (off := offsets.get(g, found.topic, found.queue_id)) is not None}
    return reconstruct.journey(msg_id, list({r.commit_log_offset: r for r in records}.values()), committed)


def search(rt: BrokerRuntime, key: str, since_ms: int, limit: int, may_read: Callable[[str], bool]) -> MessageSearch:
    by_id: dict[str, list[StoredMessage]] = {}
    for rec in rt.store.keys.query(key, since_ms=since_ms, limit=MAX_HITS):  # newest first
        msg_id = rec.properties.get(UNIQ_KEY)
        if msg_id:
            by_id.setdefault(msg_id, []).append(rec)
    found: list[MessageSummary] = []
    for msg_id, records in by_id.items():
        summary = reconstruct.summary(msg_id, records)
        if summary is not None and may_read(summary.topic):
            found.append(summary)
    found.sort(key=lambda s: (s.store_timestamp, s.commit_log_offset), reverse=True)
    return MessageSearch(key=key, messages=found[:limit])


def _lookup(rt: BrokerRuntime, key: str) -> list[StoredMessage]:
    return rt.store.keys.query(key, limit=MAX_HITS)

"""Where is my message: a message's journey by its id, and the messages sent with a key, newest first.

Scoped per topic (issue 42): the key index keeps each topic's ids and keys apart (store/key_index.py), and a lookup
reads only the topics the principal may look up, so another principal's messages can neither bury a message (300 sent
with its key hid it from every search) nor stand in for it (ids sent first in one topic took over the journey of a
message in another). Access: DESCRIBE on the message's topic, which PUBLISH and SUBSCRIBE both give (ADMIN too): its
producers look up what they sent, its consumers what they got; a journey carries no body. A message on a topic the
principal may not look up is answered as no message at all. One id on messages of several topics the principal may
look up is AmbiguousMessageId, naming them; a lookup that names the topic answers its journey.

Bounded, and off the event loop (in a thread): at most ``lookup_topics`` topics when the caller names none
(TopicRequired past it), the ``lookup_index_files`` newest index files per topic, ``MAX_HITS`` records read per
stage, shared round robin among the topics (``read_fairly``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from halfmq.broker.delivery.journal import JOURNAL_TOPIC
from halfmq.broker.half_messages.record_names import TRANSACTION_ID, UNIQ_KEY
from halfmq.broker.journeys import reconstruct
from halfmq.broker.security.access import Access, ClusterAdmin
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.indexed_keys import TXN_SCOPE, position_key
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import OP_HALF_TOPIC, TXN_STATE_TOPIC, is_system_topic
from halfmq.errors import AmbiguousMessageId, MessageNotFound, TopicRequired
from halfmq.wire import MessageJourney, MessageSearch

from .caller import Scope
from .ports import StoreReads

MAX_HITS = 256  # records one stage of a lookup reads, all its topics together
MAX_TRANSACTIONS = 4  # transaction ids of one message followed (a resent copy is a second one at most)
PLACE_SCOPES = (JOURNAL_TOPIC, TXN_STATE_TOPIC)  # where a message's place is indexed: its journal lines, its acks
CONSOLE_LIMIT = 50  # messages the console's search lists

MayLookUp = Callable[[str], bool]
T = TypeVar("T")


@dataclass(eq=False)  # a use case, compared by identity
class Journeys:
    access: Access
    store: StoreReads
    lookups: asyncio.Semaphore
    lookup_topics: int
    lookup_index_files: int

    async def show(self, who: Principal, scope: Scope, msg_id: str, topic: str | None = None) -> MessageJourney:
        """The journey of ``msg_id`` (on ``topic`` when named): MessageNotFound if no topic the principal may look up has
        it, AmbiguousMessageId if several do."""
        return await self._in_a_thread(self._show, self._may_look_up(who), msg_id, topic)

    async def find(self, who: Principal, scope: Scope, key: str, since_ms: int, limit: int,
                   topic: str | None = None) -> MessageSearch:
        """The messages sent with ``key`` (their id, a key, or an index key) since ``since_ms``, newest first, on ``topic``
        when named, else on every topic the principal may look up."""
        return await self._in_a_thread(self._find, self._may_look_up(who), key, since_ms, limit, topic)

    async def console_search(self, admin: ClusterAdmin, text: str, topic: str | None = None) -> dict[str, Any]:
        """The console's messages page (its session is a cluster admin): the journey when ``text`` is the id of a message
        on one topic, else the messages with that id or key."""
        if not text:
            return {"q": "", "topic": topic or "", "journey": None, "found": None, "error": None}
        return await self._in_a_thread(self._console_search, text, topic or None)

    async def _in_a_thread(self, lookup: Callable[..., T], *args: Any) -> T:
        """Off the event loop, at most ``lookups`` at once (the rest wait their turn on the loop, costing nothing)."""
        async with self.lookups:
            return await asyncio.to_thread(lookup, *args)

    def _may_look_up(self, who: Principal) -> MayLookUp:
        return lambda topic: self.access.allows(who, Action.DESCRIBE, Resource.topic(topic))

    def _show(self, may: MayLookUp, msg_id: str, named: str | None) -> MessageJourney:
        topics = self.lookup_topics_of(may, named)
        own = owning_topics(msg_id, self.read_fairly(topics, msg_id, 0))
        if len(own) > 1:
            raise AmbiguousMessageId(f"messages on topics {', '.join(own)} have the id {msg_id!r}: name the topic",
                                     topics=own)
        found = self.journey_of(own[0], msg_id) if own else None
        if found is None:
            raise MessageNotFound(f"no message {msg_id!r}")
        return found

    def _find(self, may: MayLookUp, key: str, since_ms: int, limit: int, named: str | None) -> MessageSearch:
        by_topic = self.read_fairly(self.lookup_topics_of(may, named), key, since_ms)
        return MessageSearch(key=key, messages=reconstruct.fair_share(
            {topic: reconstruct.summaries(records) for topic, records in by_topic.items()}, limit))

    def _console_search(self, text: str, named: str | None) -> dict[str, Any]:
        answer: dict[str, Any] = {"q": text, "topic": named or "", "journey": None, "found": None, "error": None}
        try:
            topics = self.lookup_topics_of(lambda topic: True, named)
        except TopicRequired as exc:
            answer["error"] = exc.detail
            return answer
        by_topic = self.read_fairly(topics, text, 0)
        own = owning_topics(text, by_topic)
        journey = self.journey_of(own[0], text) if len(own) == 1 else None
        if journey is not None:
            answer["journey"] = msgspec.to_builtins(journey)
        else:  # a key, or an id on several topics: the list (each row names its topic); empty: "no message"
            answer["found"] = msgspec.to_builtins(MessageSearch(key=text, messages=reconstruct.fair_share(
                {topic: reconstruct.summaries(records) for topic, records in by_topic.items()}, CONSOLE_LIMIT)))
        return answer

    def lookup_topics_of(self, may: MayLookUp, named: str | None) -> list[str]:
        """The topics a lookup reads: the one named (none if it is not there or the principal may not look it up), else
        every topic the principal may look up, at most ``lookup_topics`` of them (TopicRequired past it)."""
        if named is not None:
            return [named] if self.store.topic(named) is not None and not is_system_topic(named) and may(named) else []
        topics = [t.name for t in self.store.topics.all() if not is_system_topic(t.name) and may(t.name)]
        bound = self.lookup_topics
        if len(topics) > bound:
            raise TopicRequired(f"the principal may look up {len(topics)} topics; a lookup that names none searches at most "
                                f"{bound}: name the message's topic (?topic=)", limit=bound)
        return topics

    def read_fairly(self, topics: list[str], key: str, since_ms: int) -> dict[str, list[StoredMessage]]:
        """The records carrying ``key`` in each of ``topics`` (those with any), newest first: ``MAX_HITS`` reads in all,
        round robin (one candidate of each topic, then the next), so one topic's many cannot use up another's share."""
        index = self.store.keys
        files = self.lookup_index_files
        walks = {topic: index.candidates(topic, key, since_ms, max_files=files) for topic in topics}
        found: dict[str, list[StoredMessage]] = {}
        reads = 0
        while walks and reads < MAX_HITS:
            for topic, walk in list(walks.items()):
                offset = next(walk, None)
                if offset is None:
                    del walks[topic]
                    continue
                reads += 1
                rec = index.record(topic, key, offset, since_ms)
                if rec is not None and self.still_held(rec):
                    found.setdefault(topic, []).append(rec)
                if reads == MAX_HITS:
                    break
        for records in found.values():
            records.sort(key=lambda r: r.commit_log_offset, reverse=True)
        return found

    def still_held(self, rec: StoredMessage) -> bool:
        """Whether a record the key index found is still its topic's: not below its queue's first offset (a deleted
        topic's message, whose name a topic made again has, or one retention took). The broker's own records pass."""
        if is_system_topic(rec.topic):
            return True
        return rec.queue_offset >= self.store.visible.queue_range(rec.topic, rec.queue_id)[0]

    def journey_of(self, topic: str, msg_id: str) -> MessageJourney | None:
        """The journey of the message ``msg_id`` on ``topic``: its own records (copies, half, timer, dead letters), its
        transaction's ops, and the records naming its place (deliveries, nacks, acks)."""
        index = self.store.keys
        files = self.lookup_index_files
        records = [r for r in index.query(topic, msg_id, limit=MAX_HITS, max_files=files) if self.still_held(r)]
        txids = list(dict.fromkeys(t for r in records if r.properties.get(UNIQ_KEY) == msg_id
                                   and (t := r.properties.get(TRANSACTION_ID))))[:MAX_TRANSACTIONS]
        for txid in txids:  # its ops: the halves, timers and copies of its transaction on its topic are found above
            records += [r for r in index.query(TXN_SCOPE, txid, limit=MAX_HITS, max_files=files) if r.topic == OP_HALF_TOPIC]
        found = reconstruct.summary(msg_id, records)
        if found is None:
            return None
        if found.queue_offset is not None:  # its deliveries, nacks and acks name its place
            place = position_key(found.topic, found.queue_id, found.queue_offset)
            for scope in PLACE_SCOPES:
                records += index.query(scope, place, limit=MAX_HITS, max_files=files)
        offsets = self.store.offsets
        committed = {g: off for g in offsets.groups() if (off := offsets.get(g, found.topic, found.queue_id)) is not None}
        return reconstruct.journey(msg_id, list({r.commit_log_offset: r for r in records}.values()), committed)


def owning_topics(msg_id: str, by_topic: dict[str, list[StoredMessage]]) -> list[str]:
    """The topics among ``by_topic`` (records found by ``msg_id``) that hold a message with that id, by name."""
    return sorted(topic for topic, records in by_topic.items() if reconstruct.summary(msg_id, records) is not None)

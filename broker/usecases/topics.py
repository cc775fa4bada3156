"""Topics: create, list, describe, delete, and read a queue's messages by offset."""

from __future__ import annotations

from dataclasses import dataclass

from msgspec import UNSET

from halfmq.broker.messages.view import message_view
from halfmq.broker.security.access import Access, Publisher
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.record import StoredMessage
from halfmq.broker.store.topics import TopicConfig, is_system_topic
from halfmq.errors import InvalidQueueId, SystemTopicForbidden, TopicInUse
from halfmq.wire import OffsetReadResponse, TopicAlter, TopicCreate, TopicDeleted, TopicInfo, TopicList

from .caller import Scope
from .ports import Durable, LogEnd, PendingHalves, StoreReads, TopicArrivals, TopicHolders, TopicRemoval, WritableTopics
from .views import Views


@dataclass(eq=False)  # a use case, compared by identity
class ManageTopics:
    access: Access
    topics: WritableTopics
    store: StoreReads
    views: Views
    durable: Durable
    log_end: LogEnd
    removal: TopicRemoval
    holders: TopicHolders
    halves: PendingHalves
    arrivals: TopicArrivals

    async def create(self, who: Principal, scope: Scope, body: TopicCreate) -> tuple[TopicInfo, bool]:
        """The topic's view, and whether it was created now (an existing one with the same queue count is no error).

        A new topic is answered once its record is durable (in a broker set, on the replicas the ack mode asks for).
        """
        self.access.authorize(who, Action.ADMIN, Resource.topic(body.name), scope)
        cfg, created = self.topics.create(body.name, body.queues, body.retention_ms, body.retention_bytes)
        if created:
            await self.durable(self.log_end())  # the topic record is the last write of this loop pass's request
        return self.views.topic_view(cfg), created

    async def alter(self, who: Principal, scope: Scope, topic: str, body: TopicAlter) -> TopicInfo:
        """Change a topic's own retention (a field left out stays; null: the broker's), answered once its ``topic``
        record is durable; the next retention pass applies it (decision 052, "Per-topic limits")."""
        self.access.authorize(who, Action.ADMIN, Resource.topic(topic), scope)
        return await self.alter_now(topic, body)

    async def alter_now(self, topic: str, body: TopicAlter) -> TopicInfo:
        """``alter`` once the caller may (the console's administrator, whose grant covers every topic)."""
        cfg = self.topics.get(topic)
        retention_ms = cfg.retention_ms if body.retention_ms is UNSET else body.retention_ms
        retention_bytes = cfg.retention_bytes if body.retention_bytes is UNSET else body.retention_bytes
        cfg, end = self.topics.set_retention(topic, retention_ms, retention_bytes)  # type: ignore[arg-type]  # UNSET: replaced
        if end:
            await self.durable(end)
        return self.views.topic_view(cfg)

    def may_alter(self, who: Principal, scope: Scope, topic: str) -> None:
        """AccessDenied unless ``who`` may ``alter`` the topic (a Kafka AlterConfigs that only validates)."""
        self.access.authorize(who, Action.ADMIN, Resource.topic(topic), scope)

    async def delete(self, who: Principal, scope: Scope, topic: str, force: bool) -> TopicDeleted:
        """Delete the topic through the log (durable when this returns): it is no longer listed, described or read,
        and every group's offsets on it go. Refused while it has pending halves or deliveries in flight, unless
        ``force``. Its files stay until retention takes them; a topic created again under the name starts empty."""
        self.access.authorize(who, Action.ADMIN, Resource.topic(topic), scope)
        return await self.delete_now(topic, force)

    async def delete_now(self, topic: str, force: bool) -> TopicDeleted:
        """``delete`` once the caller may (the console's administrator, whose grant covers every topic)."""
        if is_system_topic(topic):
            raise SystemTopicForbidden(f"{topic!r} is the broker's own topic; delete a DLQ's group instead")
        cfg = self.topics.get(topic)
        pending, held = self.halves.pending_on(topic), self.holders.in_flight(topic=topic)
        if (pending or held) and not force:
            raise TopicInUse(f"{pending} pending half messages and {held} deliveries in flight: end the transactions and "
                             "let consumers ack, or force the deletion")
        ends = [self.store.visible.queue_range(topic, qid)[1] for qid in range(cfg.queues)]
        end = self.removal.delete_topic(topic)
        self.holders.forget(topic=topic)
        await self.durable(end)
        return TopicDeleted(topic=topic, queue_ends=ends, pending_halves=pending, in_flight=held)

    def list_visible(self, who: Principal) -> TopicList:
        """The topics ``who`` may describe."""
        visible = [cfg for cfg in self.store.topics.all() if self.access.allows(who, Action.DESCRIBE, Resource.topic(cfg.name))]
        return TopicList(topics=[self.views.topic_view(cfg) for cfg in visible])

    def describe(self, who: Principal, scope: Scope, topic: str) -> TopicInfo:
        self.access.authorize(who, Action.DESCRIBE, Resource.topic(topic), scope)
        return self.views.topic_view(self.topics.get(topic))

    def read_messages(self, who: Principal, scope: Scope, topic: str, queue_id: int, offset: int, limit: int) -> OffsetReadResponse:
        """Up to ``limit`` visible messages of one queue from ``offset``, and where to read next; damaged records by offset."""
        entries, (lo, hi) = self.read_records(who, scope, topic, queue_id, offset, limit)
        next_offset = entries[-1].queue_offset + 1 if entries else min(max(offset, lo), hi)
        # damaged records: reported by the store (log, metric); the reader learns what it did not get (sent only when some are)
        return OffsetReadResponse(messages=[message_view(e) for e in entries if type(e) is not DamagedEntry], next_offset=next_offset,
                                  damaged_offsets=[e.queue_offset for e in entries if type(e) is DamagedEntry])

    def read_records(self, who: Principal, scope: Scope, topic: str, queue_id: int, offset: int,
                     limit: int) -> tuple[list[StoredMessage | DamagedEntry], tuple[int, int]]:
        """Up to ``limit`` visible records of one queue from ``offset`` as stored, and the queue's visible range (first,
        end): the HTTP front's offset read and the Kafka front's Fetch."""
        self.access.authorize(who, Action.SUBSCRIBE, Resource.topic(topic), scope)
        self._queue_of(topic, queue_id)
        return self.store.visible.read_entries(topic, queue_id, offset, limit), self.store.visible.queue_range(topic, queue_id)

    async def wait_for_records(self, topics: list[str], seconds: float) -> bool:
        """Until one of ``topics`` may have new visible records or ``seconds`` pass (a Kafka Fetch's ``max_wait_ms``):
        woken by the store's arrivals as the HTTP and gRPC receives' long polls are, never by polling; the caller reads
        again (what it may read, its reads authorized). False once the delivery service closes (the broker stops, a
        set's leader steps down): answer now with what there is."""
        if topics and seconds > 0:
            await self.arrivals.wait_any(topics, seconds)
        return not self.arrivals.closing

    def queue_range(self, who: Principal, scope: Scope, topic: str, queue_id: int, at_ms: int | None = None) -> tuple[int, int, int | None]:
        """A queue's visible (first, end), and with ``at_ms`` the first offset stored at or after it (Kafka's ListOffsets)."""
        self.access.authorize(who, Action.DESCRIBE, Resource.topic(topic), scope)
        self._queue_of(topic, queue_id)
        first, end = self.store.visible.queue_range(topic, queue_id)
        return first, end, None if at_ms is None else self.store.visible.offset_for_time(topic, queue_id, at_ms)

    def _queue_of(self, topic: str, queue_id: int) -> TopicConfig:
        cfg = self.topics.get(topic)
        if not 0 <= queue_id < cfg.queues:
            raise InvalidQueueId(f"topic {topic!r} has queues 0..{cfg.queues - 1}, not {queue_id}")
        return cfg

    def route(self, who: Principal, scope: Scope, topic: str) -> TopicConfig:
        """A RocketMQ 5 QueryRoute: the topic's queues for one allowed to describe it (as auto-create would make it)."""
        self.access.authorize(who, Action.DESCRIBE, Resource.topic(topic), scope)
        cfg, _ = self.topics.writable(topic)
        return cfg

    def assignment(self, who: Principal, scope: Scope, group: str, topic: str) -> TopicConfig:
        """A RocketMQ 5 QueryAssignment: the topic a consumer of ``group`` may read (it must exist)."""
        self.access.subscriber(who, scope, group, topic)
        return self.topics.get(topic)

    def publishing_to(self, publisher: Publisher) -> TopicConfig:
        """The topic a publisher writes to, as it is or as auto-create would make it."""
        cfg, _ = self.topics.writable(publisher.topic)
        return cfg

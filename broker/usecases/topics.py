"""Topics: create, list, describe, and read a queue's messages by offset."""

from __future__ import annotations

from typing import TYPE_CHECKING

from halfmq.broker.messages.view import message_view
from halfmq.broker.protocol import TopicCreate
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.damaged_records import DamagedEntry
from halfmq.broker.store.topics import TopicConfig
from halfmq.errors import InvalidQueueId
from halfmq.wire import OffsetReadResponse, TopicInfo, TopicList

from .caller import Scope
from .views import topic_view

if TYPE_CHECKING:
    from halfmq.broker.runtime import BrokerRuntime


async def create(rt: BrokerRuntime, who: Principal, scope: Scope, body: TopicCreate) -> tuple[TopicInfo, bool]:
    """The topic's view, and whether it was created now (an existing one with the same queue count is no error).

    A new topic is answered once its record is durable (in a broker set, on the replicas the ack mode asks for).
    """
    rt.access.authorize(who, Action.ADMIN, Resource.topic(body.name), scope)
    cfg, created = rt.topics.create(body.name, body.queues)
    if created:
        await rt.durable(rt.store.commit_log.end_offset)  # the topic record is the last write of this loop pass's request
    return topic_view(rt, cfg), created


def list_visible(rt: BrokerRuntime, who: Principal) -> TopicList:
    """The topics ``who`` may describe."""
    visible = [cfg for cfg in rt.store.topics.all() if rt.access.allows(who, Action.DESCRIBE, Resource.topic(cfg.name))]
    return TopicList(topics=[topic_view(rt, cfg) for cfg in visible])


def describe(rt: BrokerRuntime, who: Principal, scope: Scope, topic: str) -> TopicInfo:
    rt.access.authorize(who, Action.DESCRIBE, Resource.topic(topic), scope)
    return topic_view(rt, rt.topics.get(topic))


def read_messages(rt: BrokerRuntime, who: Principal, scope: Scope, topic: str, queue_id: int, offset: int, limit: int) -> OffsetReadResponse:
    """Up to ``limit`` visible messages of one queue from ``offset``, and where to read next; damaged records by offset."""
    rt.access.authorize(who, Action.SUBSCRIBE, Resource.topic(topic), scope)
    cfg = rt.topics.get(topic)
    if not 0 <= queue_id < cfg.queues:
        raise InvalidQueueId(f"topic {topic!r} has queues 0..{cfg.queues - 1}, not {queue_id}")
    entries = rt.store.visible.read_entries(topic, queue_id, offset, limit)
    lo, hi = rt.store.visible.queue_range(topic, queue_id)
    next_offset = entries[-1].queue_offset + 1 if entries else min(max(offset, lo), hi)
    # damaged records: reported by the store (log, metric); the reader learns what it did not get (sent only when some are)
    return OffsetReadResponse(messages=[message_view(e) for e in entries if type(e) is not DamagedEntry], next_offset=next_offset,
                              damaged_offsets=[e.queue_offset for e in entries if type(e) is DamagedEntry])


def route(rt: BrokerRuntime, who: Principal, scope: Scope, topic: str) -> TopicConfig:
    """A RocketMQ 5 QueryRoute: the topic's queues for one allowed to describe it (as auto-create would make it)."""
    rt.access.authorize(who, Action.DESCRIBE, Resource.topic(topic), scope)
    cfg, _ = rt.topics.writable(topic)
    return cfg


def assignment(rt: BrokerRuntime, who: Principal, scope: Scope, group: str, topic: str) -> TopicConfig:
    """A RocketMQ 5 QueryAssignment: the topic a consumer of ``group`` may read (it must exist)."""
    rt.access.authorize(who, Action.SUBSCRIBE, Resource.group(group), scope)
    rt.access.authorize(who, Action.SUBSCRIBE, Resource.topic(topic), scope)
    return rt.topics.get(topic)

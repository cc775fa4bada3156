"""Consumer groups for operators: lag per queue, the group listing, the DLQ and putting a dead letter back.

Thin: the DLQ logic is halfmq.broker.delivery.dead_letters. Listings need
``admin`` on the cluster, a DLQ ``admin`` on its group, a group's lag ``describe``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from halfmq.broker.delivery import dead_letters
from halfmq.broker.messages.view import message_view
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.message_store import PutItem, PutResult
from halfmq.broker.store.topics import is_system_topic
from halfmq.wire import ConsumerGroupInfo, DeadLetters, DlqResent, GroupList, Message

from .caller import Scope
from .operator_actions import cluster_admin
from .views import dlq_page, group_lag, group_summary

if TYPE_CHECKING:
    from halfmq.broker.runtime import BrokerRuntime


def describe(rt: BrokerRuntime, who: Principal, scope: Scope, group: str) -> ConsumerGroupInfo:
    rt.access.authorize(who, Action.DESCRIBE, Resource.group(group), scope)
    return group_lag(rt, group)


def list_groups(rt: BrokerRuntime, who: Principal, scope: Scope, system: bool) -> GroupList:
    """Every consumer group's summary; the broker's own bookkeeping readers only with ``system``."""
    cluster_admin(rt, who, scope)
    groups = [group_summary(rt, g) for g in rt.delivery.views.groups()]
    if not system:
        groups = [g for g in groups if not g.topics or not all(is_system_topic(t) for t in g.topics)]
    return GroupList(count=len(groups), groups=groups)


def list_dlq(rt: BrokerRuntime, who: Principal, scope: Scope, group: str, offset: int, limit: int) -> DeadLetters:
    rt.access.authorize(who, Action.ADMIN, Resource.group(group), scope)
    messages: list[Message] = [message_view(m) for m in dead_letters.dead_letters(rt.store, group, offset, limit)]
    depth = dead_letters.depth(rt.store, group)
    return DeadLetters(group=group, depth=depth, messages=messages,
                       page=dlq_page(offset, [m.queue_offset for m in messages], depth, limit))


async def resend_dlq_now(rt: BrokerRuntime, group: str, offset: int) -> tuple[PutItem, PutResult]:
    """Put a DLQ message back on its own topic and queue (it is delivered again), durable when this returns."""
    item = dead_letters.resend_item(rt.store, group, offset)
    [result], end = rt.store.put([item])
    await rt.durable(end)
    return item, result


async def resend_dlq(rt: BrokerRuntime, who: Principal, scope: Scope, group: str, offset: int) -> DlqResent:
    rt.access.authorize(who, Action.ADMIN, Resource.group(group), scope)
    if offset < 0:
        offset = -1  # an unknown offset, answered 404 below
    item, result = await resend_dlq_now(rt, group, offset)
    return DlqResent(group=group, dlq_offset=offset, msg_id=item.properties.get("UNIQ_KEY", ""),
                     topic=result.topic, queue_id=result.queue_id, queue_offset=result.queue_offset,
                     commit_log_offset=result.commit_log_offset)

"""Consumer groups for operators: lag per queue, the group listing, the DLQ and putting a dead letter back.

Thin: the DLQ logic is halfmq.broker.delivery.dead_letters. Listings need
``admin`` on the cluster, a DLQ ``admin`` on its group, a group's lag ``describe``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from halfmq.broker.delivery import dead_letters
from halfmq.broker.messages.view import message_view
from halfmq.broker.security.access import Access, ClusterAdmin
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.store_types import PutItem, PutResult
from halfmq.broker.store.topics import is_system_topic
from halfmq.wire import ConsumerGroupInfo, DeadLetters, DlqResent, GroupList, Message

from .caller import Scope
from .ports import Durable, GroupProgress, StoreReads
from .views import Views, dlq_page

Put = Callable[[list[PutItem]], tuple[list[PutResult], int]]  # one atomic write group (``MessageStore.put``)


@dataclass(eq=False)  # a use case, compared by identity
class ManageGroups:
    access: Access
    deliveries: GroupProgress
    store: StoreReads
    put: Put
    views: Views
    durable: Durable

    def describe(self, who: Principal, scope: Scope, group: str) -> ConsumerGroupInfo:
        self.access.authorize(who, Action.DESCRIBE, Resource.group(group), scope)
        return self.views.group_lag(group)

    def list_groups(self, who: Principal, scope: Scope, system: bool) -> GroupList:
        """Every consumer group's summary; the broker's own bookkeeping readers only with ``system``."""
        self.access.cluster_admin(who, scope)
        groups = [self.views.group_summary(g) for g in self.deliveries.groups()]
        if not system:
            groups = [g for g in groups if not g.topics or not all(is_system_topic(t) for t in g.topics)]
        return GroupList(count=len(groups), groups=groups)

    def list_dlq(self, who: Principal, scope: Scope, group: str, offset: int, limit: int) -> DeadLetters:
        self.access.authorize(who, Action.ADMIN, Resource.group(group), scope)
        messages: list[Message] = [message_view(m) for m in self.views.dead_letters(group, offset, limit)]
        depth = self.views.dlq_depth(group)
        return DeadLetters(group=group, depth=depth, messages=messages,
                           page=dlq_page(offset, [m.queue_offset for m in messages], depth, limit))

    async def resend_dlq_now(self, admin: ClusterAdmin, group: str, offset: int) -> tuple[PutItem, PutResult]:
        """Put a DLQ message back on its own topic and queue (it is delivered again), durable when this returns."""
        return await self._resend(group, offset)

    async def _resend(self, group: str, offset: int) -> tuple[PutItem, PutResult]:
        item = dead_letters.resend_item(self.store, group, offset)  # type: ignore[arg-type]  # the store's reads
        [result], end = self.put([item])
        await self.durable(end)
        return item, result

    async def resend_dlq(self, who: Principal, scope: Scope, group: str, offset: int) -> DlqResent:
        self.access.authorize(who, Action.ADMIN, Resource.group(group), scope)
        if offset < 0:
            offset = -1  # an unknown offset, answered 404 below
        item, result = await self._resend(group, offset)
        return DlqResent(group=group, dlq_offset=offset, msg_id=item.properties.get("UNIQ_KEY", ""),
                         topic=result.topic, queue_id=result.queue_id, queue_offset=result.queue_offset,
                         commit_log_offset=result.commit_log_offset)

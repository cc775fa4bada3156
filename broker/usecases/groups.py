"""Consumer groups for operators: lag per queue, the group listing, the DLQ and putting a dead letter back, offset resets.

Thin: the DLQ logic is halfmq.broker.delivery.dead_letters, the reset's plan halfmq.broker.delivery.offset_reset.
Listings need ``admin`` on the cluster, a DLQ or an offset reset ``admin`` on its group, a group's lag ``describe``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from halfmq.broker.delivery import dead_letters
from halfmq.broker.delivery.dlq_redrive import RedriveJob, Redrives, RedriveState
from halfmq.broker.delivery.offset_reset import QueuePosition, ResetTarget, ResetTo, plan_reset
from halfmq.broker.messages.names import NameKind, checked_name
from halfmq.broker.messages.view import message_view
from halfmq.broker.security.access import Access, ClusterAdmin, GroupAdmin
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.store_types import PutItem, PutResult
from halfmq.broker.store.topics import SYSTEM_TOPICS, dlq_topic, is_system_topic
from halfmq.errors import (
    BrokerError,
    ConsumerGroupNotFound,
    DlqMessageNotFound,
    GroupHasInFlight,
    InvalidOffsetReset,
    InvalidQueueId,
    SystemTopicForbidden,
    TopicNotFound,
)
from halfmq.wire import (
    ConsumerGroupInfo,
    DeadLetters,
    DlqRedrive,
    DlqResent,
    GroupDeleted,
    GroupList,
    Message,
    OffsetReset,
    QueueReset,
    ResetOffsetsRequest,
)

from .caller import Scope
from .ports import Durable, GroupProgress, OffsetResets, StoreReads
from .views import Views, dlq_page

log = logging.getLogger(__name__)

Put = Callable[[list[PutItem]], tuple[list[PutResult], int]]  # one atomic write group (``MessageStore.put``)


@dataclass(eq=False)  # a use case, compared by identity
class ManageGroups:
    """``wall_ms``: the wall clock in milliseconds, which a reset to a duration ago counts back from; ``redrives``: the
    bulk DLQ redrives' jobs and their bounds."""

    access: Access
    deliveries: GroupProgress
    store: StoreReads
    put: Put
    views: Views
    durable: Durable
    resets: OffsetResets
    wall_ms: Callable[[], int]
    redrives: Redrives
    _redrive_stops: dict[str, asyncio.Event] = field(default_factory=dict, init=False)

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

    async def reset_offsets(self, who: Principal, scope: Scope, group: str, topic: str, body: ResetOffsetsRequest) -> OffsetReset:
        """Plan the group's offsets on ``topic`` (all queues, or ``queue_id``) from where they are and ``to``; unless a dry
        run, apply the plan through the log (durable when this returns). Refused while deliveries are in flight, unless
        forced: ``offset_reset.plan_reset``."""
        return await self.reset_offsets_now(self.access.group_admin(who, scope, group), group, topic, body)

    async def reset_offsets_now(self, admin: GroupAdmin | ClusterAdmin, group: str, topic: str, body: ResetOffsetsRequest) -> OffsetReset:
        checked_name(NameKind.CONSUMER_GROUP, group)  # (the console's form names it; a route's path was checked already)
        to = ResetTo(ResetTarget(body.to), timestamp_ms=body.timestamp_ms, ago_ms=body.ago_ms, offset=body.offset)
        queue_id, dry_run, force = body.queue_id, body.dry_run, body.force
        cfg = self.store.topic(topic)
        if cfg is None:
            raise TopicNotFound(f"topic {topic!r} does not exist")
        if topic in SYSTEM_TOPICS or topic.startswith("RMQ_SYS_"):
            raise SystemTopicForbidden(f"{topic} is internal to the broker: its offsets cannot be reset")
        if queue_id is not None and queue_id >= cfg.queues:
            raise InvalidOffsetReset(f"topic {topic!r} has {cfg.queues} queues: there is no queue {queue_id}")
        at_ms = to.at_ms(self.wall_ms())
        visible = self.store.visible
        positions = []
        for qid, committed, in_flight in self.resets.positions(group, topic):
            if queue_id is not None and qid != queue_id:
                continue
            first, end = visible.queue_range(topic, qid)
            at = visible.offset_for_time(topic, qid, at_ms) if at_ms is not None else None
            positions.append(QueuePosition(qid, committed, first, end, in_flight, at))
        moves = plan_reset(positions, to, force=force)
        if not dry_run:
            await self.durable(self.resets.reset_offsets(group, topic, [(m.queue_id, m.to_offset) for m in moves]))
        return OffsetReset(group=group, topic=topic, to=to.target.value, applied=not dry_run,
                           queues=[QueueReset(queue_id=m.queue_id, from_offset=m.from_offset, to_offset=m.to_offset,
                                              in_flight=m.in_flight) for m in moves])

    def may_describe(self, who: Principal, scope: Scope, group: str) -> None:
        """AccessDenied unless ``who`` may describe ``group`` (a Kafka group the front coordinates: its members are not
        in the consumer groups' progress)."""
        self.access.authorize(who, Action.DESCRIBE, Resource.group(group), scope)

    def may_join(self, who: Principal, scope: Scope, group: str) -> None:
        """AccessDenied unless ``who`` may consume as ``group`` (a Kafka member joins a group before it names topics)."""
        self.access.authorize(who, Action.SUBSCRIBE, Resource.group(group), scope)

    # --- a Kafka consumer group's committed offsets (the Kafka front's OffsetCommit and OffsetFetch) ----------------
    def committed_offsets(self, who: Principal, scope: Scope, group: str, topic: str) -> dict[int, int]:
        """The group's committed offset per queue of ``topic`` that has one: the same offsets the HTTP and gRPC fronts'
        groups use. A queue the group never committed (nor acked, nor had reset) is left out, so a Kafka client is
        answered "none" (-1) and its ``auto.offset.reset`` decides where it starts, as on Kafka's brokers."""
        self.access.subscriber(who, scope, group, topic)
        cfg = self.store.topic(topic)
        if cfg is None:
            raise TopicNotFound(f"topic {topic!r} does not exist")
        recorded = ((qid, self.store.offsets.get(group, topic, qid)) for qid in range(cfg.queues))
        return {qid: committed for qid, committed in recorded if committed is not None}

    async def commit_offsets(self, who: Principal, scope: Scope, group: str, topic: str, offsets: list[tuple[int, int]]) -> None:
        """Set the group's committed offsets (queue id, offset) through the log (an ``offsets-reset`` record, so a restart
        and a set's next leader have them), answered once durable."""
        self.access.subscriber(who, scope, group, topic)
        cfg = self.store.topic(topic)
        if cfg is None:
            raise TopicNotFound(f"topic {topic!r} does not exist")
        if any(not 0 <= qid < cfg.queues for qid, _ in offsets):
            raise InvalidQueueId(f"topic {topic!r} has queues 0..{cfg.queues - 1}")
        await self.durable(self.resets.reset_offsets(group, topic, offsets))

    # --- deleting a group -----------------------------------------------------------------------------------------
    async def delete_group(self, who: Principal, scope: Scope, group: str, force: bool) -> GroupDeleted:
        """Forget the group's offsets and progress on every topic, through the log (durable when this returns); refused
        while it holds deliveries, unless ``force``. Its DLQ topic stays (a topic; its running redrive stops)."""
        admin = self.access.group_admin(who, scope, group)
        return await self.delete_group_now(admin, group, force)

    async def delete_group_now(self, admin: GroupAdmin | ClusterAdmin, group: str, force: bool) -> GroupDeleted:
        if group not in self.deliveries.groups():
            raise ConsumerGroupNotFound(f"consumer group {group!r} has not consumed anything")
        topics = sorted(t.topic for t in self.views.group_lag(group).topics)
        held = self.resets.in_flight(group)
        if held and not force:
            raise GroupHasInFlight(f"{held} deliveries in flight: wait until they are acked or their invisible time ends, "
                                   "or force the deletion")
        await self.durable(self.resets.delete_group(group))
        stop = self._redrive_stops.get(group)
        if stop is not None:
            self.redrives.get(group).end(RedriveState.STOPPED, self.wall_ms())
            stop.set()
        return GroupDeleted(group=group, topics=topics, in_flight=held)

    # --- bulk DLQ redrives ----------------------------------------------------------------------------------------
    def start_redrive(self, who: Principal, scope: Scope, group: str, max_messages: int | None, rate: float | None) -> DlqRedrive:
        """Start resending ``group``'s dead letters (those there now, or the first ``max_messages``) to their topics at
        ``rate`` a second, in the background, one at a time through ``_resend``; its progress is ``redrive``'s."""
        admin = self.access.group_admin(who, scope, group)
        return self.start_redrive_now(admin, group, max_messages, rate)

    def start_redrive_now(self, admin: GroupAdmin | ClusterAdmin, group: str, max_messages: int | None, rate: float | None) -> DlqRedrive:
        pace = self.redrives.rate_for(rate)
        topic = dlq_topic(group)
        first, end = self.store.visible.queue_range(topic, 0) if self.store.topic(topic) is not None else (0, 0)
        job = self.redrives.start(group, first, end, max_messages, pace, self.wall_ms())
        stop = self._redrive_stops[group] = asyncio.Event()
        task = asyncio.get_running_loop().create_task(self._redrive(job, stop), name=f"dlq-redrive {group}")
        task.add_done_callback(lambda _: self._redrive_stops.pop(group, None) if self._redrive_stops.get(group) is stop else None)
        return redrive_view(job)

    async def _redrive(self, job: RedriveJob, stop: asyncio.Event) -> None:
        """The job's loop: wait its pace (or a stop), resend the next dead letter, until every one passed."""
        started = time.monotonic()
        try:
            while not job.finished:
                try:
                    await asyncio.wait_for(stop.wait(), job.delay(time.monotonic() - started))
                    return  # stopped (the state was set by stop_redrive)
                except TimeoutError:
                    pass
                try:
                    await self._resend(job.group, job.next_offset)
                    job.passed(True)
                except DlqMessageNotFound:  # damaged, or its topic deleted: passed over, counted
                    job.passed(False)
            job.end(RedriveState.DONE, self.wall_ms())
        except BrokerError as failed:
            job.end(RedriveState.FAILED, self.wall_ms(), f"{failed.code}: {failed}")
        except Exception as failed:  # the job says so; the broker goes on
            log.exception("the redrive of %s's DLQ failed", job.group)
            job.end(RedriveState.FAILED, self.wall_ms(), repr(failed))

    def redrive(self, who: Principal, scope: Scope, group: str) -> DlqRedrive:
        """The group's latest redrive: where it is and what it did."""
        self.access.authorize(who, Action.ADMIN, Resource.group(group), scope)
        return redrive_view(self.redrives.get(group))

    def stop_redrive(self, who: Principal, scope: Scope, group: str) -> DlqRedrive:
        """Stop the group's running redrive after the resend under way (what was resent stays resent)."""
        return self.stop_redrive_now(self.access.group_admin(who, scope, group), group)

    def stop_redrive_now(self, admin: GroupAdmin | ClusterAdmin, group: str) -> DlqRedrive:
        job = self.redrives.get(group)
        job.end(RedriveState.STOPPED, self.wall_ms())
        stop = self._redrive_stops.get(group)
        if stop is not None:
            stop.set()
        return redrive_view(job)

    def stop_every_redrive(self) -> None:
        """At shutdown: every running job ends after its resend under way (none resumes after a restart)."""
        for group, stop in list(self._redrive_stops.items()):
            self.redrives.get(group).end(RedriveState.STOPPED, self.wall_ms())
            stop.set()


def redrive_view(job: RedriveJob) -> DlqRedrive:
    return DlqRedrive(group=job.group, state=job.state.value, first_offset=job.first_offset, end_offset=job.end_offset,
                      next_offset=job.next_offset, total=job.total, resent=job.resent, missing=job.missing,
                      rate_per_second=job.rate, started_timestamp=job.started_ms, ended_timestamp=job.ended_ms, error=job.error)

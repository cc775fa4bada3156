"""Send a half message (RocketMQ's first step of a transaction): invisible to consumers until it is committed.

One write for both fronts (``write_half``): the HTTP route (``store_half``, single and batch) adds the
principal's checks and the idempotent producer's numbering; the gRPC front's producer group is its topic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from halfmq.broker.half_messages.half_records import Tx
from halfmq.broker.idempotence.producer_ids import SentHalf
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.messages.names import NameKind, checked_name
from halfmq.broker.observability.tracing import traced_half
from halfmq.broker.security.access import Access, Publisher
from halfmq.broker.security.policy import Action, Principal, Resource
from halfmq.broker.store.message_store import PutItem
from halfmq.broker.store.topics import TopicConfig
from halfmq.broker.usecases.answers import half_answer
from halfmq.wire import HalfSendRequest, HalfSendResult, OutgoingMessage, SendStatus

from .caller import Scope
from .durability import FlushTimedOut, flush_outcome
from .numbered_send import NumberedSend
from .ports import Durable, HalfMessages, LogEnd, Sender, SendWindows, TopicCreation, WritableTopics


def producer_group(name: str) -> str:
    """``name`` if it is a valid producer group name (InvalidGroupName otherwise): the one place this is checked."""
    return checked_name(NameKind.PRODUCER_GROUP, name)


@dataclass(frozen=True, slots=True)
class StoredHalf:
    """A half message written (or a numbered repeat found); durable once the commit log's ``end`` is on disk."""

    answer: HalfSendResult
    end: int
    duplicate: bool = False


Target = tuple[TopicConfig, bool]  # a writable topic and whether it exists yet (``TopicService.writable``)


@dataclass(eq=False)  # a use case, compared by identity
class HalfSending:
    access: Access
    topics: WritableTopics
    sender: Sender
    created: TopicCreation
    half_messages: HalfMessages
    windows: SendWindows
    durable: Durable
    log_end: LogEnd

    def write_half(self, group: str, cfg: TopicConfig, exists: bool, message: OutgoingMessage,
                   then: Callable[[list[PutItem]], PutItem] | None = None,
                   also: Sequence[tuple[Target, OutgoingMessage]] = ()) -> tuple[Tx, int]:
        """The half's write for a checked producer ``group``, without its fsync wait: a new topic is created first.

        ``also``: the companions the same local transaction decides, each with its topic; every message is prepared
        (and so checked) before any topic is created or anything written, so bad input changes nothing.
        """
        item = self.sender.prepare(cfg, message)
        companions = [self.sender.prepare(target, companion) for (target, _), companion in also]
        for target, existed in [(cfg, exists), *(target for target, _ in also)]:
            if not existed and self.created.topic(target.name) is None:
                self.created.create_topic(target.name, target.queues)
        return self.half_messages.send_half(group, item, cfg.queues, then, also=companions)

    def _companion_targets(self, who: Principal, scope: Scope, body: HalfSendRequest) -> list[tuple[Target, OutgoingMessage]]:
        """Each companion's topic, once the principal may publish to it (refused otherwise, before anything is written)."""
        targets: list[tuple[Target, OutgoingMessage]] = []
        for companion in body.also:
            self.access.authorize(who, Action.PUBLISH, Resource.topic(companion.topic), scope)
            targets.append((self.topics.writable(companion.topic), companion))
        return targets

    @traced_half
    def store_half(self, who: Principal, scope: Scope, body: HalfSendRequest) -> StoredHalf:
        """One half send's checks and write, without its fsync wait (the single and the batch route share it)."""
        group = producer_group(body.producer_group)
        for resource in (Resource.group(group), Resource.topic(body.topic)):
            self.access.authorize(who, Action.PUBLISH, resource, scope)
        also = self._companion_targets(who, scope, body)
        numbered = NumberedSend.of(self.windows, body, who.name, SendKind.HALF, group, body.topic)
        if numbered is not None and numbered.earlier is not None:  # a repeat inside the window: its stored answer
            # (the first attempt may still be waiting for its fsync: the caller waits for the log's end)
            repeat = half_answer(numbered.earlier, SendStatus.SEND_OK, duplicate=True)  # type: ignore[arg-type]  # a half's key: a SentHalf
            return StoredHalf(repeat, self.log_end(), duplicate=True)
        cfg, exists = self.topics.writable(body.topic)
        tx, end = self.write_half(group, cfg, exists, body.message, numbered.record if numbered else None, also)
        sent = SentHalf(tx.transaction_id, tx.msg_id, tx.half_clog_offset, tx.half_offset)
        if numbered is not None:
            numbered.sent(tx.half_clog_offset, 1 + len(also))
        return StoredHalf(half_answer(sent, SendStatus.SEND_OK), end)

    async def send_half(self, who: Principal, scope: Scope, body: HalfSendRequest) -> HalfSendResult:
        """A half send's answer once it is durable (or its flush status)."""
        half = self.store_half(who, scope, body)
        return with_flush_status(half, await flush_outcome(self.durable, half.end))

    async def flushed(self, end: int) -> FlushTimedOut | None:
        """Wait once for a batch of halves' ``end`` (the batch route): the timeout as a value."""
        return await flush_outcome(self.durable, end)

    async def send_rocketmq_half(self, publisher: Publisher, target: Target, message: OutgoingMessage) -> Tx:
        """A RocketMQ 5 transactional message: its producer group is its topic; durable when this returns."""
        cfg, exists = target
        tx, end = self.write_half(producer_group(publisher.topic), cfg, exists, message)
        await self.durable(end)
        return tx


def with_flush_status(half: StoredHalf, timed_out: FlushTimedOut | None) -> HalfSendResult:
    """The half's answer once its fsync wait ended; a timed-out wait keeps the half (status FLUSH_*), a repeat raises.

    A broker set's replicas answer FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE through the exception's ``send_status``.
    """
    if timed_out is None:
        return half.answer
    if half.duplicate:
        raise timed_out
    return msgspec.structs.replace(half.answer, status=SendStatus(getattr(timed_out, "send_status", SendStatus.FLUSH_DISK_TIMEOUT.value)))

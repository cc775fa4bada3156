"""Producing plain messages: validate a whole batch, pick queues, append it as one group.

Nothing is written until every message of the batch has passed validation, so
a bad message refuses the batch and changes nothing.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

import crc32c

from halfmq.broker.delivery.fifo_gate import MESSAGE_GROUP
from halfmq.broker.messages.ids import RandomIds
from halfmq.broker.messages.names import NameKind, checked_name
from halfmq.broker.messages.rules import (
    MessageLimits,
    checked_message_group,
    decode_body,
    message_properties,
    own_uniq_key,
    properties_bytes,
)
from halfmq.broker.store.disk_watermarks import DiskWatch
from halfmq.broker.store.message_store import GroupTooLarge, MessageStore, PutItem, PutResult
from halfmq.broker.store.topics import (
    MAX_QUEUES,
    MAX_RETENTION_BYTES,
    MAX_RETENTION_MS,
    MIN_RETENTION_BYTES,
    MIN_RETENTION_MS,
    TopicConfig,
    is_system_topic,
)
from halfmq.broker.timers import routing
from halfmq.errors import (
    BadBodyEncoding,
    DiskAlmostFull,
    InvalidQueueCount,
    InvalidQueueId,
    InvalidRetention,
    MessageTooLarge,
    PropertiesTooLarge,
    SystemTopicForbidden,
    TopicAlreadyExists,
    TopicNotFound,
)
from halfmq.wire import OutgoingMessage


@dataclass(frozen=True)
class TopicPolicy:
    auto_create: bool = True
    default_queues: int = 4
    limits: MessageLimits = MessageLimits()


class TopicService:
    def __init__(self, store: MessageStore, policy: TopicPolicy) -> None:
        self.store = store
        self.policy = policy

    def create(self, name: str, queues: int | None, retention_ms: int | None = None,
               retention_bytes: int | None = None) -> tuple[TopicConfig, bool]:
        """Create a user topic; creating an existing one with the same queue count (and the same retention, when the
        call names one) is a no-op."""
        self._check_name(name)
        queues = self.policy.default_queues if queues is None else queues
        if not 1 <= queues <= MAX_QUEUES:
            raise InvalidQueueCount(f"a topic has 1 to {MAX_QUEUES} queues, not {queues}")
        checked_retention(retention_ms, retention_bytes)
        existing = self.store.topic(name)
        if existing is not None:
            if existing.queues != queues:
                raise TopicAlreadyExists(f"topic {name!r} exists with {existing.queues} queues")
            for asked, has, kind in ((retention_ms, existing.retention_ms, "retention_ms"),
                                     (retention_bytes, existing.retention_bytes, "retention_bytes")):
                if asked is not None and asked != has:
                    raise TopicAlreadyExists(f"topic {name!r} exists with {kind} {has}: change it with PATCH /v1/topics/{name}")
            return existing, False
        return self.store.create_topic(name, queues, retention_ms, retention_bytes), True

    def set_retention(self, name: str, retention_ms: int | None, retention_bytes: int | None) -> tuple[TopicConfig, int]:
        """Change a user topic's own retention (None: the broker's); the topic, and the log end to wait on durable."""
        self._check_name(name)
        checked_retention(retention_ms, retention_bytes)
        self.get(name)
        return self.store.topic_writes.set_retention(name, retention_ms, retention_bytes)

    def get(self, name: str) -> TopicConfig:
        cfg = self.store.topic(name)
        if cfg is None:
            raise TopicNotFound(f"topic {name!r} does not exist")
        return cfg

    def writable(self, name: str) -> tuple[TopicConfig, bool]:
        """The topic a producer may send to, and whether it exists yet.

        A missing topic comes back as the config auto-create would give it, not
        yet saved: the caller creates it only once the whole batch is valid.
        """
        self._check_name(name)
        cfg = self.store.topic(name)
        if cfg is not None:
            return cfg, True
        if not self.policy.auto_create:
            raise TopicNotFound(f"topic {name!r} does not exist and auto-create is off")
        return TopicConfig(name, self.policy.default_queues, 0), False

    @staticmethod
    def _check_name(name: str) -> None:
        if is_system_topic(name):
            raise SystemTopicForbidden(f"{name!r} is a system topic")
        checked_name(NameKind.TOPIC, name)


def checked_retention(retention_ms: int | None, retention_bytes: int | None) -> None:
    """InvalidRetention unless each limit given is within its bounds (before anything changes)."""
    if retention_ms is not None and not MIN_RETENTION_MS <= retention_ms <= MAX_RETENTION_MS:
        raise InvalidRetention(f"retention_ms is {MIN_RETENTION_MS} to {MAX_RETENTION_MS} (or null: the broker's), "
                               f"not {retention_ms}")
    if retention_bytes is not None and not MIN_RETENTION_BYTES <= retention_bytes <= MAX_RETENTION_BYTES:
        raise InvalidRetention(f"retention_bytes is {MIN_RETENTION_BYTES} to {MAX_RETENTION_BYTES} (or null: the "
                               f"broker's), not {retention_bytes}")


class SendService:
    def __init__(self, store: MessageStore, topics: TopicService, *, timer_max_delay_ms: int = routing.DEFAULT_MAX_DELAY_MS,
                 clock: Callable[[], float] = time.time, disk: DiskWatch | None = None) -> None:
        self.store = store
        self.topics = topics
        self.disk = disk  # past its refuse-sends watermark, every new message is refused (disk_watermarks.py)
        self.timer_max_delay_ms = timer_max_delay_ms
        self._clock = clock
        self._round_robin: dict[str, itertools.count[int]] = {}
        self._uniq_keys = RandomIds(upper=True)  # UNIQ_KEY: 32 hex digits no client can predict (issue 42)

    def refuse_if_disk_full(self) -> None:
        """DiskAlmostFull while the data dir's disk is past its refuse-sends watermark: every new message (a send, a
        half, a producer transaction's) comes through ``prepare``/``prepare_many``, so none is stored; what settles or
        frees (acks, ends, retries, timers) does not, and goes on."""
        if self.disk is not None and self.disk.sends_refused:
            self.disk.count_refused()
            raise DiskAlmostFull(f"the data dir's disk is {self.disk.used_ratio:.1%} full, past HALFMQ_BROKER_DISK_REFUSE_SENDS_RATIO "
                                 f"({self.disk.marks.refuse_sends_ratio}): sends resume once it is {self.disk.marks.resume_margin:.0%} under it; "
                                 "nothing was stored",
                                 retry_after=self.disk.retry_after)

    def prepare(self, cfg: TopicConfig, msg: OutgoingMessage) -> PutItem:
        self.refuse_if_disk_full()
        body = decode_body(msg)
        policy = self.topics.policy.limits
        props = message_properties(msg, self._uniq_keys, policy)
        if msg.message_group is not None:
            props[MESSAGE_GROUP] = checked_message_group(msg)
        if msg.deliver_at_ms is not None or msg.delay_ms is not None:  # kept as sent: ``route`` places it when visible
            props.update(routing.requested(msg.deliver_at_ms, msg.delay_ms, self._now_ms(), self.timer_max_delay_ms))
        props_size = properties_bytes(props)
        if props_size > policy.max_properties_bytes:
            raise PropertiesTooLarge(f"the keys, tag and properties take {props_size} bytes; at most "
                                     f"{policy.max_properties_bytes}", limit=policy.max_properties_bytes)
        size = len(body) + props_size
        limit = policy.max_message_size
        if size > limit:
            raise MessageTooLarge(f"message of {size} bytes exceeds the limit of {limit} bytes", limit=limit)
        return PutItem(cfg.name, self.select_queue(cfg, msg), body, props, binary=msg.body_encoding == "base64", tag=msg.tag)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def select_queue(self, cfg: TopicConfig, msg: OutgoingMessage) -> int:
        if msg.queue_id is not None:
            if msg.queue_id >= cfg.queues:
                raise InvalidQueueId(f"topic {cfg.name!r} has queues 0..{cfg.queues - 1}, not {msg.queue_id}")
            return msg.queue_id
        if msg.message_group is not None:  # a group lands in one queue (checked_message_group: no queue_id with it)
            return crc32c.crc32c(msg.message_group.encode()) % cfg.queues
        if msg.sharding_key is not None:
            return crc32c.crc32c(msg.sharding_key.encode()) % cfg.queues
        counter = self._round_robin.setdefault(cfg.name, itertools.count())
        return next(counter) % cfg.queues

    def prepare_many(self, cfg: TopicConfig, messages: list[OutgoingMessage]) -> list[PutItem]:
        """``prepare`` for a batch, with the common message (a UTF-8 body, at most its own UNIQ_KEY) done inline.

        Same checks, queue choice and ids as ``prepare``; a batch of 100 spends
        most of its broker time here, so the plain case skips the general path.
        A message naming its queue is plain too: every record a Kafka client
        produces names its partition.
        """
        self.refuse_if_disk_full()
        limit = self.topics.policy.limits.max_message_size
        counter = self._round_robin.setdefault(cfg.name, itertools.count())
        new_key = self._uniq_keys
        items = []
        for msg in messages:
            if (msg.keys or msg.tag or msg.sharding_key is not None
                    or msg.message_group is not None or msg.body_encoding != "utf-8"
                    or msg.deliver_at_ms is not None or msg.delay_ms is not None):
                items.append(self.prepare(cfg, msg))
                continue
            if msg.properties:
                key = own_uniq_key(msg)  # the SDK's messages carry their own id
                if key is None:
                    items.append(self.prepare(cfg, msg))
                    continue
            else:
                key = new_key()
            try:
                body = msg.body.encode("utf-8")
            except UnicodeEncodeError:
                raise BadBodyEncoding("the body is not valid UTF-8 text (lone surrogates?)") from None
            size = len(body) + 10 + len(key)  # + the UNIQ_KEY property's bytes (ASCII), as prepare counts them
            if size > limit:
                raise MessageTooLarge(f"message of {size} bytes exceeds the limit of {limit} bytes", limit=limit)
            queue = next(counter) % cfg.queues if msg.queue_id is None else self.select_queue(cfg, msg)
            items.append(PutItem(cfg.name, queue, body, {"UNIQ_KEY": key}))
        return items

    def send(self, topic: str, messages: list[OutgoingMessage],
             then: Callable[[list[PutItem]], PutItem] | None = None) -> tuple[list[PutResult], int]:
        """Validate and append a batch as one write group; ``then`` adds a last record to the group built from the
        batch (an idempotent producer's sequence record), so both land together or not at all."""
        cfg, exists = self.topics.writable(topic)
        items = self.prepare_many(cfg, messages)
        if any(m.deliver_at_ms is not None or m.delay_ms is not None for m in messages):
            now_ms = self._now_ms()
            items = routing.route_all(self.store, items, now_ms, self.timer_max_delay_ms)
        group = items if then is None else [*items, then(items)]
        if not exists:
            if not self.store.fits(group):  # checked before the topic is created: bad input changes nothing
                raise MessageTooLarge("the batch does not fit one commit-log segment; send smaller batches")
            self.store.create_topic(cfg.name, cfg.queues)
        try:
            results, end = self.store.put(group)
        except GroupTooLarge:
            raise MessageTooLarge("the batch does not fit one commit-log segment; send smaller batches") from None
        return (results if then is None else results[:-1]), end

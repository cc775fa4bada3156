"""Producing plain messages: validate a whole batch, pick queues, append it as one group.

Nothing is written until every message of the batch has passed validation, so
a bad message refuses the batch and changes nothing.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import crc32c

from halfmq.broker.counter_ids import CounterIds
from halfmq.broker.delivery.fifo_gate import MESSAGE_GROUP
from halfmq.broker.half_messages import record_names as tx_names
from halfmq.broker.half_messages.check_policy import immunity_seconds
from halfmq.broker.names import NameKind, checked_name
from halfmq.broker.protocol import OutgoingMessage
from halfmq.broker.store.message_store import GroupTooLarge, MessageStore, PutItem, PutResult
from halfmq.broker.store.topics import MAX_QUEUES, TopicConfig, is_system_topic
from halfmq.broker.timers import routing
from halfmq.errors import (
    BadBodyEncoding,
    InvalidMessageGroup,
    InvalidProperty,
    InvalidQueueCount,
    InvalidQueueId,
    InvalidRequest,
    MessageTooLarge,
    ReservedProperty,
    SystemTopicForbidden,
    TopicAlreadyExists,
    TopicNotFound,
)
from halfmq.wire.messages import message_group_conflict, message_group_problem

# Properties only the broker may set: a producer forging them could impersonate a
# transaction, a retry or a DLQ entry.
RESERVED_PROPERTIES = frozenset({
    tx_names.TRAN_MSG, tx_names.REAL_TOPIC, tx_names.REAL_QID, tx_names.PRODUCER_GROUP, tx_names.CHECK_TIMES,
    "RECONSUME_TIME", "ORIGIN_MESSAGE_ID", "CONSUMER_GROUP", tx_names.TRANSACTION_ID, tx_names.HALF_PART, *routing.RESERVED,
    MESSAGE_GROUP,  # the message_group field is the one way in
})


@dataclass(frozen=True)
class TopicPolicy:
    auto_create: bool = True
    default_queues: int = 4
    max_message_size: int = 4 * 1024 * 1024


class TopicService:
    def __init__(self, store: MessageStore, policy: TopicPolicy) -> None:
        self.store = store
        self.policy = policy

    def create(self, name: str, queues: int | None) -> tuple[TopicConfig, bool]:
        """Create a user topic; creating an existing one with the same queue count is a no-op."""
        self._check_name(name)
        queues = self.policy.default_queues if queues is None else queues
        if not 1 <= queues <= MAX_QUEUES:
            raise InvalidQueueCount(f"a topic has 1 to {MAX_QUEUES} queues, not {queues}")
        existing = self.store.topic(name)
        if existing is not None:
            if existing.queues != queues:
                raise TopicAlreadyExists(f"topic {name!r} exists with {existing.queues} queues")
            return existing, False
        return self.store.create_topic(name, queues), True

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


def decode_body(msg: OutgoingMessage) -> bytes:
    if msg.body_encoding == "base64":
        try:
            return base64.b64decode(msg.body, validate=True)
        except (binascii.Error, ValueError):
            raise BadBodyEncoding("body_encoding is base64 but the body is not valid base64") from None
    try:
        return msg.body.encode("utf-8")
    except UnicodeEncodeError:
        raise BadBodyEncoding("the body is not valid UTF-8 text (lone surrogates?)") from None


def check_property_text(msg: OutgoingMessage) -> None:
    """Properties are stored RocketMQ-style (name \\x01 value \\x02): a separator inside a name or
    value would let a producer forge properties, so those two control characters are refused."""
    keys = [msg.keys] if isinstance(msg.keys, str) else msg.keys or []
    for text in (*keys, msg.tag or "", *msg.properties.keys(), *msg.properties.values()):
        if "\x01" in text or "\x02" in text:
            raise InvalidRequest("keys, tag and properties must not contain the control characters \\u0001 or \\u0002")
    if any(not name for name in msg.properties):
        raise InvalidRequest("property names must not be empty")


_UNIQ_KEY = re.compile(r"[!-~]{1,128}", re.ASCII)


def uniq_key(text: str) -> str:
    """A producer's own message id: 1-128 visible ASCII characters (RocketMQ's are 32 hex digits, uuids fit too).

    It becomes the msg_id consumers deduplicate by and that logs and views show.
    """
    if not _UNIQ_KEY.fullmatch(text):
        raise ValueError(f"1 to 128 visible ASCII characters, not {text[:40]!r}")
    return text


# Properties producers may set that the broker reads: a value it cannot use is refused at send time,
# never found later by a view or the check service.
INTERPRETED_PROPERTIES: dict[str, Callable[[str], object]] = {
    "UNIQ_KEY": uniq_key,
    "CHECK_IMMUNITY_TIME_IN_SECONDS": immunity_seconds,
}


def check_interpreted_properties(properties: dict[str, str]) -> None:
    for name in INTERPRETED_PROPERTIES.keys() & properties.keys():
        try:
            INTERPRETED_PROPERTIES[name](properties[name])
        except ValueError as exc:
            raise InvalidProperty(f"property {name} must be {exc}", property=name) from None


def own_uniq_key(msg: OutgoingMessage) -> str | None:
    """The producer's UNIQ_KEY when it is the message's only property and valid, else None (the general path decides).

    The SDK sets UNIQ_KEY on every message; the general path's checks (separators,
    reserved names, interpreted values) all pass for one valid UNIQ_KEY, so it can skip them.
    """
    props = msg.properties
    if len(props) != 1:
        return None
    key = props.get("UNIQ_KEY")
    return key if key is not None and _UNIQ_KEY.fullmatch(key) else None


def message_properties(msg: OutgoingMessage, new_key: Callable[[], str]) -> dict[str, str]:
    if not (msg.properties or msg.keys or msg.tag):  # the common case: nothing to check
        return {"UNIQ_KEY": new_key()}
    if not (msg.keys or msg.tag):
        key = own_uniq_key(msg)
        if key is not None:  # the SDK's case: its own id and nothing else
            return {"UNIQ_KEY": key}
    check_property_text(msg)
    bad = RESERVED_PROPERTIES.intersection(msg.properties)
    if bad:
        raise ReservedProperty(f"properties {sorted(bad)} are reserved for the broker")
    check_interpreted_properties(msg.properties)
    props = dict(msg.properties)
    if msg.keys:
        props["KEYS"] = msg.keys if isinstance(msg.keys, str) else " ".join(msg.keys)
    if msg.tag:
        props["TAGS"] = msg.tag
    if "UNIQ_KEY" not in props:
        props["UNIQ_KEY"] = new_key()
    return props


def checked_message_group(msg: OutgoingMessage) -> str:
    """A message's group, INVALID_MESSAGE_GROUP unless 1-64 bytes without control characters (RocketMQ's proxy rule),
    INVALID_REQUEST with a queue_id or another sharding_key (the group picks its queue)."""
    group = msg.message_group
    assert group is not None
    problem = message_group_problem(group)
    if problem:
        raise InvalidMessageGroup(problem)
    conflict = message_group_conflict(group, msg.sharding_key, msg.queue_id)
    if conflict:
        raise InvalidRequest(conflict)
    return group


class SendService:
    def __init__(self, store: MessageStore, topics: TopicService, *, timer_max_delay_ms: int = routing.DEFAULT_MAX_DELAY_MS,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.topics = topics
        self.timer_max_delay_ms = timer_max_delay_ms
        self._clock = clock
        self._round_robin: dict[str, itertools.count[int]] = {}
        self._uniq_keys = CounterIds(upper=True)  # UNIQ_KEY, as RocketMQ's client writes it

    def prepare(self, cfg: TopicConfig, msg: OutgoingMessage) -> PutItem:
        body = decode_body(msg)
        props = message_properties(msg, self._uniq_keys)
        if msg.message_group is not None:
            props[MESSAGE_GROUP] = checked_message_group(msg)
        if msg.deliver_at_ms is not None or msg.delay_ms is not None:  # kept as sent: ``route`` places it when visible
            props.update(routing.requested(msg.deliver_at_ms, msg.delay_ms, self._now_ms(), self.timer_max_delay_ms))
        size = len(body) + sum(len(k) + len(v) for k, v in props.items())
        limit = self.topics.policy.max_message_size
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
        """
        limit = self.topics.policy.max_message_size
        counter = self._round_robin.setdefault(cfg.name, itertools.count())
        new_key = self._uniq_keys
        items = []
        for msg in messages:
            if (msg.keys or msg.tag or msg.queue_id is not None or msg.sharding_key is not None
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
            size = len(body) + 8 + len(key)  # + len("UNIQ_KEY") + len(key), as prepare counts it
            if size > limit:
                raise MessageTooLarge(f"message of {size} bytes exceeds the limit of {limit} bytes", limit=limit)
            items.append(PutItem(cfg.name, next(counter) % cfg.queues, body, {"UNIQ_KEY": key}))
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

"""The operators' views: topics, consumer groups, dead letters, producers, health."""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, UnsetType

from halfmq.wire.base import _Request, _Wire
from halfmq.wire.messages import Message


class TopicCreate(_Request, omit_defaults=True):
    """POST /v1/topics: a topic's name, its queue count (None: the broker's default) and its own retention (None: the
    broker's ``HALFMQ_BROKER_RETENTION``/``_RETENTION_BYTES``); ``retention_bytes`` counts per queue, as Kafka's per
    partition."""

    name: str
    queues: int | None = None
    retention_ms: int | None = None
    retention_bytes: int | None = None


class TopicAlter(_Request, omit_defaults=True):
    """PATCH /v1/topics/{topic}: the limits to change; a field left out stays, null goes back to the broker's."""

    retention_ms: int | None | UnsetType = UNSET
    retention_bytes: int | None | UnsetType = UNSET


class QueueInfo(_Wire):
    """A queue's offsets: ``min_offset`` is its earliest retained offset (retention, the topic's own limits or a
    deleted topic's end moved it), ``max_offset`` one past its last message."""

    queue_id: int
    min_offset: int
    max_offset: int


class TopicInfo(_Wire, omit_defaults=True):
    """A topic, its queues' offset ranges and its own retention (absent: the broker's)."""

    name: str
    queues: list[QueueInfo]
    retention_ms: int | None = None
    retention_bytes: int | None = None


class TopicList(_Wire):
    topics: list[TopicInfo]


class GroupQueueState(_Wire):
    queue_id: int
    committed_offset: int
    max_offset: int
    lag: int
    in_flight: int
    retention_skipped: int = 0  # messages retention deleted before the group received them (since the broker started)


class GroupTopicState(_Wire):
    topic: str
    queues: list[GroupQueueState]


class ConsumerGroupInfo(_Wire):
    """A consumer group's committed offset, lag and in-flight deliveries per topic and queue."""

    group: str
    topics: list[GroupTopicState]


class GroupSummary(_Wire):
    group: str
    topics: list[str]
    lag: int
    in_flight: int
    retrying: int
    dlq_depth: int


class GroupList(_Wire):
    count: int
    groups: list[GroupSummary]


class DlqPage(_Wire):
    """Which dead letters a page shows and where the pages before and after it start (None at either end)."""

    first: int | None
    last: int | None
    shown: int
    depth: int
    previous: int | None
    next: int | None


class DeadLetters(_Wire):
    group: str
    depth: int
    messages: list[Message]
    page: DlqPage


class DlqResent(_Wire):
    group: str
    dlq_offset: int
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int


class ResetOffsetsRequest(_Request, omit_defaults=True):
    """Where a consumer group's committed offsets on a topic go (``delivery.offset_reset``): all its queues, or one."""

    to: Literal["earliest", "latest", "timestamp", "duration", "offset"]
    queue_id: Annotated[int, Meta(ge=0, description="one queue; all of the topic's when absent")] | None = None
    timestamp_ms: Annotated[int, Meta(ge=0, description="to: timestamp: the first message stored at or after it")] | None = None
    ago_ms: Annotated[int, Meta(ge=0, description="to: duration: the first message stored at or after this long ago")] | None = None
    offset: Annotated[int, Meta(ge=0, description="to: offset: this queue offset (clamped to each queue's range)")] | None = None
    dry_run: Annotated[bool, Meta(description="answer the plan, change nothing")] = False
    force: Annotated[bool, Meta(description="reset although deliveries are in flight (they are delivered again)")] = False


class DlqRedriveRequest(_Request, omit_defaults=True):
    """A bulk redrive of a group's DLQ: every dead letter there now (or the first ``max_messages``), at a rate."""

    max_messages: Annotated[int, Meta(ge=1, description="at most this many (default: all there now)")] | None = None
    rate_per_second: Annotated[float, Meta(gt=0, description="resends a second (default: HALFMQ_BROKER_DLQ_REDRIVE_RATE)")] | None = None


class QueueReset(_Wire):
    """One queue of an offset reset: its committed offset before and after, and the deliveries it had in flight."""

    queue_id: int
    from_offset: int
    to_offset: int
    in_flight: int


class OffsetReset(_Wire):
    """A consumer group's offset reset on a topic: the plan per queue, and whether it was applied (not a dry run)."""

    group: str
    topic: str
    to: str
    applied: bool
    queues: list[QueueReset]


class DlqRedrive(_Wire):
    """A bulk redrive of a consumer group's DLQ: where it is (``next_offset`` of ``first_offset``..``end_offset``), what
    it did, and its state (running, done, stopped, failed)."""

    group: str
    state: str
    first_offset: int
    end_offset: int
    next_offset: int
    total: int
    resent: int
    missing: int
    rate_per_second: float
    started_timestamp: int
    ended_timestamp: int | None = None
    error: str | None = None


class GroupDeleted(_Wire):
    """A deleted consumer group: the topics it had offsets on, and the deliveries it held (forced)."""

    group: str
    topics: list[str]
    in_flight: int


class TopicDeleted(_Wire):
    """A deleted topic: its queues' ends when it went, and what it held then (forced)."""

    topic: str
    queue_ends: list[int]
    pending_halves: int
    in_flight: int


class ProducerEntry(_Wire):
    client_id: str
    check_url: str | None = None
    last_heartbeat_timestamp: int | None = None  # epoch ms; None for a member restored or replayed and not heard since


class ProducerGroup(_Wire):
    producer_group: str
    producers: list[ProducerEntry]


class ProducerList(_Wire):
    groups: list[ProducerGroup]


class HeartbeatResult(_Wire):
    producer_group: str
    client_id: str
    expires_in: float


class Health(_Wire):
    status: str
    commit_log_end_offset: int
    flushed_offset: int
    flush_mode: str | None = None
    topics: int | None = None
    store_problem: str | None = None
    recovery_seconds: float | None = None

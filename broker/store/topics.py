"""Topic metadata: names, queue counts, and which names the system reserves."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .atomic_file import read_json, write_json

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
TXN_STATE_TOPIC = "HALFMQ_TXN_STATE"  # producer transactions (Kafka semantics): init, begin, commit, abort records
# Timed messages (RocketMQ 5's name): queue 0 holds each until it is due, queue 1 the markers of their releases.
TIMER_TOPIC = "RMQ_SYS_WHEEL_TIMER"
TIMER_QUEUE = 0
RELEASE_QUEUE = 1
TIMER_QUEUES = 2
TIMER_OUT_MS = "TIMER_OUT_MS"  # a timed message's due time (epoch ms); its timer entry's consume-queue code holds it too
# Where a half message or a timer goes once it becomes visible (RocketMQ's names, read by the domain).
REAL_TOPIC = "REAL_TOPIC"
REAL_QID = "REAL_QID"
RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
SYSTEM_TOPICS = frozenset({HALF_TOPIC, OP_HALF_TOPIC, CHECK_MAX_TIME_TOPIC, TXN_STATE_TOPIC, "SCHEDULE_TOPIC_XXXX"})

MAX_QUEUES = 64
# A topic's own retention (POST/PATCH /v1/topics): a second (a test's) to ten years; any positive byte count
MIN_RETENTION_MS = 1_000
MAX_RETENTION_MS = 10 * 365 * 24 * 3600 * 1000
MIN_RETENTION_BYTES = 1
MAX_RETENTION_BYTES = 2**62


def dlq_topic(group: str) -> str:
    return f"{DLQ_PREFIX}{group}"


SYSTEM_GROUP = "CID_SYS_RMQ_TRANS"  # the half-message scan's position in the half and op queues (RocketMQ's name)


def is_system_group(group: str) -> bool:
    """The broker's own consumer groups (the half-message scan's position): in no operator view of groups."""
    return group == SYSTEM_GROUP or group.startswith("CID_RMQ_SYS_")


def is_system_topic(name: str) -> bool:
    return name in SYSTEM_TOPICS or name.startswith(("RMQ_SYS_", RETRY_PREFIX, DLQ_PREFIX))


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """A topic's definition. ``retention_ms``/``retention_bytes``: its own limits (each queue's messages older, or
    beyond the newest bytes, become unreadable; longer than the broker's, they pin their segments); None: the broker's
    (docs/decisions/052-retention-by-whole-segments-and-pins.md, "Per-topic limits")."""

    name: str
    queues: int
    created_at: int
    retention_ms: int | None = None
    retention_bytes: int | None = None

    @property
    def own_retention(self) -> bool:
        return self.retention_ms is not None or self.retention_bytes is not None


class TopicTable:
    """Durable map of topic name → config; rewritten atomically on every change (changes are rare).

    ``put`` changes memory only once the file holds the change, so nothing can
    depend on a topic a crash would forget. ``learn`` is for recovery, which
    finds topics in the commit log and the consume queues and saves them once.
    """

    REMEDY = "restore it from a backup, or move it aside to rebuild the topics from the consume-queue directories"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.found = path.exists()
        self._topics: dict[str, TopicConfig] = read_json(path, {}, _parse_topics, self.REMEDY)
        self._unsaved = False
        # where each deleted topic's ``topic-deleted`` record is in the log (memory: the record sets it at each start)
        self.deleted_at: dict[str, int] = {}

    def get(self, name: str) -> TopicConfig | None:
        return self._topics.get(name)

    def all(self) -> list[TopicConfig]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    def put(self, name: str, queues: int, retention_ms: int | None = None, retention_bytes: int | None = None) -> TopicConfig:
        """Add or change a topic durably (OSError, and no change, when the file cannot be written)."""
        old = self._topics.get(name)
        cfg = TopicConfig(name, queues, old.created_at if old else int(time.time() * 1000), retention_ms, retention_bytes)
        topics = {**self._topics, name: cfg}
        self._write(topics)
        self._topics = topics
        self._unsaved = False
        return cfg

    def remove(self, name: str, at: int) -> None:
        """Forget a topic durably (an operator deleted it, by a record at log offset ``at``); OSError, and no change,
        when the file cannot be written."""
        self.deleted_at[name] = max(self.deleted_at.get(name, 0), at)
        if name not in self._topics:
            return
        topics = {n: c for n, c in self._topics.items() if n != name}
        self._write(topics)
        self._topics = topics
        self._unsaved = False

    def learn(self, name: str, queues: int) -> TopicConfig:
        """Add or widen a topic in memory only (its retention kept); ``save_if_changed`` makes it durable."""
        old = self._topics.get(name)
        cfg = (TopicConfig(name, queues, int(time.time() * 1000)) if old is None
               else TopicConfig(name, queues, old.created_at, old.retention_ms, old.retention_bytes))
        self._topics[name] = cfg
        self._unsaved = True
        return cfg

    def learn_retention(self, name: str, retention_ms: int | None, retention_bytes: int | None) -> None:
        """Set a known topic's own retention in memory only (a ``topic`` record read back); ``save_if_changed`` saves it."""
        old = self._topics.get(name)
        if old is None or (old.retention_ms, old.retention_bytes) == (retention_ms, retention_bytes):
            return
        self._topics[name] = TopicConfig(name, old.queues, old.created_at, retention_ms, retention_bytes)
        self._unsaved = True

    def save_if_changed(self) -> None:
        if self._unsaved:
            self._write(self._topics)
            self._unsaved = False

    def _write(self, topics: dict[str, TopicConfig]) -> None:
        write_json(self.path, {"topics": {n: _row(c) for n, c in topics.items()}})


def _row(cfg: TopicConfig) -> dict[str, int]:
    row = {"queues": cfg.queues, "created_at": cfg.created_at}
    if cfg.retention_ms is not None:
        row["retention_ms"] = cfg.retention_ms
    if cfg.retention_bytes is not None:
        row["retention_bytes"] = cfg.retention_bytes
    return row


def _parse_topics(raw: dict) -> dict[str, TopicConfig]:
    topics = {}
    for name, cfg in raw["topics"].items():
        queues = cfg["queues"]
        if not isinstance(queues, int) or queues < 1:
            raise ValueError(f"topic {name!r} has {queues!r} queues")
        limits = [cfg.get(kind) for kind in ("retention_ms", "retention_bytes")]
        if any(limit is not None and (not isinstance(limit, int) or limit < 1) for limit in limits):
            raise ValueError(f"topic {name!r} has retention {limits!r}")
        topics[name] = TopicConfig(name, queues, cfg.get("created_at", 0), *limits)
    return topics

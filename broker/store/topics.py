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
    name: str
    queues: int
    created_at: int


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

    def put(self, name: str, queues: int) -> TopicConfig:
        """Add or change a topic durably (OSError, and no change, when the file cannot be written)."""
        cfg = TopicConfig(name, queues, int(time.time() * 1000))
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
        """Add or widen a topic in memory only; ``save_if_changed`` makes it durable."""
        cfg = TopicConfig(name, queues, int(time.time() * 1000))
        self._topics[name] = cfg
        self._unsaved = True
        return cfg

    def save_if_changed(self) -> None:
        if self._unsaved:
            self._write(self._topics)
            self._unsaved = False

    def _write(self, topics: dict[str, TopicConfig]) -> None:
        write_json(self.path, {"topics": {n: {"queues": c.queues, "created_at": c.created_at} for n, c in topics.items()}})


def _parse_topics(raw: dict) -> dict[str, TopicConfig]:
    topics = {}
    for name, cfg in raw["topics"].items():
        queues = cfg["queues"]
        if not isinstance(queues, int) or queues < 1:
            raise ValueError(f"topic {name!r} has {queues!r} queues")
        topics[name] = TopicConfig(name, queues, cfg.get("created_at", 0))
    return topics

"""Topic metadata: names, queue counts, and which names the system reserves."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from .atomic_file import read_json, write_json

HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
SYSTEM_TOPICS = frozenset({HALF_TOPIC, OP_HALF_TOPIC, CHECK_MAX_TIME_TOPIC, "SCHEDULE_TOPIC_XXXX"})

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,127}$")
MAX_QUEUES = 64


def retry_topic(group: str) -> str:
    return f"{RETRY_PREFIX}{group}"


def dlq_topic(group: str) -> str:
    return f"{DLQ_PREFIX}{group}"


def is_system_topic(name: str) -> bool:
    return name in SYSTEM_TOPICS or name.startswith(("RMQ_SYS_", RETRY_PREFIX, DLQ_PREFIX))


def is_valid_user_name(name: str) -> bool:
    return bool(NAME_PATTERN.fullmatch(name))


@dataclass(frozen=True, slots=True)
class TopicConfig:
    name: str
    queues: int
    created_at: int


class TopicTable:
    """Durable map of topic name → config; rewritten atomically on every change (changes are rare)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        raw = read_json(path, {"topics": {}})
        self._topics = {name: TopicConfig(name, cfg["queues"], cfg.get("created_at", 0)) for name, cfg in raw["topics"].items()}

    def get(self, name: str) -> TopicConfig | None:
        return self._topics.get(name)

    def all(self) -> list[TopicConfig]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    def put(self, name: str, queues: int) -> TopicConfig:
        cfg = TopicConfig(name, queues, int(time.time() * 1000))
        self._topics[name] = cfg
        self._save()
        return cfg

    def _save(self) -> None:
        write_json(self.path, {"topics": {n: {"queues": c.queues, "created_at": c.created_at} for n, c in self._topics.items()}})

"""Recalling a timed message before it is due (RocketMQ 5.3's RecallMessage): a release that delivers nothing.

A timed message's send answers a recall handle naming its timer: the real topic, the timer's queue offset in
RMQ_SYS_WHEEL_TIMER/0, its commit-log offset and its message id. The handle is not a secret the broker signs but a
claim it checks against its own log (as RocketMQ's handle is): the timer queue's entry at that offset must sit at
that commit-log offset and its record must carry that topic and id, so an edited or made-up handle names nothing and
is refused (INVALID_RECALL_HANDLE), and it stays valid on every node of a set and across restarts, with no key.

A recall is written as a release marker (queue 1) naming the timer, with no message before it: the same record the
release service writes, so the timer index drops the timer the same way at start, on a leader and on every
follower, and a recalled message is never delivered, also after kill -9. The check and the write run on the event
loop with no await between them, like the release service's ``due`` and its write, so a timer is never both
released and recalled.
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Callable
from dataclasses import dataclass

from halfmq.broker.store.message_store import MessageStore
from halfmq.broker.store.store_types import PutItem
from halfmq.broker.store.topics import REAL_TOPIC, RELEASE_QUEUE, TIMER_OUT_MS, TIMER_QUEUE, TIMER_TOPIC
from halfmq.errors import InvalidRecallHandle, RecallTooLate

from .timer_index import TimerIndex, encode_marker

SEP = "\x1f"
VERSION = "r1"
RECALLED = "RECALLED"  # a recall marker's property: the recalled message's id (a release marker has none)


@dataclass(frozen=True, slots=True)
class RecallHandle:
    topic: str  # the message's real topic
    timer_offset: int  # its timer's offset in RMQ_SYS_WHEEL_TIMER/0
    commit_log_offset: int
    msg_id: str

    def encode(self) -> str:
        raw = SEP.join((VERSION, self.topic, str(self.timer_offset), str(self.commit_log_offset), self.msg_id))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> RecallHandle:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            version, topic, timer_offset, commit_log_offset, msg_id = raw.split(SEP)
            if version != VERSION:
                raise ValueError(version)
            handle = cls(topic, int(timer_offset), int(commit_log_offset), msg_id)
        except (ValueError, binascii.Error, UnicodeError):
            raise InvalidRecallHandle(f"not a recall handle: {text[:64]!r}") from None
        if handle.timer_offset < 0 or handle.commit_log_offset < 0:
            raise InvalidRecallHandle(f"not a recall handle: {text[:64]!r}")
        return handle


def handle_of(topic: str, queue_id: int, queue_offset: int, commit_log_offset: int, properties: dict[str, str]) -> str | None:
    """The recall handle of a message as written (a timer's record or put result), None for one not held as a timer."""
    if topic != TIMER_TOPIC or queue_id != TIMER_QUEUE:
        return None
    return RecallHandle(properties[REAL_TOPIC], queue_offset, commit_log_offset, properties.get("UNIQ_KEY", "")).encode()


class Verdict(enum.Enum):
    RECALL = "recall"  # pending and not due: write the marker
    ALREADY_RECALLED = "already_recalled"  # not due, but no longer pending: an earlier recall took it
    TOO_LATE = "too_late"  # due: released, or about to be


def verdict(due_ms: int, now_ms: int, pending: bool) -> Verdict:
    """What a recall of a timer due at ``due_ms`` does at ``now_ms``. Due (``due_ms <= now_ms``) is too late even while
    the release service has not written it yet: it is about to, and a recall must never race a consumer. A timer not
    due and not pending was taken by an earlier recall (the release service never releases early): answered again."""
    if due_ms <= now_ms:
        return Verdict.TOO_LATE
    return Verdict.RECALL if pending else Verdict.ALREADY_RECALLED


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    msg_id: str
    topic: str
    deliver_at_ms: int
    duplicate: bool
    end: int  # the commit log's end once the marker is written (durable when the caller has waited for it)


class Recalls:
    """Recall timers of ``index`` by their handles, writing their markers to ``store`` (the leader's)."""

    def __init__(self, store: MessageStore, index: TimerIndex, now_ms: Callable[[], int]) -> None:
        self._store = store
        self._index = index
        self._now_ms = now_ms

    def recall(self, topic: str, text: str) -> RecallOutcome:
        """Recall the timer ``text`` names on ``topic``: INVALID_RECALL_HANDLE when the log does not back it,
        RECALL_TOO_LATE when it is due; a second recall answers ``duplicate`` and writes nothing."""
        handle = RecallHandle.decode(text)
        if handle.topic != topic:
            raise InvalidRecallHandle(f"the recall handle is for topic {handle.topic!r}, not {topic!r}")
        low, high = self._store.reads.queue_range(TIMER_TOPIC, TIMER_QUEUE)
        if handle.timer_offset >= high:
            raise InvalidRecallHandle("the recall handle names no timed message")
        if handle.timer_offset < low:  # retention took it: only a timer released long ago ages out
            raise RecallTooLate(f"message {handle.msg_id} was delivered long ago")
        if self._store.reads.commit_log_offset_at(TIMER_TOPIC, TIMER_QUEUE, handle.timer_offset) != handle.commit_log_offset:
            raise InvalidRecallHandle("the recall handle names no timed message")
        timer = self._store.reads.get(TIMER_TOPIC, TIMER_QUEUE, handle.timer_offset)
        if timer is None or timer.properties.get(REAL_TOPIC) != topic or timer.properties.get("UNIQ_KEY", "") != handle.msg_id:
            raise InvalidRecallHandle("the recall handle names no timed message")
        due = int(timer.properties[TIMER_OUT_MS])
        decided = verdict(due, self._now_ms(), self._index.holds(due, handle.timer_offset))
        if decided is Verdict.TOO_LATE:
            raise RecallTooLate(f"message {handle.msg_id} was due at {due} (epoch ms): delivered, or about to be",
                                deliver_at_ms=due)
        if decided is Verdict.RECALL:
            marker = PutItem(TIMER_TOPIC, RELEASE_QUEUE, encode_marker([handle.timer_offset]), {RECALLED: handle.msg_id})
            _, end = self._store.put([marker])
        else:
            end = self._store.commit_log.end_offset
        return RecallOutcome(handle.msg_id, topic, due, decided is Verdict.ALREADY_RECALLED, end)

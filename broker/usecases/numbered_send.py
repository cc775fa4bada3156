"""One numbered send's place in its producer's window: the one path a plain send and a half send share.

An idempotent producer numbers each send (producer id, epoch, sequence). Either kind of send asks the window the same
three things in the same order, so they are asked here once: is this a repeat (``earlier``: the first attempt's answer,
or ``Verdict.OLD_REPEAT`` when the window forgot it), the record that stores the number with the send's messages in one
write group (``record``, the store's ``then``), and where the send went once written (``sent``), noted before the
fsync wait so a retry arriving meanwhile is a repeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from halfmq.broker.idempotence.producer_ids import SendKey, SentAnswer, SentRef
from halfmq.broker.idempotence.producer_records import SendKind
from halfmq.broker.idempotence.producer_state import ProducerState
from halfmq.broker.idempotence.send_window import Verdict
from halfmq.broker.store.store_types import PutItem
from halfmq.errors import InvalidRequest

from .ports import SendWindows


class Numbering(Protocol):
    """The three fields a numbered request carries (a plain send's or a half send's body)."""

    @property
    def producer_id(self) -> int | None: ...
    @property
    def epoch(self) -> int | None: ...
    @property
    def sequence(self) -> int | None: ...


@dataclass(frozen=True)
class NumberedSend:
    windows: SendWindows
    producer: ProducerState
    sequence: int
    key: SendKey
    earlier: SentAnswer | Verdict | None  # what a repeat inside the window answers; None: a new send

    @classmethod
    def of(cls, windows: SendWindows, body: Numbering, principal: str, kind: SendKind, group: str, topic: str) -> NumberedSend | None:
        """The send's place in its window, or None for a send that is not numbered (InvalidRequest if half numbered);
        ``kind``, ``group`` and ``topic`` are what the number is used for (a repeat must match them).

        The producer id must be the principal's (PRODUCER_ID_NOT_OWNED otherwise: ``ProducerIds.sender``)."""
        if body.producer_id is None and body.epoch is None and body.sequence is None:
            return None  # the unnumbered send's path: nothing built for it
        if body.producer_id is None or body.epoch is None or body.sequence is None:
            raise InvalidRequest("an idempotent send carries producer_id, epoch and sequence together")
        key = SendKey(kind, group, topic)
        producer = windows.sender(body.producer_id, body.epoch, principal)
        return cls(windows, producer, body.sequence, key, windows.sent_before(producer, body.sequence, key))

    def record(self, items: list[PutItem]) -> PutItem:
        """The record that stores this number beside the send's messages (one write group: both or neither)."""
        return self.windows.send_record(self.producer, self.sequence, items, self.key.kind)

    def sent(self, commit_log_offset: int, count: int) -> None:
        """Where the send went, kept in the window (the answer of a repeat is read back from there)."""
        self.windows.sent(self.producer, self.sequence, SentRef(self.key.kind, commit_log_offset, count))

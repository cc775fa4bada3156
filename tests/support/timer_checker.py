"""A timer checker: what was sent with a due time, what the log released and when, what consumers received.

Pure (no I/O: the test around it reads the log and records the consumers). ``check`` counts:

- *early*: released (its release's store time) or received before its due time;
- *lost*: an acknowledged timer that should be delivered (``expected``) and was never received;
- *released twice*: a timer whose release appears more than once in the log (two release markers name it,
  or two released copies carry its id);
- *unexpected*: received, and never expected (a rolled-back half's timer, a value nobody sent).

Times are epoch milliseconds, all from the broker's clock where they can be (store times), so a consumer's
clock skew does not count as early: a receive is compared with its due time only when ``received`` is given.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

EXAMPLES = 5  # examples kept per anomaly


@dataclass(frozen=True)
class TimerReport:
    expected: int
    early: int
    lost: int
    released_twice: int
    unexpected: int
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.early or self.lost or self.released_twice or self.unexpected)

    def __str__(self) -> str:
        return (f"{self.expected} timers: early {self.early}, lost {self.lost}, released twice {self.released_twice}, "
                f"unexpected {self.unexpected}; examples {self.examples}")


def check(due: Mapping[str, int], expected: Iterable[str], released: Iterable[tuple[str, int]],
          received: Iterable[tuple[str, int]], maybe: Iterable[str] = ()) -> TimerReport:
    """``due``: msg id → due ms (or a lower bound of it) of every timer sent, delivered or not (a rolled-back
    half's too); ``expected``: the ids that must be delivered; ``released``: (msg id, store ms) of each released
    copy in the log; ``received``: (msg id, receive ms) of each delivery (repeats allowed: at least once);
    ``maybe``: ids whose send had no answer (a kill -9 mid-request): neither lost nor unexpected, still never early."""
    examples: dict[str, list[str]] = collections.defaultdict(list)

    def note(kind: str, text: str) -> None:
        if len(examples[kind]) < EXAMPLES:
            examples[kind].append(text)

    early: set[str] = set()
    copies: collections.Counter[str] = collections.Counter()
    for msg_id, at in released:
        copies[msg_id] += 1
        if msg_id in due and at < due[msg_id]:
            early.add(msg_id)
            note("early", f"{msg_id} released at {at}, due {due[msg_id]}")
    seen: set[str] = set()
    for msg_id, at in received:
        seen.add(msg_id)
        if msg_id in due and at < due[msg_id]:
            early.add(msg_id)
            note("early", f"{msg_id} received at {at}, due {due[msg_id]}")
    wanted = set(expected)
    lost = wanted - seen
    for msg_id in sorted(lost):
        note("lost", f"{msg_id} due {due.get(msg_id)}")
    twice = {msg_id for msg_id, n in copies.items() if n > 1}
    for msg_id in sorted(twice):
        note("released_twice", f"{msg_id} released {copies[msg_id]} times")
    unexpected = seen - wanted - set(maybe)
    for msg_id in sorted(unexpected):
        note("unexpected", msg_id)
    return TimerReport(len(wanted), len(early), len(lost), len(twice), len(unexpected), dict(examples))

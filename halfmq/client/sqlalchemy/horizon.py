"""The barrier's answer to a check-back, as a pure function of the record and the half message's age.

The broker asks "did transaction T commit?" only when it never got T's end. The barrier's
record of T is written in the same database transaction as the business change, so:

- the record exists: the change committed, answer COMMIT (at any age);
- no record, and the half message is younger than the *horizon*: the local transaction may
  still be running, or its COMMIT may be in flight to the database, so its absence proves
  nothing yet: answer UNKNOWN and the broker asks again later;
- no record, and the half message is older than the horizon: no local transaction can still
  commit it, answer ROLLBACK.

The horizon is ``local_tx_timeout + commit_grace``. ``local_tx_timeout`` bounds how long a local
transaction may run: the barrier rolls back, instead of committing, one that is still uncommitted
``local_tx_timeout`` after its send began (before the half message was sent, so the half is never
older than the transaction's clock says); ``commit_grace`` covers what that check does not see: a
COMMIT already sent to the database and not yet durable, a thread that was descheduled between
the half send and its BEGIN, and the clock difference between the broker (which stamps the half
message's born time) and this service. Answering ROLLBACK at exactly ``local_tx_timeout`` (what
the order service once did) races a slow commit: the message would be rolled back while its
change lands a moment later, the one outcome transactional messages exist to prevent. An UNKNOWN
too many costs one more check; a ROLLBACK too early loses a message for good.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["CheckAnswer", "Horizon", "check_answer", "half_age_seconds"]

DEFAULT_LOCAL_TX_TIMEOUT = 30.0
DEFAULT_COMMIT_GRACE = 30.0


class CheckAnswer(str, Enum):
    """The broker's end states, as the check app's listener answers them."""

    COMMIT = "commit"
    ROLLBACK = "rollback"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Horizon:
    """How old a half message must be before a missing record means it never committed."""

    local_tx_timeout: float = DEFAULT_LOCAL_TX_TIMEOUT
    commit_grace: float = DEFAULT_COMMIT_GRACE

    def __post_init__(self) -> None:
        if self.local_tx_timeout <= 0:
            raise ValueError("local_tx_timeout must be positive")
        if self.commit_grace < 0:
            raise ValueError("commit_grace must be >= 0")

    @property
    def seconds(self) -> float:
        """The age past which a missing record means ROLLBACK."""
        return self.local_tx_timeout + self.commit_grace


def half_age_seconds(born_timestamp_ms: int, now: float) -> float:
    """The half message's age at ``now`` (epoch seconds), from its born timestamp (epoch milliseconds)."""
    return now - born_timestamp_ms / 1000


def check_answer(record_found: bool, age_seconds: float, horizon: Horizon) -> CheckAnswer:
    """COMMIT if the record exists; ROLLBACK if not and the half is older than the horizon; else UNKNOWN."""
    if record_found:
        return CheckAnswer.COMMIT
    if age_seconds > horizon.seconds:
        return CheckAnswer.ROLLBACK
    return CheckAnswer.UNKNOWN

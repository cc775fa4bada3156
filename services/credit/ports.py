"""What the credit service needs from its database, as a small Protocol.

``CreditRepository`` satisfies it structurally (``tests/unit/services/test_ports.py``
checks) and the unit tests pass a fake. The consumer side needs no Protocol: the SDK calls
``CreditService.handle`` with each message, and a later inbox would call it the same way.
"""

from __future__ import annotations

from typing import Protocol

from .models import CreditAccount, CreditRecord, SummaryDay, SummaryRun, SummaryUser
from .rules import CreditCommand


class CreditLedger(Protocol):
    def apply_many(self, batch: list[tuple[CreditCommand, int, str]]) -> list[bool | Exception]: ...

    def account(self, user_id: str, recent: int = 20) -> tuple[CreditAccount | None, list[CreditRecord], int]: ...

    def ledger(self, user_id: str, after_seq: int = 0, limit: int = 500) -> list[CreditRecord]: ...

    def current_summary(self) -> tuple[SummaryRun, list[SummaryUser], list[SummaryDay]] | None: ...

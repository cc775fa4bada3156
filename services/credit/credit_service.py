"""Consuming ORDER_TOPIC: each message credits its order (or takes back a refunded order's points) once, then is acked.

An order and its refund are in their user's message group, so the broker hands out a user's messages one at a
time in the order sent, and this service applies them in the order they come, numbering each in its user's
sequence (``seq``): nothing here reorders a user's messages.

The messages handled at the same time share database transactions (a group commit, see
``halfmq.client.database_writes``); a handler returns, and its message is acked, only after the
transaction holding its credit and its inbox row (``halfmq.client.sqlalchemy.inbox``) has
committed. Which delivery credits an order is the inbox's decision, not this module's.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field

from halfmq.client import Message, message_body_bytes
from halfmq.client.database_writes import DatabaseWriteBatcher

from ..tracing import crediting
from .models import CreditAccount, CreditRecord, SummaryDay, SummaryRun, SummaryUser
from .ports import CreditLedger
from .rules import CreditCommand, PoisonMessage, credit_points, parse_order_message

log = logging.getLogger(__name__)


@dataclass
class CreditStats:
    credited: int = 0
    duplicates: int = 0
    poison: int = 0
    errors: int = 0
    last_error: str | None = field(default=None)


CRASH_EXIT_CODE = 87


class CreditService:
    def __init__(self, repo: CreditLedger, points_per_unit: int, crash_after_commit_order: str | None = None,
                 write_batch_max: int = 64) -> None:
        self.repo = repo
        self.points_per_unit = points_per_unit
        self.crash_after_commit_order = crash_after_commit_order
        self.stats = CreditStats()
        self._writes: DatabaseWriteBatcher[tuple[CreditCommand, int, str], bool] = DatabaseWriteBatcher(repo.apply_many, write_batch_max)

    async def handle(self, message: Message) -> bool:
        """Credit one order message; True if it credited, False if the inbox had the order already. Raising means nack."""
        try:
            cmd = parse_order_message(message_body_bytes(message))
        except PoisonMessage as exc:
            self.stats.poison += 1
            log.warning("poison message %s (attempt %s): %s", message.msg_id, message.delivery_attempt, exc)
            raise
        try:
            with crediting(cmd.order_id, cmd.user_id):
                created = await self._writes.submit((cmd, credit_points(cmd, self.points_per_unit), message.msg_id))
        except Exception as exc:
            self.stats.errors += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            raise
        if cmd.order_id == self.crash_after_commit_order:
            log.warning("injected fault: exiting after crediting %s, before its ack", cmd.order_id)
            logging.shutdown()
            os._exit(CRASH_EXIT_CODE)
        if created:
            self.stats.credited += 1
        else:
            self.stats.duplicates += 1
            log.info("order %s: the inbox absorbed a repeated delivery", cmd.order_id)
        return created

    async def account(self, user_id: str) -> tuple[CreditAccount | None, list[CreditRecord], int]:
        """Balance (None before the first credit), the most recent records, and how many credits in all."""
        return await asyncio.to_thread(self.repo.account, user_id)

    async def ledger(self, user_id: str, after_seq: int, limit: int) -> list[CreditRecord]:
        """The user's credits and refunds in the order they were applied (by ``seq``), after ``after_seq``."""
        return await asyncio.to_thread(self.repo.ledger, user_id, after_seq, limit)

    async def summary(self) -> tuple[SummaryRun, list[SummaryUser], list[SummaryDay]] | None:
        """The Spark job's last published summary, or None before its first run."""
        return await asyncio.to_thread(self.repo.current_summary)

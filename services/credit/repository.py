"""The ledger: credits recorded in group-committed database transactions, each order once by the SDK's inbox."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from halfmq.client.sqlalchemy.inbox import DEFAULT_RETENTION, Inbox

from ..database import WriteSessions, together_or_each_alone, writer
from .models import INBOX, CreditAccount, CreditRecord, SummaryCurrent, SummaryDay, SummaryRun, SummaryUser
from .rules import CreditCommand, apply_sequence


class CreditRepository:
    def __init__(self, engine: Engine, consumer_group: str = "credit_group", inbox_retention: timedelta = DEFAULT_RETENTION) -> None:
        self._engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._writes = WriteSessions(engine)
        accounts = CreditAccount.__table__
        upsert = (postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert)(accounts)
        # One statement, executed for many rows: compiled once and cached, where a multi-row VALUES
        # of as many rows as the batch has users was compiled again for every batch (about a tenth
        # of the credit service's CPU under load went to compiling it, py-spy).
        self._add_to_balance = upsert.on_conflict_do_update(
            index_elements=[accounts.c.user_id],
            set_={"balance": accounts.c.balance + upsert.excluded.balance, "applied": accounts.c.applied + upsert.excluded.applied,
                  "updated_at": upsert.excluded.updated_at},
        )
        # Keyed by order id (a refund by refund:{order id}), not message: a second message about an order (a resend)
        # credits nothing either.
        self.inbox = Inbox(writer(engine), consumer_group, key="order_id", table=INBOX,
                           retention=inbox_retention)

    def apply(self, cmd: CreditCommand, points: int, message_id: str) -> bool:
        """Insert the credit and add to the balance together; False when the order was already credited."""
        [outcome] = self.apply_many([(cmd, points, message_id)])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def apply_many(self, batch: list[tuple[CreditCommand, int, str]]) -> list[bool | Exception]:
        """Credit several orders in ONE database transaction; per item True (new), False (already credited) or its error.

        The group commit's batch function (``halfmq.client.database_writes``). Each credit record, its
        balance change and its inbox row commit together; an order whose inbox row exists
        already, or that comes twice in the batch, is claimed once and credited once (the
        inbox's ``claim_keys``; a refund is keyed apart, ``refund:{order id}``). Each record is
        numbered in its user's sequence (``seq``) in the order the batch applies it. Balances go in
        user-id order so that two consumers' batches lock PostgreSQL rows in the same order and cannot deadlock. If the batch cannot commit
        as a whole because of a statement's data (a constraint, a value out of range), each
        item is redone alone so that one bad item fails only itself; any other error (the
        database is down or locked) fails the whole batch at once, and nothing of it was committed.
        """
        return together_or_each_alone(batch, self._apply, lambda item: self._apply([item])[0])

    def _apply(self, batch: list[tuple[CreditCommand, int, str]]) -> list[bool]:
        now = datetime.now(UTC)
        with self._writes.begin() as session:
            claimed = self.inbox.claim_keys(session, [(cmd.inbox_key, message_id) for cmd, _, message_id in batch])
            new = [item for item, fresh in zip(batch, claimed, strict=True) if fresh]
            if not new:
                return claimed
            gained: dict[str, tuple[int, int]] = {}  # user -> (points, messages applied)
            for cmd, points, _ in new:
                before = gained.get(cmd.user_id, (0, 0))
                gained[cmd.user_id] = (before[0] + points, before[1] + 1)
            session.execute(self._add_to_balance, [
                {"user_id": user_id, "balance": points, "applied": count, "updated_at": now}
                for user_id, (points, count) in sorted(gained.items())
            ])
            seqs = apply_sequence([cmd.user_id for cmd, _, _ in new], self._applied(session, list(gained)))
            # In the order applied (the batch's), each numbered in its user's sequence.
            session.execute(CreditRecord.__table__.insert(), [
                {"order_id": cmd.order_id, "user_id": cmd.user_id, "amount": cmd.amount, "points": points,
                 "message_id": message_id, "created_at": now, "kind": cmd.event.value, "seq": seq}
                for (cmd, points, message_id), seq in zip(new, seqs, strict=True)
            ])
        return claimed

    @staticmethod
    def _applied(session: Session, users: list[str]) -> dict[str, int]:
        """Each user's applied count, this batch included (its balance rows are locked by this transaction)."""
        accounts = CreditAccount.__table__
        rows = session.execute(select(accounts.c.user_id, accounts.c.applied).where(accounts.c.user_id.in_(users)))
        return {user: int(applied) for user, applied in rows}

    def ledger(self, user_id: str, after_seq: int = 0, limit: int = 500) -> list[CreditRecord]:
        """The user's credits and refunds in the order they were applied, from after ``after_seq``."""
        with self._sessions() as session:
            query = (select(CreditRecord).where(CreditRecord.user_id == user_id, CreditRecord.seq > after_seq)
                     .order_by(CreditRecord.seq).limit(limit))
            return list(session.scalars(query))

    def account(self, user_id: str, recent: int = 20) -> tuple[CreditAccount | None, list[CreditRecord], int]:
        """Balance, the most recent records, and how many credits the user has in all."""
        with self._sessions() as session:
            account = session.get(CreditAccount, user_id)
            records = session.scalars(
                select(CreditRecord).where(CreditRecord.user_id == user_id).order_by(CreditRecord.id.desc()).limit(recent)
            ).all()
            total = session.scalar(select(func.count()).select_from(CreditRecord).where(CreditRecord.user_id == user_id)) or 0
            return account, list(records), int(total)

    def counts(self) -> tuple[int, int]:
        with self._sessions() as session:
            credits = session.scalar(select(func.count()).select_from(CreditRecord)) or 0
            points = session.scalar(select(func.coalesce(func.sum(CreditRecord.points), 0))) or 0
            return int(credits), int(points)

    def current_summary(self) -> tuple[SummaryRun, list[SummaryUser], list[SummaryDay]] | None:
        """The summary the Spark job last published (one consistent run, never a half-written one)."""
        with self._sessions() as session:
            current = session.get(SummaryCurrent, 1)
            if current is None:
                return None
            run = session.get(SummaryRun, current.run_id)
            users = session.scalars(select(SummaryUser).where(SummaryUser.run_id == current.run_id).order_by(SummaryUser.user_id)).all()
            days = session.scalars(select(SummaryDay).where(SummaryDay.run_id == current.run_id).order_by(SummaryDay.day)).all()
            return run, list(users), list(days)

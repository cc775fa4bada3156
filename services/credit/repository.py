"""The ledger: one database transaction per credit, duplicates absorbed by the unique order id."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import Engine, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from .models import CreditAccount, CreditRecord, SummaryCurrent, SummaryDay, SummaryRun, SummaryUser
from .rules import CreditCommand


class CreditRepository:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert

    def apply(self, cmd: CreditCommand, points: int, message_id: str) -> bool:
        """Insert the credit and add to the balance together; False when the order was already credited."""
        now = datetime.now(timezone.utc)
        upsert = self._insert(CreditAccount).values(user_id=cmd.user_id, balance=points, updated_at=now)
        upsert = upsert.on_conflict_do_update(
            index_elements=[CreditAccount.user_id],
            set_={"balance": CreditAccount.balance + upsert.excluded.balance, "updated_at": upsert.excluded.updated_at},
        )
        try:
            with self._sessions.begin() as session:
                session.add(CreditRecord(order_id=cmd.order_id, user_id=cmd.user_id, amount=cmd.amount, points=points,
                                         message_id=message_id, created_at=now))
                session.flush()
                session.execute(upsert)
        except IntegrityError:
            if self.is_credited(cmd.order_id):
                return False
            raise
        return True

    def is_credited(self, order_id: str) -> bool:
        with self._sessions() as session:
            return session.scalar(select(CreditRecord.id).where(CreditRecord.order_id == order_id)) is not None

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

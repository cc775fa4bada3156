"""Alembic environment of the credit database."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from services.credit.config import CreditSettings
from services.credit.models import Base

config = context.config
url = config.attributes.get("url") or context.get_x_argument(as_dictionary=True).get("url") or CreditSettings().database_url


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(url)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=Base.metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run()

"""Alembic environment of the credit database (`alembic -c migrations/alembic.ini --name credit upgrade head`)."""

from alembic import context

from halfmq.services.credit.config import CreditSettings
from halfmq.services.credit.models import Base
from halfmq.services.database import run_alembic_env

run_alembic_env(context, Base.metadata, CreditSettings().database_url)

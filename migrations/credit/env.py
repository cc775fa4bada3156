"""Alembic environment of the credit database (`alembic --name credit upgrade head`)."""

from alembic import context

from services.credit.config import CreditSettings
from services.credit.models import Base
from services.database import run_alembic_env

run_alembic_env(context, Base.metadata, CreditSettings().database_url)

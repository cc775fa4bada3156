"""Alembic environment of the order database (`alembic --name order upgrade head`)."""

from alembic import context

from services.order.config import OrderSettings
from services.order.models import Base
from services.database import run_alembic_env

run_alembic_env(context, Base.metadata, OrderSettings().database_url)

"""Alembic environment of the order database (`alembic -c migrations/alembic.ini --name order upgrade head`)."""

from alembic import context

from halfmq.services.database import run_alembic_env
from halfmq.services.order.config import OrderSettings
from halfmq.services.order.models import Base

run_alembic_env(context, Base.metadata, OrderSettings().database_url)

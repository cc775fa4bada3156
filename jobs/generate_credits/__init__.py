"""Synthetic orders and their credits, written in bulk, for the Spark job's tests and benchmarks.

``dataset`` decides the rows (deterministic for a seed, with problems injected on purpose), ``writers``
puts them into SQLite or PostgreSQL, ``schema`` creates the tables first, ``cli`` is
``python -m halfmq.jobs.generate_credits``.
"""

from .cli import main
from .dataset import DEFAULT_START, Generated, generate
from .schema import ALEMBIC_INI, migrate

__all__ = ["ALEMBIC_INI", "DEFAULT_START", "Generated", "generate", "main", "migrate"]

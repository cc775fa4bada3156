"""Exactly-once helpers for SQLAlchemy 2 services: the barrier (producer side) and the inbox (consumer side).

They need SQLAlchemy, which ``pip install halfmq`` leaves out: ``pip install 'halfmq[sqlalchemy]'``.
"""

from __future__ import annotations

try:
    import sqlalchemy  # noqa: F401
except ImportError as missing:  # pragma: no cover - exercised by the packaging tests
    raise ImportError("halfmq.client.sqlalchemy needs SQLAlchemy 2: pip install 'halfmq[sqlalchemy]'") from missing

"""The services' one health probe: the database answers and is migrated, plus what the service adds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse
from sqlalchemy import Engine, text

from .database import is_migrated


@dataclass(frozen=True)
class DatabaseProbe:
    """True when the database is at its migrations' head; raises when it cannot be reached."""

    engine: Engine
    migrations: str  # "order" or "credit": the tree under halfmq.migrations

    def __call__(self) -> bool:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return is_migrated(self.migrations, self.engine)


# What a service adds to its health: (is that part healthy, the fields to show).
Extra = Callable[[], tuple[bool, Mapping[str, Any]]]


async def health(probe: Callable[[], bool], extra: Extra | None = None) -> JSONResponse:
    """200 when the database is migrated and ``extra`` is healthy, else 503; a down database is a 503, never a 500 page."""
    try:
        migrated = await asyncio.to_thread(probe)
    except Exception as exc:  # noqa: BLE001 - any database failure is a 503
        return JSONResponse({"status": "unhealthy", "database": f"unreachable: {type(exc).__name__}"}, status_code=503)
    extra_ok, fields = extra() if extra is not None else (True, {})
    ok = migrated and extra_ok
    body = {"status": "ok" if ok else "unhealthy", "database": "ok", "migrated": migrated, **fields}
    return JSONResponse(body, status_code=200 if ok else 503)

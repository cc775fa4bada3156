"""Publishing a run: the summary into the credit database in one transaction, and the run's files.

Run ids sort by time, so the newest ``keep_runs`` are kept in the database and on disk alike.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .databases import tables

if TYPE_CHECKING:
    from sqlalchemy import Engine


def publish_summary(engine: Engine, run_id: str, computed_at: datetime, users: Sequence[dict[str, Any]],
                    days: Sequence[dict[str, Any]], keep_runs: int = 2) -> list[str]:
    """Publish one run in ONE transaction: its rows, then ``summary_current`` → it, then prune old runs.

    A reader that follows ``summary_current`` sees the previous run or this one, never a mix; if anything
    fails nothing changes. Returns the run ids removed.
    """
    from sqlalchemy import delete, insert, select

    t = tables()
    runs, cur = t["summary_runs"], t["summary_current"]
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        from sqlalchemy.dialects.sqlite import insert as upsert
    with engine.begin() as conn:
        conn.execute(insert(runs).values(run_id=run_id, computed_at=computed_at))
        if users:
            conn.execute(insert(t["summary_users"]), [{**u, "run_id": run_id} for u in users])
        if days:
            conn.execute(insert(t["summary_days"]), [{**d, "run_id": run_id} for d in days])
        stmt = upsert(cur).values(id=1, run_id=run_id)
        conn.execute(stmt.on_conflict_do_update(index_elements=[cur.c.id], set_={"run_id": stmt.excluded.run_id}))
        older = [r for r in conn.scalars(select(runs.c.run_id).order_by(runs.c.computed_at.desc(), runs.c.run_id.desc()))
                 if r != run_id]
        stale = older[max(keep_runs - 1, 0):]
        if stale:
            for name in ("summary_users", "summary_days", "summary_runs"):
                conn.execute(delete(t[name]).where(t[name].c.run_id.in_(stale)))
    return stale


def write_atomically(path: Path, data: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(data)
    os.replace(tmp, path)


_RUN_DIR = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{8}$")


def new_run_id(now: datetime) -> str:
    """Sortable by time: ``20261122T065200123456Z-1a2b3c4d``."""
    return f"{now.astimezone(UTC):%Y%m%dT%H%M%S%f}Z-{uuid.uuid4().hex[:8]}"


def prune_run_dirs(output_dir: Path, keep: int) -> list[str]:
    runs = sorted((p for p in output_dir.iterdir() if p.is_dir() and _RUN_DIR.match(p.name)), key=lambda p: p.name)
    removed = runs[:-keep] if keep > 0 else runs
    for p in removed:
        shutil.rmtree(p, ignore_errors=True)
    return [p.name for p in removed]

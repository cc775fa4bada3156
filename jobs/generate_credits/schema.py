"""The schemas the generator writes into, created with the project's own Alembic migrations."""

from __future__ import annotations

import subprocess
import sys
from importlib.resources import files
from pathlib import Path

ALEMBIC_INI = Path(str(files("halfmq.migrations") / "alembic.ini"))  # package data, also from a wheel


def migrate(name: str, url: str) -> None:
    """Create the schema with the project's Alembic migrations (a subprocess: jobs import nothing from services)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "alembic", "-c", str(ALEMBIC_INI), "--name", name, "-x", f"url={url}",
                    "upgrade", "head"], check=True, stdout=subprocess.DEVNULL)

"""Secrets a service reads from the environment: the value itself, or a file holding it (Docker secrets)."""

from __future__ import annotations

from pathlib import Path


def secret_value(value: str | None, path: Path | None) -> str | None:
    """``value`` if set, else the stripped content of ``path`` (e.g. /run/secrets/order_token), else None."""
    if value:
        return value
    if path is not None:
        return path.read_text().strip() or None
    return None

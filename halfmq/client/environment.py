"""Where a client finds the broker, from the environment: one set of names for the SDK, the CLI and the services.

``$HALFMQ_URL`` (one URL, or a broker set's comma-separated list) and ``$HALFMQ_TOKEN`` (the bearer
token). The broker's own server settings (``HALFMQ_BROKER_HOST``, ``…_PORT``,
…) are a different thing: where the broker listens, not where clients find it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["CA_FILE_ENV", "DEFAULT_URL", "TOKEN_ENV", "URL_ENV", "env_token", "env_url", "resolve_url"]

URL_ENV = "HALFMQ_URL"
TOKEN_ENV = "HALFMQ_TOKEN"
CA_FILE_ENV = "HALFMQ_CA_FILE"
DEFAULT_URL = "http://127.0.0.1:10911"


def _named(name: str, environ: Mapping[str, str] | None) -> str | None:
    return (os.environ if environ is None else environ).get(name) or None


def env_url(environ: Mapping[str, str] | None = None) -> str | None:
    """$HALFMQ_URL, else None."""
    return _named(URL_ENV, environ)


def env_token(environ: Mapping[str, str] | None = None) -> str | None:
    """$HALFMQ_TOKEN, else None."""
    return _named(TOKEN_ENV, environ)


def resolve_url(url: str | None, environ: Mapping[str, str] | None = None) -> str:
    """``url`` when given, else the environment's (``env_url``), else ``DEFAULT_URL``."""
    return url or env_url(environ) or DEFAULT_URL

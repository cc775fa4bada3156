"""Where a client finds the broker, from the environment: one set of names for the SDK, the CLI and the services.

``$HALFMQ_URL`` (one URL, or a broker set's comma-separated list) and ``$HALFMQ_TOKEN`` (the bearer
token). Older names stay as aliases, read only when the new name is unset: ``$HALFMQ_BROKER_URL``
(the CLI's name until 0.2). The broker's own server settings (``HALFMQ_BROKER_HOST``, ``…_PORT``,
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
# Each name, then its older aliases: the first one set wins.
URL_NAMES = (URL_ENV, "HALFMQ_BROKER_URL")
TOKEN_NAMES = (TOKEN_ENV,)


def _first(names: tuple[str, ...], environ: Mapping[str, str] | None) -> str | None:
    environ = os.environ if environ is None else environ
    return next((environ[name] for name in names if environ.get(name)), None)


def env_url(environ: Mapping[str, str] | None = None) -> str | None:
    """$HALFMQ_URL, else an older alias ($HALFMQ_BROKER_URL), else None."""
    return _first(URL_NAMES, environ)


def env_token(environ: Mapping[str, str] | None = None) -> str | None:
    """$HALFMQ_TOKEN, else None."""
    return _first(TOKEN_NAMES, environ)


def resolve_url(url: str | None, environ: Mapping[str, str] | None = None) -> str:
    """``url`` when given, else the environment's (``env_url``), else ``DEFAULT_URL``."""
    return url or env_url(environ) or DEFAULT_URL

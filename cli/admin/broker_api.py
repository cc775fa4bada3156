"""The operator's HTTP calls to one broker: bearer token, problem+json turned into a one-line exit."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

DEFAULT_BROKER_URL = "http://127.0.0.1:10911"
BROKER_URL_ENV = "HALFMQ_BROKER_URL"
TOKEN_ENV = "HALFMQ_TOKEN"


class BrokerApi:
    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 10.0) -> None:
        import httpx  # here, not at import: `halfmq --help` stays quick

        self.url = (url or os.environ.get(BROKER_URL_ENV) or DEFAULT_BROKER_URL).rstrip("/")
        token = token or os.environ.get(TOKEN_ENV)
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def get(self, path: str, **params: Any) -> Any:
        return self._answer(self._http.get(path, params={k: v for k, v in params.items() if v is not None}))

    def post(self, path: str, body: Any = None) -> Any:
        return self._answer(self._http.post(path, json=body) if body is not None else self._http.post(path))

    def get_or_none(self, path: str) -> Any:
        """The answer, or None when the broker has no such route (404): e.g. GET /v1/cluster on a single node."""
        response = self._http.get(path)
        return None if response.status_code == 404 else self._answer(response)

    @staticmethod
    def _answer(response: Any) -> Any:
        if response.status_code >= 400:
            try:
                problem = response.json()
                text = f"{problem.get('code', response.status_code)}: {problem.get('detail') or problem.get('title')}"
            except ValueError:
                text = f"HTTP {response.status_code}: {response.text[:200]}"
            raise SystemExit(f"broker refused: {text}")
        return response.json() if response.content else None


def seg(value: str | int) -> str:
    """A path segment, escaped (a transaction id or group name is never a path)."""
    return quote(str(value), safe="")

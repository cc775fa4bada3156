"""The operator's HTTP calls to one broker: bearer token, problem+json turned into a one-line exit."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from halfmq.client.environment import DEFAULT_URL as DEFAULT_BROKER_URL
from halfmq.client.environment import TOKEN_ENV, env_token, resolve_url
from halfmq.client.environment import URL_ENV as BROKER_URL_ENV

__all__ = ["BROKER_URL_ENV", "DEFAULT_BROKER_URL", "TOKEN_ENV", "BrokerApi", "seg"]


class BrokerApi:
    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 10.0) -> None:
        import httpx  # here, not at import: `halfmq --help` stays quick

        # $HALFMQ_URL (or its old name $HALFMQ_BROKER_URL) may list a broker set: ask the first node.
        self.url = resolve_url(url).split(",")[0].strip().rstrip("/")
        token = token or env_token()
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
